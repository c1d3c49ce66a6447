"""Image packs stay current, on the real server: a pack older than its archive's latest release is built again in
the background while the old one keeps serving new rigs, then put in its place in one step; rigs booted from the
old one keep it, and it is removed once none does; a failed rebuild keeps the old pack and says why. The archive is
a real HTTP peer on loopback serving Release files with the dates the test sets (tests/peers/debian_archive.py);
the build is the stand-in mmdebstrap whose builds are hard links to the tests' real terminal pack
(tests/support/fake_mmdebstrap.py), so what boots is a real root filesystem, and each build marks itself so a rig
can tell which one it booted from."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hangar.config import MAX_PACK_REFRESH_HOURS, Settings
from hangar.core.context import AppContext
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.backends.enclosure.backend import STOPPED
from hangar.rigs.images import refresh, versions
from hangar.rigs.images.builder import TERMINAL as TERMINAL_RECIPE
from hangar.rigs.images.builder import ensure_pack
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.lifecycle.packrefresh import PackRefresh
from hangar.rigs.part import make_rigs_part
from hangar.server.parts import all_parts
from hangar.workspace.part import WORKSPACE_PART
from tests.peers.debian_archive import DebianArchive
from tests.support.fake_mmdebstrap import FakeMmdebstrap, install_fake_mmdebstrap
from tests.support.packs import PACKS, rigs_unavailable
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

TERMINAL = TERMINAL_RECIPE.name
pytestmark = pytest.mark.packs("terminal")


def parts_over(packs: Path, tick: float) -> list[Any]:
    def backend(app: AppContext) -> EnclosureBackend:
        return EnclosureBackend(app.datadir.sub("rigs"), packs_root=packs, apt_root=app.settings.rig_apt_root)

    parts = [p for p in all_parts() if p.name != "rigs"]
    if not any(p.name == WORKSPACE_PART.name for p in parts):
        parts.append(WORKSPACE_PART)
    return [*parts, make_rigs_part(backend, refresh_tick=tick)]


@dataclass
class World:
    srv: RunningServer
    client: RpcClient
    archive: DebianArchive
    fake: FakeMmdebstrap
    packs: Path
    ws: str


@asynccontextmanager
async def refreshing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tick: float = 3600.0) -> AsyncIterator[World]:
    """A server whose terminal pack was built from the archive peer's current release, refreshes off unless a
    test sets them (its schedule's tick is long unless given)."""
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"enclosures cannot run here: {reason}")
    with DebianArchive() as archive:
        apt = archive.apt_root(tmp_path / "apt")
        fake = install_fake_mmdebstrap(tmp_path, monkeypatch, template=PACKS / TERMINAL, apt_root=apt)
        packs = tmp_path / "packs"
        fake.finish()
        await ensure_pack(packs, None, TERMINAL_RECIPE, apt)
        assert len(archive.requests) == 3  # the build read each suite's release date
        archive.requests.clear()
        fake.hold()
        settings = {"rig_apt_root": apt, "pack_refresh_hours": 0}
        async with (
            running_server(tmp_path / "data", parts=parts_over(packs, tick), **settings) as srv,
            RpcClient(srv.ws_url, srv.owner_token) as client,
        ):
            yield World(srv, client, archive, fake, packs, await srv.new_workspace("fresh"))


async def terminal(c: RpcClient) -> dict[str, Any]:
    return dict(next(p for p in await c.call("rigs.packs") if p["name"] == TERMINAL))


async def until(check: Callable[[], Awaitable[Any]]) -> Any:
    async with asyncio.timeout(120):  # a bound against hangs only
        while not (got := await check()):
            await asyncio.sleep(0.05)
        return got


async def open_rig(w: World, title: str) -> str:
    space = (await w.client.call("spaces.create", workspace_id=w.ws, title=title))["id"]
    return str((await w.client.call("rig.open", workspace_id=w.ws, space_id=space, surface="terminal"))["rigId"])


async def build_of(w: World, rig: str) -> str:
    out = await w.client.call("rig.exec", workspace_id=w.ws, rigId=rig, command="cat /hangar-fake-build")
    assert out["exitCode"] == 0, out
    return str(out["stdout"]).strip()


def kept_versions(w: World) -> list[str]:
    return sorted(p.name for p in versions.versions_dir(w.packs, TERMINAL).iterdir() if not p.name.startswith("."))


