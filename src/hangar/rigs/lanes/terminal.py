"""The live terminal lane: a PTY inside the rig over a WebSocket, for people (``/rig/terminal/<rigId>``).

xterm-compatible framing: binary frames carry terminal bytes both ways; a text frame
``{"type": "resize", "cols": 120, "rows": 40}`` resizes the PTY. The server sends text frames only for
notices: ``{"type": "error", "code": ..., "message": ...}`` (then closes with 4000 + HTTP status when it is
fatal) and ``{"type": "readonly", ...}`` when someone else holds control (input is dropped until handed back;
output still flows); typing is authorized at each keystroke, so read-only mode set while the terminal is open
drops input (told once as an ``error`` notice, ``refused``), and nothing is typed or sent after the person's
access ended. Authentication: ``Authorization: Bearer`` on the upgrade, or a first text frame
``{"type": "auth", "token": "<device credential>"}`` for browsers; plus ``sig`` in the query string, minted by
``rig.terminalUrl``. An open terminal pins the rig against parking and idle reaping (the TTL still applies).
Input is audited as a length and SHA-256 when the lane closes, never as content.

The shell is the kept terminal on the rig of the person and the credential the lane came through (``terminals``): a
lane that closes leaves it running, and the next lane of the same credential attaches to it and gets its recent
output first, before anything else it prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.errors import HangarError, InvalidArgs, Refused
from hangar.rigs.backends.base import Pty
from hangar.rigs.lanes.access import LaneAccess, authorize, authorize_change
from hangar.rigs.lanes.socketlane import credential, fail, guarded
from hangar.rigs.live.terminals import Holder, KeptTerminal
from hangar.rpc.access import Revocable

log = logging.getLogger(__name__)

DEFAULT_COLS, DEFAULT_ROWS = 80, 24


def _size(value: str | None, default: int, name: str) -> int:
    if value is None:
        return default
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise InvalidArgs(f"{name} must be a whole number from 1 to 1000", field=name)
    return int(value)


async def terminal_lane(ws: WebSocket) -> None:
    rig_id = ws.path_params["rig_id"]
    await ws.accept()
    try:
        cols = _size(ws.query_params.get("cols"), DEFAULT_COLS, "cols")
        rows = _size(ws.query_params.get("rows"), DEFAULT_ROWS, "rows")
        principal, token = await credential(ws)
        access = await authorize(
            ws.app.state.ctx, "terminal", rig_id, ws.query_params.get("sig"), principal, mutating=True
        )
    except HangarError as err:
        await fail(ws, err)
        return
    try:
        async with guarded(ws.app.state.ctx, access, token) as guard:
            await _serve(ws, access, cols, rows, guard)
    except HangarError as err:
        await fail(ws, err)


async def _serve(ws: WebSocket, access: LaneAccess, cols: int, rows: int, guard: Revocable) -> None:
    mgr, principal, me = access.manager, access.principal, access.principal.user_id
    # Kept per credential: another credential of the same person (an application's) never sees this shell.
    holder = Holder(me, principal.device_id)
    typed = hashlib.sha256()
    typed_len = 0
    async with mgr.lane(access.ws, access.live.id) as live:
        async with mgr.acting(access.ws, live.id, principal, mutating=False, what="terminal") as (_l, handle):
            kept = live.terminals.get(holder)
            fresh = False
            if kept is None:
                pty = await handle.open_pty(cols, rows)
                kept = live.terminals.get(holder)  # another lane of this credential's may have opened one meanwhile
                if kept is None:
                    kept = KeptTerminal(pty, mgr.app.settings.terminal_scrollback_bytes, mgr.app.clock.monotonic())
                    live.terminals.put(holder, kept)
                    fresh = True
                else:
                    await pty.aclose()  # one shell per credential: that one is this lane's too
            if not fresh:
                with contextlib.suppress(Refused):  # its shell just exited: the lane ends at once, as it should
                    await kept.pty.resize(cols, rows)
        opened: dict[str, Any] = {"cols": cols, "rows": rows} if fresh else {"cols": cols, "rows": rows, "kept": True}
        await mgr.log_action(access.ws, live.id, principal, "terminal.open", opened)
        replay, sink = kept.attach()

        async def pump_out() -> None:
            await guard.admit()  # the recent output goes only to a person who may still see this terminal
            if replay:
                await ws.send_bytes(replay)
            ended = asyncio.ensure_future(kept.ended.wait())
            try:
                while True:
                    if kept.ended.is_set():  # the shell exited: what it printed last, then the lane ends
                        if sink.empty():
                            return
                        data = sink.get_nowait()
                    else:
                        getting = asyncio.ensure_future(sink.get())
                        await asyncio.wait({getting, ended}, return_when=asyncio.FIRST_COMPLETED)
                        if not getting.done():
                            getting.cancel()
                            continue
                        data = getting.result()
                    live.last_active_at = mgr.app.clock.monotonic()
                    await guard.admit()  # nothing reaches a person whose access ended, however recently
                    await ws.send_bytes(data)
            finally:
                ended.cancel()

        async def pump_in() -> None:
            nonlocal typed_len
            told_readonly = False
            told_refused = False
            while True:
                msg = await ws.receive()
                if msg["type"] == "websocket.disconnect":
                    return
                if msg.get("bytes") is not None:
                    if live.controller is not None and live.controller != me:
                        if not told_readonly:
                            told_readonly = True
                            await ws.send_text(
                                json.dumps({"type": "readonly", "message": "a person holds control; input is dropped"})
                            )
                        continue
                    told_readonly = False
                    # Typing is a change, authorized at each keystroke: the person still has access (the lane
                    # ends otherwise), and the read-only mode set since the lane opened refuses it.
                    await guard.admit()
                    try:
                        await authorize_change(access, "terminal", "typing into the terminal")
                    except HangarError as err:
                        if not told_refused:
                            told_refused = True
                            await ws.send_text(json.dumps({"type": "error", **err.to_dict()}))
                        continue
                    told_refused = False
                    data: bytes = msg["bytes"]
                    typed.update(data)
                    typed_len += len(data)
                    live.last_active_at = mgr.app.clock.monotonic()
                    await kept.pty.write(data)
                elif msg.get("text") is not None:
                    await _control(ws, kept.pty, msg["text"])

        out = asyncio.create_task(pump_out())
        inp = asyncio.create_task(pump_in())
        access_ended = False
        try:
            ending: set[asyncio.Future[Any]] = {out, inp, guard.ended}
            done, _ = await asyncio.wait(ending, return_when=asyncio.FIRST_COMPLETED)
            if out in done and not guard.ended.done():
                # The shell ended: closed because its person lost access (their removal ends every shell of
                # theirs at once), the lane ends as that loss, told as such, not as an exit.
                await guard.recheck()
            if guard.ended.done():
                access_ended = True
                raise guard.ended.result()  # access ended: told to the person, then the lane closes (4401 / 4403)
            for task in done:
                exc = task.exception()
                if isinstance(exc, HangarError):
                    access_ended = exc.code in ("unauthenticated", "forbidden")
                    raise exc  # told to the person, then the lane closes
                if exc is not None and not isinstance(exc, WebSocketDisconnect | OSError | RuntimeError):
                    log.warning("rigs: terminal lane of %s ended on %r", live.id, exc)
                # a socket that went away (disconnect, reset, send after close) just ends the lane
        finally:
            for task in (out, inp):
                task.cancel()
            await asyncio.gather(out, inp, return_exceptions=True)
            kept.detach(sink, mgr.app.clock.monotonic())
            if access_ended:
                await live.terminals.close(holder)  # a shell is kept only for a credential that may come back to it
            await mgr.log_action(
                access.ws,
                live.id,
                principal,
                "terminal.close",
                {"input": {"length": typed_len, "sha256": typed.hexdigest()}},
            )
    with contextlib.suppress(Exception):
        await ws.close(code=1000)


async def _control(ws: WebSocket, pty: Pty, text: str) -> None:
    try:
        frame: Any = json.loads(text)
    except ValueError:
        frame = None
    if isinstance(frame, dict) and frame.get("type") == "resize":
        cols, rows = frame.get("cols"), frame.get("rows")
        if isinstance(cols, int) and isinstance(rows, int) and 1 <= cols <= 1000 and 1 <= rows <= 1000:
            await pty.resize(cols, rows)
            return
        err: HangarError = InvalidArgs("resize takes whole-number cols and rows from 1 to 1000", field="cols")
    else:
        err = InvalidArgs(
            'text frames must be {"type": "resize", "cols": N, "rows": N}; send keys as binary', field="type"
        )
    await ws.send_text(json.dumps({"type": "error", **err.to_dict()}))
