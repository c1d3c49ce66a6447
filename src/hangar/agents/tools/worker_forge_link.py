"""Forge tokens for the programs a ``hangar worker`` runs (a command agent naming ``forgeRepos``, a shell step
naming ``repoIds``), asked of the worker's server for the claim the program runs under (``hangar.agents.worker_forge``
is the server's side).

The worker names the claim (its try's key, and the agent run for a command agent), never the repositories: the
server takes those from its own records. The program then gets what a server gives it (``forge_env``: ``GH_TOKEN``,
``GITHUB_TOKEN``, ``GH_HOST`` and the git credential helper), only if its enclosure on this host reaches the
forge's host (checked on the answer, since only the server knows the host: a token for a host not reached is ended
at once and never handed over), with the token ``[redacted]`` in what the program prints. When the step or run
ends, however it ends, the worker asks the server to end the token. Refusals fail the step or turn naming the
server's reason; a worker started without ``--server`` has none to ask, and says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from hangar.agents.tools.worker_link import WorkerLink
from hangar.agents.worker_forge import FORGE_REVOKE_PATH, FORGE_TOKENS_PATH
from hangar.core.brokering import BrokeredEnv, CredentialSource, HeldToken, forge_env, not_reached
from hangar.core.confine import Confinement, Scope
from hangar.errors import HangarError, Refused, Unavailable
from hangar.pipelines import RepoCredentials, ShellEnvironment

log = logging.getLogger(__name__)

NO_SERVER_FORGE = "this worker was started without --server, so it has no server to mint forge tokens"


class WorkerForgeTokens(CredentialSource):
    """The forge token of one program on this worker: the claim ``try_key`` (and, for a command agent, its run
    ``run_id``); ``link`` None (no ``--server``) refuses."""

    def __init__(self, link: WorkerLink | None, try_key: str, run_id: str | None = None) -> None:
        self._link = link
        self._try_key = try_key
        self._run_id = run_id

    @contextlib.asynccontextmanager
    async def environment(
        self, workspace_id: str, repo_refs: Sequence[str], confinement: Confinement, scope: Scope
    ) -> AsyncIterator[BrokeredEnv]:
        link = self._link
        if link is None:
            raise Unavailable(NO_SERVER_FORGE)
        ask = {"workspaceId": workspace_id, "tryKey": self._try_key}
        if self._run_id is not None:
            ask["runId"] = self._run_id
        answer = await link.post(FORGE_TOKENS_PATH, ask)
        token, host = answer.get("token"), answer.get("host")
        if not isinstance(token, str) or not token or not isinstance(host, str) or not host:
            raise Unavailable(f"the server {link.server_url} answered a forge token without a token and a host")
        try:
            if not await confinement.reaches(scope, host):
                raise not_reached(host)
            yield BrokeredEnv(forge_env(token, host), secrets=(token,))
        finally:
            try:
                await link.post(FORGE_REVOKE_PATH, {"workspaceId": workspace_id, "token": token})
            except HangarError as err:  # it expires within the hour anyway
                log.warning("a forge token of %s was not ended: %s", self._try_key, err.message)

    async def mint(self, workspace_id: str, repo_refs: Sequence[str]) -> HeldToken:
        raise Refused("a worker mints no forge token: its server does")

    async def revoke(self, workspace_id: str, token: str) -> None:
        raise Refused("a worker ends no forge token itself: its server does")


def worker_shell_forge(link: WorkerLink | None) -> ShellEnvironment:
    """A shell step naming ``repoIds`` on this worker: its forge token from the server, for the step's try."""
    return RepoCredentials(lambda step: WorkerForgeTokens(link, step.try_key))
