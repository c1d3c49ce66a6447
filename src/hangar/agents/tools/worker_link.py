"""An agent run a ``hangar worker`` drives reaches the product through a server, with a credential that server
minted for the step's try (``hangar.agents.worker_grants``).

A worker serves no RPC socket or MCP endpoint and holds no authority over the product: it runs no op itself. Given
a server (``hangar worker --server URL``), each agent run it drives asks that server for a credential bound to the
try it claimed, then:

- an ``openai`` agent's product tools are declared from the ops a server serves (the registry of the server's
  parts, so the model sees the same declarations as in a server) and each call goes over the server's RPC socket
  with that credential (``RemoteOpCaller``): the server checks it as any caller's, and the ops run there;
- a command agent's program gets ``HANGAR_MCP_URL`` (the server's ``/mcp``, through the enclosure's server door
  as in a server) and ``HANGAR_MCP_TOKEN`` (that credential).

While the run lasts the worker asks the server to renew the credential every heartbeat, so its deadline follows
the claim's lease: a worker that dies stops renewing and the credential expires with the lease; a renewal the
server refuses (the claim fenced or taken over, the credential revoked, the agent deleted) revokes it there. The
run's end revokes it (``mcp_grant.revoke``). Without ``--server`` the agent gets no product tools, saying why.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

from hangar.agents.config import CommandAdapter
from hangar.agents.runs import Run
from hangar.agents.service import Agent
from hangar.agents.tools.mcp_grant import TOKEN_VAR, UNAVAILABLE_VAR, URL_VAR, McpGrant
from hangar.core.confine import CallBack
from hangar.core.principal import Principal
from hangar.errors import HangarError, Unavailable, error_from_wire
from hangar.httpkit.tls import client_tls
from hangar.rpc.op_caller import AGENT_DOOR, OpCaller
from hangar.rpc.registry import OpRegistry

log = logging.getLogger(__name__)

GRANTS_PATH = "/worker/agent-grants"  # hangar.agents.worker_grants.GRANTS_PATH (the server's side)
RENEW_S = 2.0  # how often a grant is renewed (the worker's heartbeat, ``hangar.pipelines.worker.HEARTBEAT_S``)
CALL_TIMEOUT_S = 120.0  # one op over the server's RPC socket
NO_SERVER = "this worker was started without --server, so its agents cannot reach the product"


@dataclass
class WorkerLink:
    """How a worker's agent runs reach a server: its origin, the worker credential, and the ops it serves."""

    server_url: str
    credential: str
    registry: OpRegistry
    _tokens: dict[str, str] = field(default_factory=dict, repr=False)  # run id -> its credential, while it lasts
    _refused: dict[str, str] = field(default_factory=dict, repr=False)  # run id -> why it has none

    async def grant(self, workspace_id: str, run: Run, agent: Agent, try_key: str) -> McpGrant:
        """Ask the server for the run's credential; the grant says why there is none when refused."""
        ask = {"workspaceId": workspace_id, "runId": run.id, "tryKey": try_key}
        try:
            answer = await self.post(GRANTS_PATH, ask)
        except HangarError as err:
            why = f"the server refused a credential for this run: {err.message}"
            log.warning("agent run %s: %s", run.id, why)
            self._refused[run.id] = why
            return McpGrant({UNAVAILABLE_VAR: why})
        device_id, token = str(answer["deviceId"]), str(answer["token"])
        self._tokens[run.id] = token
        renewing = asyncio.get_running_loop().create_task(self._renew({**ask, "deviceId": device_id}))

        async def stop() -> None:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
            self._tokens.pop(run.id, None)
            self._refused.pop(run.id, None)

        if not isinstance(agent.adapter, CommandAdapter):
            return McpGrant({}, device_id, stop=stop)
        return McpGrant({TOKEN_VAR: token}, device_id, CallBack(URL_VAR, f"{self.server_url}/mcp"), stop=stop)

    def token_of(self, run_id: str) -> str:
        token = self._tokens.get(run_id)
        if token is None:
            raise Unavailable(self._refused.get(run_id, "this run holds no credential for the product"))
        return token

    async def _renew(self, ask: dict[str, str]) -> None:
        while True:
            await asyncio.sleep(RENEW_S)
            try:
                await self.post(GRANTS_PATH, ask)
            except Unavailable as err:  # the server is out of reach: the credential lapses with the lease
                log.warning("agent run %s: could not renew its credential: %s", ask["runId"], err.message)
            except HangarError as err:
                log.warning("agent run %s: the server refused its credential: %s", ask["runId"], err.message)
                self._tokens.pop(ask["runId"], None)
                self._refused[ask["runId"]] = f"the server refused this run's credential: {err.message}"
                return

    async def post(self, path: str, ask: dict[str, str]) -> dict[str, Any]:
        """One request of a worker's route on the server (``path``), as this worker: its answer, or the
        ``HangarError`` the server answered (``Unavailable`` when it cannot be reached)."""
        headers = {"Authorization": f"Bearer {self.credential}"}
        try:
            async with httpx.AsyncClient(timeout=10.0, verify=client_tls()) as http:
                reply = await http.post(f"{self.server_url}{path}", json=ask, headers=headers)
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach the server {self.server_url} ({type(exc).__name__})") from None
        try:
            body = reply.json()
        except ValueError:
            raise Unavailable(f"the server {self.server_url} answered {reply.status_code}, not JSON") from None
        if reply.status_code != 200:
            error = body.get("error", body) if isinstance(body, dict) else {}
            raise error_from_wire(str(error.get("code", "internal")), str(error.get("message", reply.status_code)))
        return dict(body)


class RemoteOpCaller(OpCaller):
    """An ``openai`` agent's product tools on a worker: declared from ``link.registry``, called on the server's
    RPC socket with the run's credential (the principal built here is not used: the credential speaks)."""

    def __init__(self, link: WorkerLink, run_id: str) -> None:
        super().__init__(link.registry, no_mcp_reason="this process serves no MCP endpoint (a worker)")
        self._link = link
        self._run_id = run_id

    async def call(
        self,
        principal: Principal,
        op_name: str,
        args: dict[str, Any],
        *,
        request_id: str | int | None = None,
        door: str = AGENT_DOOR,
    ) -> Any:
        self._tool(op_name)
        return await rpc_call(self._link.server_url, self._link.token_of(self._run_id), op_name, args)


async def rpc_call(server_url: str, token: str, op_name: str, args: dict[str, Any]) -> Any:
    """One op on the server's RPC socket as ``token``: its result, or the ``HangarError`` the server answered."""
    url = "ws" + server_url.removeprefix("http") + "/rpc"
    try:
        async with (
            asyncio.timeout(CALL_TIMEOUT_S),
            websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as conn,
        ):
            await conn.send(json.dumps({"id": 1, "op": op_name, "args": args}))
            async for raw in conn:
                frame = json.loads(raw)
                if frame.get("id") not in (1, None) or ("ok" not in frame and "error" not in frame):
                    continue
                if frame.get("ok"):
                    return frame.get("result")
                error = frame.get("error") or {}
                raise error_from_wire(str(error.get("code", "internal")), str(error.get("message", "")))
    except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
        raise Unavailable(f"cannot reach the server {server_url} ({type(exc).__name__})") from None
    except websockets.ConnectionClosed:
        pass
    raise Unavailable(f"the server {server_url} closed the socket before answering {op_name}")
