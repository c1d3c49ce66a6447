"""The workspace settings store: keys declared by the parts, written by admins, validated on write.

A part declares each key it owns with a ``SettingSpec`` (in ``Part.settings``); the store refuses unknown keys
and runs the key's validator before saving. Readers that act on a value (a rig booting an image) validate it
again at use, because a stored value may predate today's rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hangar.core import tables
from hangar.core.clock import Clock
from hangar.core.db import Databases
from hangar.errors import InvalidArgs

_MISSING = object()


@dataclass(frozen=True)
class SettingSpec:
    key: str
    summary: str
    validate: Callable[[Any], Any]  # returns the value to store, or raises InvalidArgs naming the key


def strict_bool(key: str) -> Callable[[Any], bool]:
    """A validator for a yes/no setting: ``true`` or ``false``, nothing that merely looks like one."""

    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise InvalidArgs(f"{key} must be true or false", field=key)
        return value

    return check


def strict_int(key: str, low: int, high: int) -> Callable[[Any], int]:
    """A validator for a whole-number setting between ``low`` and ``high``."""

    def check(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise InvalidArgs(f"{key} must be a whole number from {low} to {high}", field=key)
        return value

    return check


class WorkspaceSettings:
    def __init__(self, dbs: Databases, clock: Clock, specs: Iterable[SettingSpec]) -> None:
        self._dbs = dbs
        self._clock = clock
        self._specs: dict[str, SettingSpec] = {}
        for spec in specs:
            if spec.key in self._specs:
                raise ValueError(f"setting {spec.key!r} is declared twice")
            self._specs[spec.key] = spec

    @property
    def specs(self) -> dict[str, SettingSpec]:
        return dict(sorted(self._specs.items()))

    def spec(self, key: str) -> SettingSpec:
        spec = self._specs.get(key)
        if spec is None:
            known = ", ".join(sorted(self._specs)) or "none"
            raise InvalidArgs(f"{key!r} is not a workspace setting (known: {known})", field="key")
        return spec

    async def get(self, workspace_id: str, key: str, default: Any = None) -> Any:
        t = tables.workspace_settings
        engine = await self._dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t.c.value).where(t.c.key == key))).first()
        return default if row is None else row[0]

    async def all(self, workspace_id: str) -> dict[str, Any]:
        t = tables.workspace_settings
        engine = await self._dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(t.c.key, t.c.value))).all()
        return {r[0]: r[1] for r in rows}

    async def set(self, workspace_id: str, key: str, value: Any, *, by: str) -> Any:
        """Validate and store; ``None`` removes the key (back to the default)."""
        spec = self.spec(key)
        if value is None:
            await self._delete(workspace_id, key)
            return None
        cleaned = spec.validate(value)
        await self.write_unchecked(workspace_id, key, cleaned, by=by)
        return cleaned

    async def write_unchecked(self, workspace_id: str, key: str, value: Any, *, by: str) -> None:
        """Store without validation: for migrations of older values (and tests of what readers do with them)."""
        t = tables.workspace_settings
        engine = await self._dbs.workspace(workspace_id)
        values = {"value": value, "updated_at": self._clock.now(), "updated_by": by}
        async with engine.begin() as conn:
            done = await conn.execute(sa.update(t).where(t.c.key == key).values(**values))
            if done.rowcount == 0:
                await conn.execute(sa.insert(t).values(key=key, **values))

    async def _delete(self, workspace_id: str, key: str) -> None:
        t = tables.workspace_settings
        engine = await self._dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(t).where(t.c.key == key))
