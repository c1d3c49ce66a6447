"""Workspace transfers are bounded in time and in number: an upload that stops arriving, or trickles slower than
``workspaceImport.minBytesPerSecond`` after its grace period, is answered 408 and leaves nothing behind; past
``workspaceTransfer.maxConcurrent`` imports and exports under way in one process, one more is answered 429 with
``Retry-After`` (both sides of each bound)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from hangar.backup.export import routes
from hangar.backup.export.layout import MAX_TRANSFERS_SETTING, MIN_RATE_SETTING
from hangar.backup.export.slots import TransferSlots
from hangar.identity import IdentityService
from tests.integration.test_workspace_transfer import export_bytes, upload
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server

IMPORT = "/workspace-transfer/import"


class Trickle:
    """An import upload sent by hand: its head and ``sent`` bytes of a body declared far longer, then nothing
    more until the test says (the client that holds a connection and a scratch file open)."""

    def __init__(self, srv: RunningServer, sent: int) -> None:
        self.srv, self.sent = srv, sent
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Trickle:
        port = int(self.srv.url.rsplit(":", 1)[1])
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            f"POST {IMPORT} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {self.srv.owner_token}\r\n"
            f"Content-Type: application/x-tar\r\nContent-Length: {1 << 20}\r\n\r\n"
        )
        self.writer.write(head.encode() + b"\0" * self.sent)
        await self.writer.drain()
        return self

    async def answer(self, timeout: float = 60) -> tuple[int, bytes]:
        assert self.reader is not None
        status = await asyncio.wait_for(self.reader.readline(), timeout)
        rest = await asyncio.wait_for(self.reader.read(65536), timeout)
        return int(status.split()[1]), rest

    async def __aexit__(self, *exc: object) -> None:
        assert self.writer is not None
        self.writer.close()
        await asyncio.gather(self.writer.wait_closed(), return_exceptions=True)


def scratch_left(srv: RunningServer) -> list[Path]:
    return list(srv.data_dir.glob(".workspace-transfer.*"))


async def _until(check: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


async def test_an_upload_slower_than_the_minimum_rate_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes, "BODY_GRACE_S", 0.5)
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("source")
        archive = await export_bytes(srv, ws)
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting(MIN_RATE_SETTING, 1024)
        # Faster than the rate (the whole archive at once): imported.
        fast = await upload(srv, archive, name="fast")
        assert fast.status_code == 201, fast.text
        # A client that sent 1 KiB of a body declared 1 MiB and then nothing: refused once its time ran out
        # (the grace and a second for the bytes it sent), with what was wrong, and its scratch folder gone.
        async with Trickle(srv, 1024) as slow:
            status, rest = await slow.answer()
        assert status == 408
        assert b"slower than 1024 bytes per second" in rest and b"workspaceImport.minBytesPerSecond" in rest
        assert scratch_left(srv) == []
        names = [w["name"] for w in await _workspaces(srv)]
        assert names.count("fast") == 1 and len(names) == 2
        assert srv.ctx.service(TransferSlots).active == 0


async def _workspaces(srv: RunningServer) -> list[dict[str, str]]:
    async with RpcClient(srv.ws_url, srv.owner_token) as client:
        listed: list[dict[str, str]] = await client.call("workspaces.list")
    return listed


async def test_transfers_past_the_cap_are_refused_with_retry_after(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("source")
        archive = await export_bytes(srv, ws)
        identity = srv.ctx.service(IdentityService)
        slots = srv.ctx.service(TransferSlots)
        await identity.set_setting(MAX_TRANSFERS_SETTING, 1)
        async with Trickle(srv, 100) as held:  # an import under way: it holds the one slot
            await _until(lambda: slots.active == 1, "the held upload took its slot")
            refused = await upload(srv, archive, name="second")
            assert refused.status_code == 429, refused.text
            assert refused.headers["retry-after"] == "30"
            assert "workspaceTransfer.maxConcurrent" in refused.json()["error"]["message"]
            async with RpcClient(srv.ws_url, srv.owner_token) as client:
                link = await client.call("workspaces.export", workspace_id=ws)
            async with httpx.AsyncClient(timeout=120) as http:
                download = await http.get(link["url"])
            assert download.status_code == 429  # exports share the cap
            # Two at once allowed: the same upload is taken beside the held one (at the cap).
            await identity.set_setting(MAX_TRANSFERS_SETTING, 2)
            beside = await upload(srv, archive, name="beside")
            assert beside.status_code == 201, beside.text
            assert slots.active == 1
            del held
        await _until(lambda: slots.active == 0, "the held upload let its slot go when its client left")
        await identity.set_setting(MAX_TRANSFERS_SETTING, 1)
        assert (await upload(srv, archive, name="after")).status_code == 201
        assert len(await export_bytes(srv, ws)) > 0
        assert slots.active == 0
        assert scratch_left(srv) == []
