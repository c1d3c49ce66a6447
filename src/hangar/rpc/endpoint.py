"""The RPC WebSocket at ``/rpc`` (CONTRACTS.md section 2).

Authentication by ``Authorization: Bearer`` on the upgrade or a first frame ``{"type": "auth", "token"}``.
Each request runs in its own task so a slow op never holds up the socket; replies carry the request id.
Inbound frames over 256 KiB close the connection with 1009: uvicorn's websocket protocol enforces it
(``ws_max_size``) and the check here covers servers that do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from hangar.core import wire
from hangar.core.principal import Principal
from hangar.core.requestids import begin_request
from hangar.errors import HangarError, InvalidArgs, NotFound, Unauthenticated
from hangar.httpkit.requests import bearer_token
from hangar.rpc.access import AccessMonitor
from hangar.rpc.context import OpContext
from hangar.rpc.dispatcher import Dispatcher, check_request_id, error_frame
from hangar.rpc.relay import RELAY_HEADER

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 256 * 1024
CLOSE_TOO_BIG = 1009
CLOSE_UNAUTHENTICATED = 4401
AUTH_TIMEOUT_S = 10.0

# One encoder for every reply (``json.dumps`` with separators builds a new one per call).
_encode = json.JSONEncoder(separators=(",", ":")).encode


class Connection:
    def __init__(self, ws: WebSocket, dispatcher: Dispatcher) -> None:
        self.ws = ws
        self.dispatcher = dispatcher
        self.principal: Principal | None = None
        self.token = ""
        # Another server relays its caller's watch over this socket (``hangar.rpc.relay``): never relayed again.
        self.relayed = RELAY_HEADER in ws.headers
        self.tasks: set[asyncio.Task[None]] = set()
        self.watches: dict[Any, asyncio.Task[None]] = {}
        self.watching: dict[Any, OpContext] = {}  # what each open watch was allowed as, re-checked when authority moves
        self._send_lock = asyncio.Lock()
        self.closed = False
        self.monitor = dispatcher.app.maybe_service(AccessMonitor)

    async def send(self, frame: dict[str, Any]) -> None:
        if self.closed:
            return
        data = _encode(frame)
        async with self._send_lock:
            try:
                await self.ws.send_text(data)
            except (WebSocketDisconnect, RuntimeError):
                self.closed = True

    async def close(self, code: int, reason: str = "") -> None:
        async with self._send_lock:
            if not self.closed and self.ws.application_state != WebSocketState.DISCONNECTED:
                self.closed = True
                with contextlib.suppress(RuntimeError):
                    await self.ws.close(code, reason)
            self.closed = True

    async def authenticate(self) -> bool:
        identity = self.dispatcher.authority
        token = bearer_token(self.ws.headers.get("authorization"))
        via_frame = False
        if token is not None:
            self.token = token
        else:
            via_frame = True
            try:
                raw = await asyncio.wait_for(self.ws.receive_text(), AUTH_TIMEOUT_S)
                frame = wire.loads(raw)
            except (TimeoutError, ValueError, WebSocketDisconnect, KeyError, InvalidArgs):
                frame = None
            if not isinstance(frame, dict) or frame.get("type") != "auth" or not isinstance(frame.get("token"), str):
                await self.send(
                    error_frame(None, Unauthenticated('the first frame must be {"type": "auth", "token": "..."}'))
                )
                await self.close(CLOSE_UNAUTHENTICATED, "unauthenticated")
                return False
            self.token = frame["token"]
        try:
            self.principal = await identity.authenticate(self.token)
        except Unauthenticated as err:
            await self.send(error_frame(None, err))
            await self.close(CLOSE_UNAUTHENTICATED, "unauthenticated")
            return False
        if via_frame:
            await self.send({"type": "auth", "ok": True, "userId": self.principal.user_id})
        return True

    async def serve(self) -> None:
        if not await self.authenticate():
            return
        if self.monitor is not None:
            self.monitor.watch(self)
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    raw = message.get("bytes") or b""
                    size = len(raw)
                    text = raw.decode("utf-8", errors="replace")
                else:
                    size = len(text.encode("utf-8")) if len(text) * 4 > MAX_FRAME_BYTES else len(text)
                if size > MAX_FRAME_BYTES:
                    await self.close(CLOSE_TOO_BIG, "frame over 256 KiB")
                    break
                self.handle(text)
        except WebSocketDisconnect:
            pass
        finally:
            self.closed = True
            if self.monitor is not None:
                self.monitor.forget(self)
            for task in list(self.tasks) + list(self.watches.values()):
                task.cancel()
            await asyncio.gather(*self.tasks, *self.watches.values(), return_exceptions=True)

    def handle(self, text: str) -> None:
        frame: Any = None
        try:
            frame = wire.parse(text)
            wire.check(frame)
        except InvalidArgs as err:
            self._spawn(self.send(error_frame(_plain_id(frame), err)))
            return
        self._spawn(self.run_frame(frame))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def run_frame(self, frame: Any) -> None:
        begin_request()  # each frame is a request of its own (it runs in a task of its own: ``_spawn``)
        req_id = frame.get("id") if isinstance(frame, dict) else None
        try:
            if isinstance(frame, dict) and frame.get("op") == "unwatch":
                await self.unwatch(frame)
                return
            req_id, spec, raw_args = self.dispatcher.parse_frame(frame)
            assert self.principal is not None
            ctx, args = await self.dispatcher.prepare(self.token, req_id, spec, raw_args, relayed=self.relayed)
            if spec.kind == "watch":
                if req_id in self.watches:
                    raise InvalidArgs(f"a watch with id {req_id!r} is already open on this socket", field="id")
                task = asyncio.get_running_loop().create_task(self._run_watch(req_id, ctx, args))
                self.watches[req_id] = task
                self.watching[req_id] = ctx
                task.add_done_callback(self._forget_watch(req_id))
                return
            result = await self.dispatcher.call(ctx, args)
            await self.send({"id": req_id, "ok": True, "result": result})
        except Unauthenticated as err:
            await self.send(error_frame(req_id, err))
            await self.close(CLOSE_UNAUTHENTICATED, "unauthenticated")
        except HangarError as err:
            await self.send(error_frame(req_id, err))
        except Exception as exc:
            if (down := self.dispatcher.database_gone(exc)) is not None:
                await self.send(error_frame(req_id, down))
                return
            log.exception("rpc frame failed")
            await self.send(error_frame(req_id, HangarError("internal error")))

    def _forget_watch(self, req_id: Any) -> Any:
        def done(task: asyncio.Task[None]) -> None:
            if self.watches.get(req_id) is task:
                del self.watches[req_id]
                self.watching.pop(req_id, None)

        return done

    async def recheck(self) -> None:
        """Called by the access monitor when authority moved (and every second): a credential that no longer
        works closes the socket with 4401; a watch its caller may no longer open ends with ``forbidden``."""
        if self.closed or self.principal is None:
            return
        identity = self.dispatcher.authority
        try:
            principal = await identity.authenticate(self.token, touch=False)
        except Unauthenticated as err:
            await self.send(error_frame(None, err))
            await self.close(CLOSE_UNAUTHENTICATED, "unauthenticated")
            return
        for watch_id, ctx in list(self.watching.items()):
            why = await self.dispatcher.watch_refusal(ctx, principal)
            if why is not None:
                await self.end_watch(watch_id, why)

    async def end_watch(self, watch_id: Any, err: HangarError) -> None:
        """Stop a watch (nothing more is sent for it), then tell its caller why."""
        task = self.watches.pop(watch_id, None)
        self.watching.pop(watch_id, None)
        if task is None:
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await self.send({"id": watch_id, "event": {"type": "error", "error": err.to_dict()}})

    async def _run_watch(self, req_id: Any, ctx: Any, args: Any) -> None:
        gen = self.dispatcher.watch(ctx, args)
        first = True
        try:
            async for item in gen:
                if first:
                    await self.send({"id": req_id, "ok": True, "result": ctx.spec.result_to_wire(item)})
                    first = False
                else:
                    await self.send({"id": req_id, "event": ctx.spec.event_to_wire(item)})
        except HangarError as err:
            if first:
                await self.send(error_frame(req_id, err))
            else:
                await self.send({"id": req_id, "event": {"type": "error", "error": err.to_dict()}})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if (down := self.dispatcher.database_gone(exc)) is not None:
                # The watch ends (its caller opens it again once the database is back, as after any error).
                failed: HangarError = down
            else:
                log.exception("watch %s failed", ctx.spec.name)
                failed = HangarError("internal error")
            if first:
                await self.send(error_frame(req_id, failed))
            elif down is not None:
                await self.send({"id": req_id, "event": {"type": "error", "error": failed.to_dict()}})
        finally:
            aclose = getattr(gen, "aclose", None)
            if aclose is not None:
                await aclose()

    async def unwatch(self, frame: dict[str, Any]) -> None:
        req_id = frame.get("id")
        args = frame.get("args") or {}
        watch_id = args.get("watchId") if isinstance(args, dict) else None
        task = self.watches.pop(watch_id, None)
        self.watching.pop(watch_id, None)
        if task is None:
            await self.send(error_frame(req_id, NotFound(f"no open watch with id {watch_id!r}")))
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await self.send({"id": req_id, "ok": True, "result": {"watchId": watch_id}})


def _plain_id(frame: Any) -> Any:
    """The id of a refused frame when it is one a client can match its request by, else None."""
    req_id = frame.get("id") if isinstance(frame, dict) else None
    try:
        wire.check(req_id, field="id")
        check_request_id(req_id)
    except InvalidArgs:
        return None
    return req_id


async def rpc_endpoint(ws: WebSocket) -> None:
    dispatcher: Dispatcher = ws.app.state.dispatcher
    await ws.accept()
    await Connection(ws, dispatcher).serve()
