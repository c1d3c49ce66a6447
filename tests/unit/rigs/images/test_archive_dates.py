"""Release dates of Debian suites (``images.archive``) as a real archive serves them over HTTP (a loopback
peer): InRelease first, Release where there is none, and a clear refusal when neither gives a date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hangar.errors import Unavailable
from hangar.rigs.images.archive import newer_suites, parse_release_date, release_dates
from tests.peers.debian_archive import DebianArchive, release_text

WHEN = datetime(2026, 11, 20, 17, 4, 31, tzinfo=UTC)


def test_the_date_is_read_from_the_release_fields_only() -> None:
    assert parse_release_date(release_text("bookworm-security", WHEN)) == WHEN
    assert parse_release_date("Origin: Debian\nDate: Fri, 20 Nov 2026 18:04:31 +0100\n") == WHEN
    assert parse_release_date("Origin: Debian\nDate: Fri, 20 Nov 2026 17:04:31 UTC\n") == WHEN  # Debian's own form
    for bad in ("Origin: Debian\nSuite: x\n", "Date: yesterday\n", "Origin: x\n Date: Fri, 20 Nov 2026 17:04:31 UTC\n"):
        with pytest.raises(ValueError):
            parse_release_date(bad)


async def test_dates_come_from_inrelease_or_else_release() -> None:
    with DebianArchive() as archive:
        archive.dates["bookworm-security"] = WHEN
        sources = [f"deb {archive.url} bookworm main", f"deb {archive.url} bookworm-security main"]
        dates = await release_dates(sources)
        assert dates == {"bookworm": archive.dates["bookworm"], "bookworm-security": WHEN}
        assert archive.requests == ["/debian/dists/bookworm/InRelease", "/debian/dists/bookworm-security/InRelease"]
        archive.inrelease = False
        archive.requests.clear()
        assert await release_dates(sources[1:]) == {"bookworm-security": WHEN}
        assert archive.requests == [
            "/debian/dists/bookworm-security/InRelease",
            "/debian/dists/bookworm-security/Release",
        ]


async def test_an_archive_that_cannot_say_is_named() -> None:
    with DebianArchive() as archive:
        with pytest.raises(Unavailable, match=r"bookworm-backports release could not be read: .*404"):
            await release_dates([f"deb {archive.url} bookworm-backports main"])
        archive.failing = True
        with pytest.raises(Unavailable, match="503"):
            await release_dates([f"deb {archive.url} bookworm main"])
    with pytest.raises(Unavailable, match=r"could not be read from http://127\.0\.0\.1:9/"):
        await release_dates(["deb http://127.0.0.1:9/debian bookworm main"])


def test_a_pack_is_stale_when_any_suite_moved_on_or_it_recorded_none() -> None:
    old = datetime(2026, 1, 1, tzinfo=UTC)
    assert newer_suites({"a": old, "b": WHEN}, {"a": old, "b": WHEN}) == []
    assert newer_suites({"a": old, "b": old}, {"a": old, "b": WHEN}) == ["b"]
    assert newer_suites({"a": WHEN}, {"a": old}) == []  # an archive that went back is not newer
    assert newer_suites(None, {"a": old, "b": old}) == ["a", "b"]
    assert newer_suites({"a": old}, {"a": old, "b": old}) == ["b"]
