"""The vocabulary of access every layer speaks: who is calling (``Principal``) and the workspace role they hold
(``Role``). Identity makes principals, the RPC layer checks them, every part reads them; so they live in the kernel,
below all three."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from hangar.errors import InvalidArgs


class Role(IntEnum):
    """Workspace roles, lowest first: guest < member < admin < owner."""

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


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a user acting through one device credential."""

    user_id: str
    device_id: str
    display_name: str
    is_server_owner: bool
    authority: int = -1  # the authority counter this principal was checked against (``IdentityService``)

    @property
    def label(self) -> str:
        """How the principal is written in audit rows: never the credential."""
        return f"user:{self.user_id}"
