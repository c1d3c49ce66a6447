"""Clipboard crossing: the per-direction policy (pure), the grants in a real server database, and what the
clipboard lane accepts (kinds, magic bytes, guest paths)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.core.clock import FakeClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.principal import Principal
from hangar.errors import InvalidArgs
from hangar.rigs.lanes.clipboard import guest_paths, image_kind
from hangar.rigs.lanes.consent import SERVER_MIGRATIONS, ClipboardGrants, ConsentRequired, Grant, decide, grants_table

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def grant(direction: str, minutes: int | None, *, ago: int = 0, user: str = "u1") -> Grant:
    at = NOW - timedelta(minutes=ago)
    return Grant("g", user, direction, at, None if minutes is None else at + timedelta(minutes=minutes))  # type: ignore[arg-type]


def test_pasting_into_a_rig_is_allowed_by_default_and_copying_out_asks() -> None:
    assert decide("hostToRig", [], NOW).allowed
    assert decide("hostToRig", [], NOW).why == "default"
    ask = decide("rigToHost", [], NOW)
    assert not ask.allowed and ask.why == "ask"


def test_a_ten_minute_grant_allows_copying_until_it_runs_out() -> None:
    fresh = decide("rigToHost", [grant("rigToHost", 10, ago=3)], NOW)
    assert fresh.allowed and fresh.why == "grant" and fresh.until == NOW + timedelta(minutes=7)
    assert not decide("rigToHost", [grant("rigToHost", 10, ago=10)], NOW).allowed
    assert not decide("rigToHost", [grant("hostToRig", 10)], NOW).allowed  # per direction


def test_always_allow_wins_over_timed_grants() -> None:
    d = decide("rigToHost", [grant("rigToHost", 10), grant("rigToHost", None, ago=600)], NOW)
    assert d.allowed and d.why == "always" and d.until is None


@pytest.fixture
async def grants(tmp_path: Path) -> AsyncIterator[tuple[ClipboardGrants, FakeClock, Databases]]:
    dbs = Databases(DataDir(tmp_path).ensure(), [SERVER_MIGRATIONS])
    await dbs.open()
    clock = FakeClock(NOW)
    try:
        yield ClipboardGrants(dbs.server, clock), clock, dbs
    finally:
        await dbs.aclose()


async def test_grants_are_per_person_read_at_each_use_and_expire(
    grants: tuple[ClipboardGrants, FakeClock, Databases],
) -> None:
    store, clock, _ = grants
    assert not (await store.decide("u1", "rigToHost")).allowed
    await store.grant("u1", "rigToHost", 10)
    assert (await store.decide("u1", "rigToHost")).allowed
    assert not (await store.decide("u2", "rigToHost")).allowed  # per person
    clock.advance(9 * 60)
    assert (await store.decide("u1", "rigToHost")).allowed
    clock.advance(61)
    assert not (await store.decide("u1", "rigToHost")).allowed
    assert await store.active("u1") == []


async def test_always_allow_lasts_until_revoked_and_the_revocation_is_kept(
    grants: tuple[ClipboardGrants, FakeClock, Databases],
) -> None:
    store, clock, dbs = grants
    await store.grant("u1", "rigToHost", None)
    await store.grant("u2", "rigToHost", None)
    clock.advance(365 * 24 * 3600)
    assert (await store.decide("u1", "rigToHost")).why == "always"
    assert [(g.user_id, g.always) for g in await store.active()] == [("u1", True), ("u2", True)]
    assert await store.revoke("u1", "rigToHost", by="owner") == 1
    assert not (await store.decide("u1", "rigToHost")).allowed
    assert (await store.decide("u2", "rigToHost")).allowed
    async with dbs.server.connect() as conn:
        rows = (await conn.execute(sa.select(grants_table.c.user_id, grants_table.c.revoked_by))).all()
    assert sorted((r[0], r[1]) for r in rows) == [("u1", "owner"), ("u2", None)]


async def test_require_is_the_one_check_of_lanes_and_verbs(
    grants: tuple[ClipboardGrants, FakeClock, Databases],
) -> None:
    """A person is asked until they grant it; an agent's own verbs pass (the clipboard stays with its run)."""
    store, _, _ = grants
    person = Principal("u1", "d1", "Ann", False)
    with pytest.raises(ConsentRequired) as refused:
        await store.require(person, "rigToHost")
    assert refused.value.code == "consent_required" and "ten minutes" in refused.value.message
    assert (await store.require(person, "hostToRig")).why == "default"
    await store.grant("u1", "rigToHost", 10)
    assert (await store.require(person, "rigToHost")).why == "grant"
    agent = Principal("agent:a1", "run:r1", "Ada", False, agent_id="a1")
    assert (await store.require(agent, "rigToHost")).allowed


def test_images_are_checked_by_their_magic_bytes() -> None:
    assert image_kind(b"\x89PNG\r\n\x1a\n....", "image/png") == "image/png"
    assert image_kind(b"\xff\xd8\xff\xe0....", "image/jpeg") == "image/jpeg"
    with pytest.raises(InvalidArgs) as e:
        image_kind(b"\xff\xd8\xff\xe0....", "image/png")
    assert e.value.field == "image"
    with pytest.raises(InvalidArgs):
        image_kind(b"GIF89a", "image/gif")


def test_guest_paths_are_absolute_and_never_climb() -> None:
    assert guest_paths(["/tmp/hangar-drops/a.txt", "/home/rig//b"]) == ["/tmp/hangar-drops/a.txt", "/home/rig/b"]
    for bad, where in (([], "files"), (["rel/a"], "files[0]"), (["/a", "/b/../c"], "files[1]"), ("/a", "files")):
        with pytest.raises(InvalidArgs) as e:
            guest_paths(bad)
        assert e.value.field == where
