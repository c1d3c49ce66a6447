"""The release dates of the Debian archives a pack is built from: the ``Date:`` field of each suite's
``InRelease`` file (``Release`` where a mirror serves no ``InRelease``), which the archive moves whenever the suite
changes: a security update moves the ``-security`` suite's date, a point release the main suite's.

A pack records the dates of its suites when it is built (``builder``); a pack whose archive has moved on since
(a suite's date is later than the recorded one, or the pack recorded none) is stale and is built again in the
background (``refresh``). Only the date is read, and only from the head of the file: a mirror that answered with an
older date than the truth would at worst delay a refresh, which the same mirror could do by serving old packages.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from hangar.errors import Unavailable

if TYPE_CHECKING:
    import httpx

FETCH_TIMEOUT_S = 30.0
HEAD_BYTES = 64 * 1024  # the Date field is in the first lines; a Release file lists every index after it


def suite_of(source: str) -> tuple[str, str]:
    """The archive URI and suite of a one-line apt source (``deb URI SUITE main``)."""
    words = source.split()
    if len(words) < 3 or words[0] != "deb":
        raise ValueError(f"not a one-line apt source: {source!r}")
    return words[1].rstrip("/"), words[2]


def parse_release_date(text: str) -> datetime:
    """The ``Date:`` of a Release or InRelease file, in UTC; ``ValueError`` when it has none or a bad one. (The
    lists of index files after the fields are indented, so no line of theirs starts with a field name.)"""
    for line in text.splitlines():
        if line.startswith("Date:"):
            when = parsedate_to_datetime(line.removeprefix("Date:").strip())
            if when.tzinfo is None:
                raise ValueError(f"the Release date {line!r} has no time zone")
            return when.astimezone(UTC)
    raise ValueError("the Release file has no Date field")


async def _head(client: httpx.AsyncClient, url: str) -> tuple[int, str]:
    async with client.stream("GET", url) as reply:
        if reply.status_code != 200:
            return reply.status_code, ""
        data = b""
        async for chunk in reply.aiter_bytes():
            data += chunk
            if len(data) >= HEAD_BYTES:
                break
        return 200, data[:HEAD_BYTES].decode("utf-8", "replace")


async def release_date(uri: str, suite: str) -> datetime:
    """When the archive at ``uri`` last released ``suite``; ``Unavailable`` saying why when it cannot be read."""
    import httpx  # here, not at the top: the command line imports this module, and httpx brings its own CLI's rich

    async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=True, trust_env=False) as client:
        why = ""
        for name in ("InRelease", "Release"):
            url = f"{uri}/dists/{suite}/{name}"
            try:
                status, text = await _head(client, url)
            except httpx.HTTPError as exc:
                raise Unavailable(f"the archive's {suite} release could not be read from {url}: {exc}") from None
            if status != 200:
                why = f"{url} answered {status}"
                continue
            try:
                return parse_release_date(text)
            except (ValueError, TypeError) as exc:
                raise Unavailable(f"the archive's {suite} release at {url} has no usable date: {exc}") from None
        raise Unavailable(f"the archive's {suite} release could not be read: {why}")


async def release_dates(sources: list[str]) -> dict[str, datetime]:
    """Each source's suite and its release date, in the order of ``sources``."""
    dates: dict[str, datetime] = {}
    for source in sources:
        uri, suite = suite_of(source)
        dates[suite] = await release_date(uri, suite)
    return dates


def newer_suites(recorded: dict[str, datetime] | None, latest: dict[str, datetime]) -> list[str]:
    """The suites whose latest release is later than the one a pack was built from (all, when it recorded none)."""
    if not recorded:
        return sorted(latest)
    return [suite for suite, when in latest.items() if suite not in recorded or when > recorded[suite]]


def stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unstamp(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
