"""An agent's credential is authority like any other: taking a tool from the agent (``agents.update``) takes it
from the credentials of its runs still going, and a credential's deadline moved in the database is the one the
server checks, at the next call of a socket already open (the scope and ``expires_at`` bump the authority counter:
identity migration i0005). Runs on SQLite, and on PostgreSQL with ``HANGAR_TEST_DATABASE=postgresql``.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hangar.agents.tools.mcp_grant import mint_agent_credential
from hangar.identity import IdentityService
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

TOOLS = ("tickets.create", "tickets.list")
BOUND = "worker-credential agent-run try-key"  # what a worker's agent credential was minted for


async def test_a_tool_taken_from_an_agent_and_a_deadline_moved_bind_its_open_socket(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as s, RpcClient(s.ws_url, s.owner_token) as owner:
        ws = (await owner.call("workspaces.create", name="narrow"))["id"]
        space = (await owner.call("spaces.create", workspace_id=ws, title="work"))["id"]
        adapter = {"type": "command", "argv": ["true"], "productTools": list(TOOLS)}
        agent = (await owner.call("agents.create", workspace_id=ws, name="Cli", adapter=adapter))["id"]
        identity = s.ctx.service(IdentityService)
        minted = await mint_agent_credential(
            s.ctx,
            workspace_id=ws,
            space_id=space,
            agent_id=agent,
            agent_name="Cli",
            tools=TOOLS,
            dispatched_by="user:" + s.owner_id,
            expires_at=s.ctx.clock.now() + timedelta(minutes=5),
            minted_for=BOUND,
        )
        assert not isinstance(minted, str)
        device_id, token = minted
        async with RpcClient(s.ws_url, token) as as_agent:
            await as_agent.call("tickets.create", workspace_id=ws, title="before")
            await owner.call(
                "agents.update", workspace_id=ws, agent_id=agent, adapter={**adapter, "productTools": ["tickets.list"]}
            )
            with pytest.raises(RpcError) as taken:
                await as_agent.call("tickets.create", workspace_id=ws, title="after")
            assert taken.value.code == "forbidden"
            assert [t["title"] for t in (await as_agent.call("tickets.list", workspace_id=ws))["tickets"]] == ["before"]
            # A deadline moved a minute on is honoured (the tools never widened by it); one moved to a second ago
            # ends the credential at once. Only for what it was minted for.
            later = s.ctx.clock.now() + timedelta(minutes=1)
            assert not await identity.extend_device(device_id, "another run", later, frozenset(TOOLS))
            assert await identity.extend_device(device_id, BOUND, later, frozenset(TOOLS))
            await as_agent.call("tickets.list", workspace_id=ws)
            with pytest.raises(RpcError) as still_taken:
                await as_agent.call("tickets.create", workspace_id=ws, title="after")
            assert still_taken.value.code == "forbidden"
            gone = s.ctx.clock.now() - timedelta(seconds=1)
            assert await identity.extend_device(device_id, BOUND, gone, frozenset(TOOLS))
            with pytest.raises((RpcError, ConnectionError)):
                await as_agent.call("tickets.list", workspace_id=ws)
        # A credential past its deadline, or revoked, is not renewed.
        assert not await identity.extend_device(device_id, BOUND, later, frozenset(TOOLS))
        await identity.revoke_device_id(device_id)
        assert not await identity.extend_device(device_id, BOUND, later, frozenset(TOOLS))
