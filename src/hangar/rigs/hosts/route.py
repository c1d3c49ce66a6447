"""The rig hosts' socket (``wire.PATH``): a ``hangar rig-host`` dials it with its credential, says hello, and
serves this server's requests until the link ends (``registry.RigHosts`` keeps it meanwhile).

The credential is checked when the host connects and again every ``RECHECK_S`` while it stays: a refused one gets
a text frame ``{"event": "refused", "message": ...}`` saying why, then the socket closes with
``wire.CLOSE_REFUSED``; a revoked one's rigs fail at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core import hostcreds
from hangar.core.hostcreds import HostCredential
from hangar.errors import HangarError, InvalidArgs, Unauthenticated
from hangar.rigs.hosts import wire
from hangar.rigs.hosts.creds import KIND, max_budget_mb
from hangar.rigs.hosts.link import HostLink
from hangar.rigs.hosts.registry import RigHosts

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0
RECHECK_S = 2.0  # how soon a revoked credential's host is refused on its open socket
MAX_BUDGET_MB = 1024 * 1024


async def _refuse(ws: WebSocket, err: HangarError) -> None:
    with contextlib.suppress(Exception):
        await ws.send_text(wire.dumps({"event": "refused", "code": err.code, "message": err.message}))
        await ws.close(wire.CLOSE_REFUSED, err.code)


async def _hello(ws: WebSocket) -> tuple[int, frozenset[str]]:
    try:
        body = json.loads(await asyncio.wait_for(ws.receive_text(), HELLO_TIMEOUT_S))
    except (TimeoutError, ValueError) as exc:
        raise InvalidArgs("a rig host's first frame must be its hello") from exc
    if not isinstance(body, dict) or body.get("event") != "hello":
        raise InvalidArgs("a rig host's first frame must be its hello")
    budget, rigs = body.get("memoryBudgetMb"), body.get("rigs", [])
    if not isinstance(budget, int) or not 1 <= budget <= MAX_BUDGET_MB:
        raise InvalidArgs(f"a rig host's hello names its memoryBudgetMb, 1 to {MAX_BUDGET_MB}")
    if not isinstance(rigs, list) or not all(isinstance(r, str) for r in rigs):
        raise InvalidArgs("a rig host's hello lists the ids of the rigs it runs")
    return budget, frozenset(rigs)


async def rig_host_socket(ws: WebSocket) -> None:
    app = ws.app.state.ctx
    await ws.accept()
    scheme, _, text = ws.headers.get("authorization", "").partition(" ")
    try:
        if scheme.lower() != "bearer" or not text.strip():
            raise Unauthenticated(f"a rig host connects with Authorization: Bearer <{KIND.label}>")
        credential = await hostcreds.verify(KIND, app.dbs.server, text)
        budget, rigs = await _hello(ws)
    except HangarError as err:
        log.warning("rig hosts: a connection was refused: %s", err.message)
        await _refuse(ws, err)
        return
    except WebSocketDisconnect:
        return
    hosts = app.service(RigHosts)
    held = hosts.link(credential.id)
    if held is not None and not held.closed.is_set():
        # One rig host per credential: a second one waits (it dials again) until the first's link is gone.
        said = f"another rig host is connected with the credential {credential.name!r}; one credential per machine"
        log.warning("rig hosts: refused a second connection: %s", said)
        with contextlib.suppress(Exception):
            await ws.send_text(wire.dumps({"event": "busy", "message": said}))
            await ws.close(wire.CLOSE_BUSY, "busy")
        return
    # The host's word on its budget is taken up to its credential's maximum, set by the admin who minted it: past
    # it, the maximum (a host left at the default --memory-budget still serves, counted as the admin allowed).
    allowed = max_budget_mb(credential)
    link = HostLink(ws, credential, min(budget, allowed), rigs)
    if budget > allowed:
        log.warning(
            "rig hosts: %r asked for a budget of %d MB; its credential allows at most %d MB",
            credential.name,
            budget,
            allowed,
        )
    await hosts.attach(link)
    welcome = {"event": "welcome", "hostId": credential.id, "name": credential.name, "memoryBudgetMb": link.budget_mb}
    if budget > allowed:
        welcome["capped"] = f"it asked for {budget} MB; its credential allows at most {allowed} MB"
    await ws.send_text(wire.dumps(welcome))
    served = asyncio.create_task(link.serve(lambda body: _on_event(hosts, link, body)))
    checked = asyncio.create_task(_recheck(ws, link, text, credential))
    try:
        await asyncio.wait({served, checked}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (served, checked):
            task.cancel()
        await asyncio.gather(served, checked, return_exceptions=True)
        link.end()
        hosts.detach(link)
        if checked.done() and not checked.cancelled() and checked.exception() is None and checked.result():
            await hosts.revoked(credential.id)


async def _on_event(hosts: RigHosts, link: HostLink, body: dict[str, Any]) -> None:
    if body.get("event") == "rigDied" and isinstance(body.get("rig"), str):
        await hosts.rig_died(link.host_id, body["rig"])


async def _recheck(ws: WebSocket, link: HostLink, text: str, credential: HostCredential) -> bool:
    """Return True once the credential is refused (the socket closed saying why); runs while the link lives."""
    app = ws.app.state.ctx
    while not link.closed.is_set():
        await asyncio.sleep(RECHECK_S)
        try:
            await hostcreds.verify(KIND, app.dbs.server, text)
        except Unauthenticated as err:
            log.warning("rig hosts: %s: closing the link of %r", err.message, credential.name)
            await _refuse(ws, err)
            return True
        except Exception:  # the database away for a moment: the host stays until it can be checked
            log.exception("rig hosts: checking the credential of %r failed", credential.name)
    return False
