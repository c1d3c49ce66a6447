"""Worker credentials: what a ``hangar worker`` proves it may take pipeline steps with.

An admin mints one (``hangar admin worker-credential create``); its text is ``hwk_<id>_<secret>``, kept as a hash
(``hangar.core.hostcreds``, shared with the rig hosts' credentials). It is scoped to working: the RPC socket, the
MCP endpoint and every HTTP route authenticate device credentials only, so a worker credential is refused there
(``unauthenticated``) like any unknown text. It is revocable (``… revoke ID``): every claim a worker makes and
every heartbeat of a claim it holds checks in the same statement that its credential is not revoked, so a revoked
worker takes nothing more and its running claims are fenced at their next heartbeat.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import hostcreds
from hangar.core.hostcreds import NAME_MAX, CredentialKind, HostCredential
from hangar.pipelines.queue_tables import worker_credentials

__all__ = ["KIND", "NAME_MAX", "PREFIX", "WorkerCredential", "listed", "mint", "revoke", "verify"]

PREFIX = "hwk_"
KIND = CredentialKind("worker credential", PREFIX, "hangar admin worker-credential create", worker_credentials)
WorkerCredential = HostCredential


async def mint(engine: AsyncEngine, name: str, now: datetime) -> tuple[WorkerCredential, str]:
    """A new credential named ``name``; returns it and its text (shown once)."""
    return await hostcreds.mint(KIND, engine, name, now)


async def listed(engine: AsyncEngine) -> list[WorkerCredential]:
    return await hostcreds.listed(KIND, engine)


async def revoke(engine: AsyncEngine, cred_id: str, now: datetime) -> WorkerCredential:
    """Revoke ``cred_id`` (again: a no-op keeping the first time)."""
    return await hostcreds.revoke(KIND, engine, cred_id, now)


async def verify(engine: AsyncEngine, text: str, *, revoked_too: bool = False) -> WorkerCredential:
    """The credential ``text`` is, if it is a live one (or, ``revoked_too``, a revoked one); else
    ``Unauthenticated`` saying why (never echoing it)."""
    return await hostcreds.verify(KIND, engine, text, revoked_too=revoked_too)
