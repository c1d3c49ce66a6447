"""Access to a meeting's audio is checked when a transfer ends, not only when it starts, and a workspace's uploads
under way at once are bounded: a member removed or demoted while their upload's body is arriving gets 403 and
nothing is kept (no channel, no file); a member removed while the playback track streams gets no further piece;
``meetings.maxConcurrentUploads`` (default 4) lets four uploads run at once and refuses a fifth with 429 naming it.
Each over the real HTTP lane of a running server, the removals made over another connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.meetings import files, store
from hangar.meetings.routes import (
    DEFAULT_MAX_UPLOADS,
    MAX_UPLOADS_SETTING,
    PLAYBACK_PIECE,
    UPLOADS,
)
from tests.integration.test_meeting_audio import channels_url, tone, upload
from tests.support.server import RunningServer
from tests.support.streams import read_around
from tests.unit.agents.support import workspace_server


async def until(check: Callable[[], bool], what: str) -> None:
    for _ in range(2400):
        if check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"never happened: {what}")


async def started(ws: str, count: int) -> None:
    """The server holds ``count`` uploads of ``ws`` under way: past their first checks, receiving the body."""
    await until(lambda: UPLOADS.active.get(ws, 0) == count, f"{count} upload(s) under way")


async def slow_upload(
    srv: RunningServer, ws: str, meeting_id: str, data: bytes, token: str, midway: Callable[[], Awaitable[None]]
) -> httpx.Response:
    """An upload whose body stops halfway until ``midway`` has run."""

    async def body() -> AsyncIterator[bytes]:
        yield data[: len(data) // 2]
        await midway()
        yield data[len(data) // 2 :]

    async with httpx.AsyncClient(timeout=300) as http:
        return await http.post(
            channels_url(srv, ws, meeting_id), content=body(), headers={"Authorization": f"Bearer {token}"}
        )


def nothing_kept(srv: RunningServer, ws: str, meeting_id: str) -> bool:
    folder = files.meeting_dir(srv.ctx, ws, meeting_id)
    return not folder.exists() or list(folder.iterdir()) == []


@pytest.mark.parametrize("change", ["removed", "demoted"])
async def test_a_member_removed_or_demoted_mid_upload_is_refused_and_nothing_is_kept(
    tmp_path: Path, change: str
) -> None:
    wav = tone(tmp_path / "ada.wav", 2.0)
    async with workspace_server(tmp_path) as (srv, c, ws):
        identity = srv.ctx.service(IdentityService)
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        ada = await srv.new_user_token(ws, "member", name="ada")
        ada_id = (await identity.authenticate(ada)).user_id

        async def keep_her() -> None:
            await started(ws, 1)

        # The same slow upload by a member who stays is kept: the refusal below is the change's, not the pace's.
        assert (await slow_upload(srv, ws, m["id"], wav, ada, keep_her)).status_code == 201
        await c.call("meetings.delete", workspace_id=ws, meetingId=m["id"])
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")

        async def change_her() -> None:
            await started(ws, 1)  # her upload passed its first checks and is receiving
            if change == "removed":
                await c.call("members.remove", workspace_id=ws, userId=ada_id)
            else:
                await c.call("members.setRole", workspace_id=ws, userId=ada_id, role="guest")

        answer = await slow_upload(srv, ws, m["id"], wav, ada, change_her)
        assert answer.status_code == 403, answer.text
        message = answer.json()["error"]["message"]
        assert "as the upload ended" in message and ("not a member" if change == "removed" else "guest") in message
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["channels"] == []
        assert await store.channels(await srv.ctx.dbs.workspace(ws), m["id"]) == []
        assert nothing_kept(srv, ws, m["id"])
        assert UPLOADS.active.get(ws, 0) == 0  # the slot is given back


async def test_a_member_removed_mid_playback_gets_no_further_piece(tmp_path: Path) -> None:
    # A track far larger than what the sockets between server and client can hold, so the server is still
    # sending (waiting for the reader) when the removal lands.
    size = 48 * PLAYBACK_PIECE
    async with workspace_server(tmp_path) as (srv, c, ws):
        identity = srv.ctx.service(IdentityService)
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        path = files.playback_path(srv.ctx, ws, m["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x01" * size)
        await store.set_playback(await srv.ctx.dbs.workspace(ws), m["id"], size, srv.ctx.clock.now())
        url = f"{srv.url}/meeting-audio/{ws}/{m['id']}/playback"
        ada = await srv.new_user_token(ws, "guest", name="ada")
        ada_id = (await identity.authenticate(ada)).user_id

        async def listen(midway: Callable[[], Awaitable[None]]) -> tuple[int, BaseException | None]:
            headers = {"Authorization": f"Bearer {ada}"}
            async with httpx.AsyncClient(timeout=120) as http, http.stream("GET", url, headers=headers) as r:
                assert r.status_code == 200 and r.headers["content-length"] == str(size)
                return await read_around(r, midway)

        async def nothing() -> None:
            await asyncio.sleep(0.5)

        assert await listen(nothing) == (size, None)  # a listener who stays hears it all

        async def remove_her() -> None:
            await asyncio.sleep(0.5)  # the server fills the sockets and waits for the reader
            await c.call("members.remove", workspace_id=ws, userId=ada_id)

        got, error = await listen(remove_her)
        assert got < size and isinstance(error, httpx.RemoteProtocolError), (got, error)


async def test_uploads_under_way_at_once_are_bounded_per_workspace(tmp_path: Path) -> None:
    wav = tone(tmp_path / "ada.wav", 0.5)
    assert DEFAULT_MAX_UPLOADS == 4
    async with workspace_server(tmp_path) as (srv, c, ws):
        identity = srv.ctx.service(IdentityService)
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        go = asyncio.Event()

        async def wait_go() -> None:
            await go.wait()

        held = [
            asyncio.create_task(slow_upload(srv, ws, m["id"], wav, srv.owner_token, wait_go))
            for _ in range(DEFAULT_MAX_UPLOADS)
        ]
        await started(ws, DEFAULT_MAX_UPLOADS)  # at the limit: all four accepted, under way
        past = await upload(srv, ws, m["id"], wav)
        assert past.status_code == 429, past.text
        said = past.json()["error"]["message"]
        assert MAX_UPLOADS_SETTING in said and f"{DEFAULT_MAX_UPLOADS} meeting audio upload" in said
        assert past.headers["retry-after"] == "30"
        # Another workspace's uploads are not counted against this one.
        other = await srv.new_workspace("other")
        o = await c.call("meetings.create", workspace_id=other, title="Elsewhere")
        assert (await upload(srv, other, o["id"], wav)).status_code == 201
        go.set()
        assert [r.status_code for r in await asyncio.gather(*held)] == [201] * DEFAULT_MAX_UPLOADS
        assert (await upload(srv, ws, m["id"], wav)).status_code == 201  # the slots are given back

        # The setting: at 1, one upload under way refuses the next; bounded to 1 … 64.
        await identity.set_setting(MAX_UPLOADS_SETTING, 1)
        go = asyncio.Event()
        one = asyncio.create_task(slow_upload(srv, ws, m["id"], wav, srv.owner_token, wait_go))
        await started(ws, 1)
        refused = await upload(srv, ws, m["id"], wav)
        assert refused.status_code == 429 and "1 meeting audio upload" in refused.json()["error"]["message"]
        go.set()
        assert (await one).status_code == 201
        await identity.set_setting(MAX_UPLOADS_SETTING, 64)
        for bad in (0, 65, "4", True):
            with pytest.raises((InvalidArgs, ValueError)):
                await identity.set_setting(MAX_UPLOADS_SETTING, bad)