async def test_a_stale_pack_is_rebuilt_while_the_old_one_serves_then_swapped_and_the_old_one_removed_when_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with refreshing(tmp_path, monkeypatch) as w:
        before = await terminal(w.client)
        assert before["state"] == "ready" and before["refresh"] is None
        built_from = dict(before["archiveDates"])
        assert set(built_from) == {"bookworm", "bookworm-updates", "bookworm-security"}
        assert before["archiveDate"] == max(built_from.values()) and before["builtAt"]
        first = await open_rig(w, "booted before")
        old = await build_of(w, first)

        # Nothing released since: a check finds the pack current and builds nothing.
        await w.client.call("rigs.checkPacks")
        pack = await terminal(w.client)
        assert pack["refresh"]["state"] == "current" and pack["refresh"]["checkedAt"] and pack["step"] is None

        # A security update: the check finds the pack stale and builds it again in the background.
        w.archive.dates["bookworm-security"] += timedelta(days=3)
        listed = await w.client.call("rigs.checkPacks")
        pack = next(p for p in listed["packs"] if p["name"] == TERMINAL)
        assert pack["state"] == "ready" and pack["refresh"]["state"] == "refreshing"
        assert pack["refresh"]["newer"] == ["bookworm-security"]
        await until(lambda: _step_is(w, "terminal image: downloading packages (4/10)"))
        # Meanwhile the old pack serves new rigs.
        during = await open_rig(w, "booted during")
        assert await build_of(w, during) == old

        w.fake.finish()
        pack = await until(lambda: _refresh_is(w, "refreshed"))
        assert pack["state"] == "ready" and pack["step"] is None and pack["refresh"]["finishedAt"]
        assert pack["archiveDates"]["bookworm-security"] > built_from["bookworm-security"]
        assert pack["builtAt"] >= before["builtAt"]
        after = await open_rig(w, "booted after")
        new = await build_of(w, after)
        assert new != old
        # Running rigs keep the pack they booted from; it stays on disk while any of them runs.
        assert await build_of(w, first) == old and await build_of(w, during) == old
        assert len(kept_versions(w)) == 2
        await w.client.call("rig_close", workspace_id=w.ws, rigId=first)
        await w.client.call("rigs.checkPacks")
        assert len(kept_versions(w)) == 2  # one rig still boots from it
        await w.client.call("rig_close", workspace_id=w.ws, rigId=during)
        # The schedule's pass removes it, checks off (the interval is 0 here) as on.
        assert await w.srv.ctx.service(PackRefresh).pass_once() is False
        assert len(kept_versions(w)) == 1 and await build_of(w, after) == new
        pack = await terminal(w.client)
        assert pack["refresh"]["state"] == "refreshed"  # shown until the archive moves on again


async def _step_is(w: World, step: str) -> bool:
    return (await terminal(w.client))["step"] == step


async def _refresh_is(w: World, state: str) -> dict[str, Any] | None:
    pack = await terminal(w.client)
    return pack if pack["refresh"] and pack["refresh"]["state"] == state else None


async def test_a_failed_rebuild_keeps_the_old_pack_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with refreshing(tmp_path, monkeypatch) as w:
        rig = await open_rig(w, "before")
        old = await build_of(w, rig)
        w.archive.dates["bookworm"] += timedelta(days=1)
        await w.client.call("rigs.checkPacks")
        await until(lambda: _step_is(w, "terminal image: downloading packages (4/10)"))
        w.fake.finish(exit_code=2)
        pack = await until(lambda: _refresh_is(w, "failed"))
        assert pack["state"] == "ready" and "exit code 2" in pack["refresh"]["error"]
        assert "mirror answered 404" in pack["refresh"]["error"] and str(w.packs) not in pack["refresh"]["error"]
        assert any("could not be refreshed (the old one keeps serving)" in r.getMessage() for r in caplog.records)
        assert await build_of(w, await open_rig(w, "after")) == old
        # An archive that cannot be read is a failed check, said the same way; the pack still serves.
        w.archive.failing = True
        await w.client.call("rigs.checkPacks")
        pack = await terminal(w.client)
        assert pack["refresh"]["state"] == "failed" and "could not be checked" in pack["refresh"]["error"]
        assert "503" in pack["refresh"]["error"] and pack["state"] == "ready"


