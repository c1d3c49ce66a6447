"""Short-lived credentials for confined code, asked of whichever part mints them (the forges part's credential
broker), so parts that run code (agents) need not know it.

``CredentialSource.environment`` yields the variables to add to a program's environment and the values among them
that must never be shown (redacted from what the program prints); leaving the block ends the credentials. This
base mints nothing: it refuses, saying no part here mints credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

from hangar.core.confine import Confinement, Scope
from hangar.errors import Refused


@dataclass(frozen=True)
class BrokeredEnv:
    env: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


class CredentialSource:
    """Provided by a part (``app.provide(x, as_type=CredentialSource)``)."""

    @contextlib.asynccontextmanager
    async def environment(
        self, workspace_id: str, repo_refs: Sequence[str], confinement: Confinement, scope: Scope
    ) -> AsyncIterator[BrokeredEnv]:
        """Forge credentials for the workspace repos ``repo_refs`` for a program in ``scope``; ``HangarError``
        (``Refused``...) naming why when none can be had."""
        raise Refused("no forge credentials can be minted on this server (it runs no forges part)")
        yield BrokeredEnv()  # pragma: no cover - makes this a generator
