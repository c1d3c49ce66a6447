"""Polling the forge where no webhook reaches: every ``pollSeconds`` (per connection, ``forge.setPolling``; off
unless set) each linked repository's open pull requests are listed, and every one new, reopened or whose head
moved is synced (``PullRequests.sync``, which fires the ``pullRequest`` triggers), as is every one known open that
is no longer listed (closed, merged, or vanished).

A forge that rate-limits is asked again when its reset headers say (``x-ratelimit-reset``, ``retry-after``), not
before; one that answers 5xx or cannot be reached is asked again after a backoff that doubles from the interval
up to ``MAX_BACKOFF_S``. The interval is read from the workspace's forge folder at every pass (another process
may change it); when to ask next is this process's own. Two processes polling one workspace sync the same pull
requests at worst twice, and a head is announced once (the sync's serialized transaction).
"""

from __future__ import annotations

import asyncio
import logging

from hangar.core.clock import nap as clock_nap
from hangar.core.context import AppContext
from hangar.errors import HangarError, InvalidArgs, Unavailable
from hangar.forges import github_pulls
from hangar.forges.github_pulls import RateLimited
from hangar.forges.pulls import PullRequests
from hangar.forges.service import ForgeService
from hangar.identity import usable_workspace_ids
from hangar.workspace import RepoService

log = logging.getLogger(__name__)

MIN_POLL_S, MAX_POLL_S = 60, 86_400
MAX_BACKOFF_S = 3_600
MAX_NAP_S = 60.0


def check_poll_seconds(seconds: int) -> int:
    if not MIN_POLL_S <= seconds <= MAX_POLL_S:
        raise InvalidArgs(f"seconds must be from {MIN_POLL_S} to {MAX_POLL_S}", field="seconds")
    return seconds


def backoff_s(interval: int, failures: int) -> float:
    """How long after the ``failures``-th failure in a row to ask again: the interval doubled each time, capped."""
    return float(min(MAX_BACKOFF_S, max(interval, interval * 2 ** min(failures, 16))))


class Poller:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        self._next: dict[str, float] = {}  # workspace -> when to poll next (epoch seconds, the app's clock)
        self._failures: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.passes = 0  # passes finished, for whoever waits on one (tests)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="forges-poll")

    def poke(self, workspace_id: str | None = None) -> None:
        """Look again now (polling was set or changed); a named workspace is polled at once."""
        if workspace_id is not None:
            self._next.pop(workspace_id, None)
            self._failures.pop(workspace_id, None)
        self._wake.set()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def tick(self) -> float:
        """One pass over the workspaces that poll; answers the seconds until one is due next."""
        now = self._app.clock.now().timestamp()
        soonest = MAX_NAP_S
        forges = self._app.service(ForgeService)
        for ws in await usable_workspace_ids(self._app):
            seconds = forges.store.poll_seconds(ws)
            if seconds is None or forges.store.read(ws) is None:
                self._next.pop(ws, None)
                continue
            due = self._next.get(ws, now)
            if due <= now:
                due = self._next[ws] = await self._poll(ws, seconds, now)
            soonest = min(soonest, due - now)
        return max(1.0, soonest)

    async def _poll(self, workspace_id: str, seconds: int, now: float) -> float:
        """Poll one workspace; answers when to poll it next."""
        try:
            await self.poll_workspace(workspace_id)
        except RateLimited as exc:
            log.warning("forge poll of workspace %s: %s; asking again at its reset", workspace_id, exc.message)
            return max(exc.retry_at, now + 1)
        except Unavailable as exc:
            failures = self._failures[workspace_id] = self._failures.get(workspace_id, 0) + 1
            wait = backoff_s(seconds, failures)
            log.warning("forge poll of workspace %s: %s; again in %d s", workspace_id, exc.message, wait)
            return now + wait
        except HangarError as exc:
            log.warning("forge poll of workspace %s: %s", workspace_id, exc.message)
        self._failures.pop(workspace_id, None)
        return now + seconds

    async def poll_workspace(self, workspace_id: str) -> list[tuple[str, int]]:
        """Sync what changed on every linked repository; answers the (repo id, number) synced."""
        forges = self._app.service(ForgeService)
        pulls = self._app.service(PullRequests)
        ws = await forges.workspace(workspace_id)
        connection = forges.required(ws)
        synced: list[tuple[str, int]] = []
        for link in await forges.links(ws, connection):
            listed = await github_pulls.open_pull_requests(connection, link.full_name, await forges.route(connection))
            heads = {p.number: p.head_sha for p in listed}
            known = {row.number: row for row in await pulls.all(workspace_id, link.repo.id)}
            stale = [
                n for n, sha in heads.items() if n not in known or (known[n].state, known[n].head_sha) != ("open", sha)
            ]
            stale += [n for n, row in known.items() if row.state == "open" and n not in heads]
            repo = await self._app.service(RepoService).get(workspace_id, link.repo.id)
            for number in sorted(stale):
                await pulls.sync(workspace_id, repo, number)
                synced.append((repo.id, number))
        return synced

    async def _loop(self) -> None:
        clock = self._app.clock
        while True:
            self._wake.clear()
            try:
                nap = await self.tick()
            except Exception:
                log.exception("forge poll pass failed")
                nap = MAX_NAP_S
            self.passes += 1
            await clock_nap(clock, nap, self._wake)
