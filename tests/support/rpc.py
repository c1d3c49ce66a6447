"""A real WebSocket RPC client for tests and benchmarks (CONTRACTS.md section 2)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection


class RpcError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Watch:
    def __init__(self, client: RpcClient, watch_id: int, result: Any, queue: asyncio.Queue[Any]) -> None:
        self.client = client
        self.id = watch_id
        self.result = result
        self._queue = queue

    async def next(self, timeout: float = 10.0) -> Any:
        return await asyncio.wait_for(self._queue.get(), timeout)

    async def close(self) -> Any:
        return await self.client.call("unwatch", watchId=self.id)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Any]:
        while True:
            yield await self._queue.get()


class RpcClient:
    def __init__(self, ws_url: str, token: str | None = None, *, frame_auth: bool = False) -> None:
        self.ws_url = ws_url
        self.token = token
        self.frame_auth = frame_auth
        self.conn: ClientConnection | None = None
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._watches: dict[Any, asyncio.Queue[Any]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.unsolicited: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.close_code: int | None = None

    async def __aenter__(self) -> RpcClient:
        headers = {}
        if self.token is not None and not self.frame_auth:
            headers["Authorization"] = f"Bearer {self.token}"
        self.conn = await websockets.connect(self.ws_url, additional_headers=headers, max_size=None)
        if self.frame_auth and self.token is not None:
            await self.conn.send(json.dumps({"type": "auth", "token": self.token}))
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        assert self.conn is not None
        try:
            async for raw in self.conn:
                frame = json.loads(raw)
                fid = frame.get("id")
                if "event" in frame and fid in self._watches:
                    self._watches[fid].put_nowait(frame["event"])
                elif fid in self._pending:
                    self._pending.pop(fid).set_result(frame)
                else:
                    self.unsolicited.put_nowait(frame)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.close_code = self.conn.close_code
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError(f"socket closed ({self.close_code})"))
            self._pending.clear()

    async def send_raw(self, data: str | bytes) -> None:
        assert self.conn is not None
        await self.conn.send(data)

    async def request(
        self, op: str, args: dict[str, Any] | None = None, *, req_id: Any = None, timeout_s: float = 60
    ) -> dict[str, Any]:
        """Send one frame and return the raw reply frame (``timeout_s``: a bound against hangs only)."""
        assert self.conn is not None
        rid = next(self._ids) if req_id is None else req_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        await self.conn.send(json.dumps({"id": rid, "op": op, "args": args or {}}))
        return await asyncio.wait_for(fut, timeout_s)

    async def call(self, op: str, **args: Any) -> Any:
        reply = await self.request(op, args)
        if not reply.get("ok"):
            err = reply["error"]
            raise RpcError(err["code"], err["message"])
        return reply["result"]

    async def watch(self, op: str, **args: Any) -> Watch:
        assert self.conn is not None
        rid = next(self._ids)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._watches[rid] = queue
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        await self.conn.send(json.dumps({"id": rid, "op": op, "args": args}))
        reply = await asyncio.wait_for(fut, 30)
        if not reply.get("ok"):
            del self._watches[rid]
            err = reply["error"]
            raise RpcError(err["code"], err["message"])
        return Watch(self, rid, reply["result"], queue)
