"""Keeping packs current: a ready pack whose archive has released since it was built is built again.

A check reads the release date of every suite the pack was built from (``archive``: its marker names the sources
and the dates they had) and compares. A pack whose archive moved on is stale: a new version is built in the
background under the pack's build lock (``builder.rebuild_pack``) while the old one keeps serving, and put in
place when complete (``versions``). The outcome of the last check and rebuild is kept beside the pack as
``<name>.refresh.json`` (written whole, replaced atomically), so every process sharing the packs shows it:
``current`` (checked, up to date), ``refreshing`` (a new version is being built), ``refreshed`` (the new version
is in place), ``failed`` (the check or the rebuild failed; the old pack stays and ``error`` says why).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hangar.errors import HangarError
from hangar.rigs.images.archive import newer_suites, release_dates, stamp, unstamp
from hangar.rigs.images.builder import PackRecipe, read_marker

RefreshState = Literal["current", "refreshing", "refreshed", "failed"]
MAX_ERROR = 500


@dataclass(frozen=True)
class Record:
    """The last check and rebuild of one pack."""

    state: RefreshState
    checked_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    newer: tuple[str, ...] = ()  # the suites released since the pack was built


@dataclass(frozen=True)
class Built:
    """What the current version of a pack recorded when it was built."""

    built_at: datetime | None
    archive_dates: dict[str, datetime] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @property
    def archive_date(self) -> datetime | None:
        """The newest release the pack was built from (its security suite's, as a rule)."""
        return max(self.archive_dates.values(), default=None)


def built(packs_root: Path, recipe: PackRecipe) -> Built | None:
    marker = read_marker(packs_root, recipe)
    if marker is None:
        return None
    dates_raw = marker.get("archiveDates")
    dates = {}
    if isinstance(dates_raw, dict):
        for suite, text in dates_raw.items():
            when = unstamp(text)
            if isinstance(suite, str) and when is not None:
                dates[suite] = when
    sources = marker.get("sources")
    return Built(
        built_at=unstamp(marker.get("builtAt")),
        archive_dates=dates,
        sources=tuple(s for s in sources if isinstance(s, str)) if isinstance(sources, list) else (),
    )


def _record_path(packs_root: Path, recipe: PackRecipe) -> Path:
    return packs_root / f"{recipe.name}.refresh.json"


def read_record(packs_root: Path, recipe: PackRecipe) -> Record | None:
    try:
        raw = json.loads(_record_path(packs_root, recipe).read_text())
        state = raw["state"]
        if state not in ("current", "refreshing", "refreshed", "failed"):
            return None
        return Record(
            state=state,
            checked_at=unstamp(raw.get("checkedAt")),
            finished_at=unstamp(raw.get("finishedAt")),
            error=raw.get("error") if isinstance(raw.get("error"), str) else None,
            newer=tuple(s for s in raw.get("newer", ()) if isinstance(s, str)),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_record(packs_root: Path, recipe: PackRecipe, record: Record) -> None:
    """Replace the record whole, so a reader in any process never sees half of one."""
    data = {
        "state": record.state,
        "checkedAt": stamp(record.checked_at) if record.checked_at else None,
        "finishedAt": stamp(record.finished_at) if record.finished_at else None,
        "error": record.error[:MAX_ERROR] if record.error else None,
        "newer": list(record.newer),
    }
    tmp = packs_root / f".{recipe.name}.refresh-{os.getpid()}"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, _record_path(packs_root, recipe))


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class Stale:
    """A pack whose archive released since it was built: the latest dates, and which suites moved on."""

    latest: dict[str, datetime]
    newer: tuple[str, ...]


async def check(packs_root: Path, recipe: PackRecipe) -> Stale | None:
    """Compare a ready pack with its archive: what moved on when it is stale, None when it is current or could
    not be checked (the record says which, and why)."""
    found = built(packs_root, recipe)
    if found is None:
        return None  # not built: the first rig to need it builds it
    checked = now()
    try:
        if not found.sources:
            raise ValueError("the pack recorded no sources")
        latest = await release_dates(list(found.sources))
    except (HangarError, ValueError) as exc:
        why = exc.message if isinstance(exc, HangarError) else str(exc)
        write_record(packs_root, recipe, Record("failed", checked, checked, f"the archive could not be checked: {why}"))
        return None
    newer = newer_suites(found.archive_dates, latest)
    if not newer:
        previous = read_record(packs_root, recipe)
        # A rebuild's outcome stays shown until the archive moves on again; the check time is what changes.
        state: RefreshState = previous.state if previous and previous.state == "refreshed" else "current"
        finished = previous.finished_at if previous and state == "refreshed" else None
        write_record(packs_root, recipe, Record(state, checked, finished))
        return None
    return Stale(latest, tuple(newer))


def still_stale(packs_root: Path, recipe: PackRecipe, latest: dict[str, datetime]) -> bool:
    """Whether the current version still predates ``latest`` (another process may have rebuilt it meanwhile)."""
    found = built(packs_root, recipe)
    return found is not None and bool(newer_suites(found.archive_dates, latest))