async def turn_taken(schedule: PackRefresh, *, now: bool = False) -> bool:
    """Whether a pass of the test's own took the turn, asked again while the running schedule's pass (every 0.2 s
    here) holds it at that moment: a pass that finds the turn taken skips, as it should."""
    for _ in range(100):  # a bound against hangs only
        if await schedule.pass_once(now=now):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_the_schedule_checks_when_due_takes_turns_and_its_setting_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with refreshing(tmp_path, monkeypatch, tick=0.2) as w:
        schedule = w.srv.ctx.service(PackRefresh)
        assert await schedule.pass_once() is False and w.archive.requests == []  # 0: off (the process default)
        refused = []
        for hours in (-1, MAX_PACK_REFRESH_HOURS + 1, "24", True, 1.5):
            with pytest.raises(RpcError) as bad:
                await w.client.call("rigs.setPackRefresh", hours=hours)
            refused.append(bad.value.code)
        assert set(refused) == {"invalid_args"}
        listed = await w.client.call("rigs.setPackRefresh", hours=MAX_PACK_REFRESH_HOURS)
        assert listed["refreshHours"] == MAX_PACK_REFRESH_HOURS
        # Due (never checked): the running schedule checks on its own.
        pack = await until(lambda: _refresh_is(w, "current"))
        seen = len(w.archive.requests)
        assert seen == 3  # one Release file per suite the pack was built from
        assert await turn_taken(schedule) and len(w.archive.requests) == seen  # checked: not due again
        # Another server sharing the packs holds the turn: this one skips its pass.
        fd = os.open(w.packs / "refresh.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            assert await schedule.pass_once(now=True) is False and len(w.archive.requests) == seen
        finally:
            os.close(fd)
        assert await turn_taken(schedule, now=True) and len(w.archive.requests) == seen + 3
        listed = await w.client.call("rigs.setPackRefresh", hours=0)
        assert listed["refreshHours"] == 0 and await schedule.pass_once() is False
        assert pack["refresh"]["checkedAt"]
        # The setting itself, and the process default, hold the same bounds.
        identity = w.srv.ctx.service(IdentityService)
        for good in (0, MAX_PACK_REFRESH_HOURS):
            await identity.set_setting("rigs.packRefreshHours", good)
            assert await schedule.interval_hours() == good
        for bad in (-1, MAX_PACK_REFRESH_HOURS + 1, "1", True):
            with pytest.raises(InvalidArgs, match=r"rigs\.packRefreshHours"):
                await identity.set_setting("rigs.packRefreshHours", bad)
        for good in (0, MAX_PACK_REFRESH_HOURS):
            assert Settings(pack_refresh_hours=good).pack_refresh_hours == good
        for bad in (-1, MAX_PACK_REFRESH_HOURS + 1):
            with pytest.raises(ValidationError):
                Settings(pack_refresh_hours=bad)


async def test_a_rebuild_stopped_with_its_server_is_said_and_tried_again_at_the_next_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with refreshing(tmp_path, monkeypatch) as w:
        await w.client.call("rigs.setPackRefresh", hours=24)
        w.archive.dates["bookworm-security"] += timedelta(hours=5)
        await w.client.call("rigs.checkPacks")
        await until(lambda: _step_is(w, "terminal image: downloading packages (4/10)"))
        backend = w.srv.ctx.service(RigManager).backend
        await backend.aclose()  # what stopping the server does to a build under way
        pack = await terminal(w.client)
        assert pack["state"] == "ready" and pack["step"] is None
        assert pack["refresh"]["state"] == "failed" and pack["refresh"]["error"] == STOPPED
        assert pack["refresh"]["checkedAt"] is None  # due at once
        # A server killed outright leaves its record saying "refreshing" with nobody building: shown the same.
        record = refresh.read_record(w.packs, TERMINAL_RECIPE)
        assert record is not None
        refresh.write_record(w.packs, TERMINAL_RECIPE, replace(record, state="refreshing", error=None))
        pack = await terminal(w.client)
        assert pack["refresh"]["state"] == "failed" and pack["refresh"]["error"] == STOPPED
        w.fake.finish()
        assert await w.srv.ctx.service(PackRefresh).pass_once() is True  # due: checked and rebuilt
        pack = await until(lambda: _refresh_is(w, "refreshed"))
        assert pack["archiveDates"]["bookworm-security"] == rfc(w.archive.dates["bookworm-security"])


def rfc(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def test_refreshing_packs_is_the_server_owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with refreshing(tmp_path, monkeypatch) as w:
        for role in ("owner", "admin"):
            token = await w.srv.new_user_token(w.ws, role, name=f"ws{role}")
            async with RpcClient(w.srv.ws_url, token) as c:
                for op, args in (
                    ("rigs.checkPacks", {}),
                    ("rigs.setPackRefresh", {"hours": 1}),
                    ("rigs.watchPacks", {}),
                ):
                    with pytest.raises(RpcError) as refused:
                        await c.call(op, **args)
                    assert refused.value.code == "forbidden", op
        assert w.archive.requests == []
        assert (await w.client.call("rigs.setPackRefresh", hours=1))["refreshHours"] == 1


async def test_a_check_on_a_host_that_cannot_run_rigs_says_why_and_the_schedule_skips(tmp_path: Path) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()

    def backend(app: AppContext) -> EnclosureBackend:
        return EnclosureBackend(app.datadir.sub("rigs"), packs_root=tmp_path / "packs", tool_path=str(empty))

    parts = [p for p in parts_over(tmp_path / "packs", 3600.0) if p.name != "rigs"]
    async with (
        running_server(tmp_path / "data", parts=[*parts, make_rigs_part(backend)], pack_refresh_hours=1) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        reason = srv.ctx.service(RigManager).backend.unavailable_reason()
        assert reason is not None
        with pytest.raises(RpcError) as refused:
            await c.call("rigs.checkPacks")
        assert refused.value.code == "unavailable" and reason in refused.value.message
        assert await srv.ctx.service(PackRefresh).pass_once(now=True) is False
