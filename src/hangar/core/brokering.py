"""Short-lived credentials for confined code, asked of whichever part mints them (the forges part's credential
broker), so parts that run code (agents) need not know it.

``CredentialSource.environment`` yields the variables to add to a program's environment and the values among them
that must never be shown (redacted from what the program prints); leaving the block ends the credentials.
``mint`` and ``revoke`` are the same credential in two calls, for a program a ``hangar worker`` runs: a server
mints it for the worker's claim and ends it when the worker says the program is over. This base mints nothing: it
refuses, saying no part here mints credentials.

``forge_env`` is what a program is given for a forge token, wherever it was minted: ``GH_TOKEN`` and
``GITHUB_TOKEN`` (the gh CLI's and most tools' names), ``GH_HOST`` and a git credential helper, set through git's
``GIT_CONFIG_*`` variables, that answers with the token for the forge's host only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hangar.core.confine import Confinement, Scope
from hangar.errors import Refused

NONE_HERE = "no forge credentials can be minted on this server (it runs no forges part)"

# A git credential helper in git's config language: answers ``get`` for the token's host only (git names the
# host on stdin), with the token from the environment, so the token is never written to a file in the enclosure.
CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; h=; while IFS= read -r l && [ -n "$l" ]; do '
    'case "$l" in host=*) h="${l#host=}";; esac; done; '
    '[ "$h" = "$HANGAR_FORGE_HOST" ] && printf "username=x-access-token\\npassword=%s\\n" "$GH_TOKEN"; }; f'
)


@dataclass(frozen=True)
class BrokeredEnv:
    env: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeldToken:
    """A forge token minted for some repositories of one host, until it is revoked or expires."""

    token: str = field(repr=False)
    host: str
    repositories: tuple[str, ...]
    expires_at: datetime


def forge_env(token: str, host: str) -> dict[str, str]:
    return {
        "GH_TOKEN": token,
        "GITHUB_TOKEN": token,
        "GH_HOST": host,
        "HANGAR_FORGE_HOST": host,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "credential.helper",
        "GIT_CONFIG_VALUE_0": CREDENTIAL_HELPER,
    }


def not_reached(host: str) -> Refused:
    """The refusal of a token for a host the program's enclosure cannot reach."""
    return Refused(
        f"the enclosure's egress allowlist does not reach {host}: no token is minted for a host it cannot reach",
        detail_code="forgeHostNotReachable",
    )


class CredentialSource:
    """Provided by a part (``app.provide(x, as_type=CredentialSource)``)."""

    @contextlib.asynccontextmanager
    async def environment(
        self, workspace_id: str, repo_refs: Sequence[str], confinement: Confinement, scope: Scope
    ) -> AsyncIterator[BrokeredEnv]:
        """Forge credentials for the workspace repos ``repo_refs`` for a program in ``scope``; ``HangarError``
        (``Refused``...) naming why when none can be had."""
        raise Refused(NONE_HERE)
        yield BrokeredEnv()  # pragma: no cover - makes this a generator

    async def mint(self, workspace_id: str, repo_refs: Sequence[str]) -> HeldToken:
        """A token for the workspace repos ``repo_refs``, to be ended by ``revoke`` (a worker's program, whose
        enclosure the caller checked reaches the host); ``HangarError`` naming why when none can be had."""
        raise Refused(NONE_HERE)

    async def revoke(self, workspace_id: str, token: str) -> None:
        """End a token ``mint`` gave, before its time."""
        raise Refused(NONE_HERE)
