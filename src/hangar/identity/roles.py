"""Workspace roles, lowest first: guest < member < admin < owner."""

from __future__ import annotations

from enum import IntEnum

from hangar.errors import InvalidArgs


class Role(IntEnum):
    guest = 1
    member = 2
    admin = 3
    owner = 4

    @classmethod
    def parse(cls, value: str, *, field: str = "role") -> Role:
        try:
            return cls[value]
        except KeyError:
            names = ", ".join(r.name for r in cls)
            raise InvalidArgs(f"{field} must be one of {names}, not {value!r}", field=field) from None
