"""The forges part: its ops, its tables (repo links given by hand, pull requests, webhook deliveries), the webhook
route, the ``trustedForgeHosts`` server setting, the credential broker shell steps get their forge token from, the
pull request poll, and the pull request review's bodies (``prReview.finalize``, ``forge.prComment``)."""

from __future__ import annotations

from hangar.core.brokering import CredentialSource
from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.forges.broker import ForgeCredentials, forge_shell_environment
from hangar.forges.ops import FORGE_OPS
from hangar.forges.poll import Poller
from hangar.forges.pull_ops import PULL_OPS
from hangar.forges.pulls import PullRequestChanged, PullRequests
from hangar.forges.reach import TRUSTED_FORGE_HOSTS_SPEC
from hangar.forges.review_bodies import BODIES
from hangar.forges.service import ForgeService
from hangar.forges.tables import MIGRATIONS
from hangar.forges.webhooks import ROUTES
from hangar.pipelines import ShellEnvironment


async def _start(app: AppContext) -> None:
    app.provide(ForgeService(app))
    app.provide(forge_shell_environment(app), as_type=ShellEnvironment)
    app.provide(ForgeCredentials(app), as_type=CredentialSource)
    app.provide(PullRequests(app))
    if app.bus.following:  # a server polls; a command (``hangar pipeline run``...) does a server's work of none
        app.provide(Poller(app)).start()


async def _stop(app: AppContext) -> None:
    poller = app.maybe_service(Poller)
    if poller is not None:
        await poller.aclose()


FORGES_PART = Part(
    name="forges",
    ops=[*FORGE_OPS, *PULL_OPS],
    bodies=BODIES,
    routes=ROUTES,
    events=[PullRequestChanged],
    migrations=[MIGRATIONS],
    server_settings=[TRUSTED_FORGE_HOSTS_SPEC],
    start=_start,
    stop=_stop,
)
