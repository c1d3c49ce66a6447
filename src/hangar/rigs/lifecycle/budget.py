"""The one memory budget of this server's enclosures: the rigs people and agents open, and the enclosures user
code runs in (a pipeline run's shell steps, a space's command agents and setup scripts; ``confinement``).

What counts: a rig by its resident memory (the spec: a parked rig still holds its RAM), and by its ceiling while
it boots (nothing is measured yet, and it is about to hold memory); an enclosure for user code by its ceiling for
as long as it is up, because the job in it may grow to the ceiling at any moment and a running job is neither
parked nor evicted. A new rig or enclosure is admitted when what is held plus its ceiling fits the budget, after
evicting what is idle (``policy.evict``: warm enclosures running no job first, since one costs a boot to replace,
then rigs nobody uses, least recently used first); otherwise it is refused with ``Refused`` naming the budget and
what holds it (``rigs.status`` lists the same). Admissions are serialised, so two at once cannot both take the
last room.

The budget is the server setting ``rigs.memoryBudgetMb``, read afresh at every admission and sweep (another
process may change it); without the setting, the value this process was configured with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from hangar.core.context import AppContext
from hangar.core.settings import SettingSpec, strict_bool, strict_int
from hangar.errors import HangarError, Refused
from hangar.identity import IdentityService
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.lifecycle.closing import RigCloser
from hangar.rigs.live.rigs import LiveRigs
from hangar.rigs.model import LIMITS, LIVE_PHASES, CloseReason, Phase, Surface
from hangar.rigs.policy import Eviction, RigState, evict

log = logging.getLogger(__name__)

MEMORY_BUDGET_SETTING = "rigs.memoryBudgetMb"
MEMORY_BUDGET_SPEC = SettingSpec(
    MEMORY_BUDGET_SETTING,
    "The memory budget of all rigs and enclosures for user code on this host, in MB.",
    strict_int(MEMORY_BUDGET_SETTING, 512, 1024 * 1024),
)
HOSTS_FIRST_SETTING = "rigs.hostsFirst"
HOSTS_FIRST_SPEC = SettingSpec(
    HOSTS_FIRST_SETTING,
    "Place new terminal rigs on rig hosts before this server's own backend (default false: here first).",
    strict_bool(HOSTS_FIRST_SETTING),
)
ENCLOSURE_PREFIX = "enclosure:"  # how an enclosure is named among rigs in an eviction plan
# Enclosures are evicted before any rig: their "last active" times sit this far before every rig's.
_ENCLOSURES_FIRST = 1e12


@dataclass(eq=False)
class HeldEnclosure:
    """An enclosure for user code while it is up: ``busy`` says whether a job runs in it now, and ``last_used``
    (the confinement's clock) when the last one ended; ``release_if_idle`` closes it unless a job runs."""

    key: str
    workspace_id: str
    memory_mb: int
    busy: Callable[[], bool]
    last_used: Callable[[], float]
    release_if_idle: Callable[[str], Awaitable[bool]]
    handle: RigHandle | None = None
    resident_mb: int = 0

    def state(self) -> RigState:
        return RigState(
            ENCLOSURE_PREFIX + self.key,
            Phase.ready,
            LIMITS[Surface.terminal],
            0.0,
            self.last_used() - _ENCLOSURES_FIRST,
            self.memory_mb,
            busy=1 if self.busy() else 0,
        )


class MemoryBudget:
    def __init__(self, app: AppContext, rigs: LiveRigs, closer: RigCloser, *, budget_mb: int) -> None:
        self.app = app
        self.rigs = rigs
        self.closer = closer
        self.configured_mb = budget_mb  # without the server setting
        self.budget_mb = budget_mb  # as last read
        self.enclosures: dict[str, HeldEnclosure] = {}
        # One admission (or sweep eviction) at a time: each sees what the previous one admitted.
        self.lock = asyncio.Lock()

    async def current_mb(self) -> int:
        """The budget now: the server setting when set, else the configured value."""
        setting = await self.app.service(IdentityService).get_setting(MEMORY_BUDGET_SETTING)
        self.budget_mb = setting if isinstance(setting, int) and setting > 0 else self.configured_mb
        return self.budget_mb

    def states(self) -> list[RigState]:
        """What holds this host's memory: its own rigs (not those on rig hosts) and enclosures."""
        here = {live.id for live in self.rigs.all() if live.host_id is None}
        return [*(s for s in self.rigs.states() if s.rig_id in here), *(e.state() for e in self.enclosures.values())]

    def held_mb(self) -> int:
        """What counts against the budget now (live rigs and enclosures)."""
        return sum(s.resident_mb for s in self.states() if s.phase in LIVE_PHASES)

    async def fit(self, need_mb: int, what: str) -> None:
        """With ``lock`` held: make room for ``need_mb`` more by evicting what is idle, or refuse naming the
        budget and what holds it."""
        budget = await self.current_mb()
        plan = evict(self.states(), budget, need_mb)
        if not plan.fits:
            raise Refused(
                f"the memory budget of rigs and enclosures (rigs.memoryBudgetMb, {budget} MB) cannot hold another "
                f"{need_mb} MB {what}: {plan.used_mb} MB are held by {self.holders()}, in use; wait for one to end "
                "or raise the budget (rigs.setMemoryBudget)"
            )
        await self.carry_out(plan)

    async def fits_now(self, need_mb: int) -> bool:
        """Whether ``need_mb`` more fits the budget without evicting anything."""
        plan = evict(self.states(), await self.current_mb(), need_mb)
        return plan.fits and not plan.victims

    async def carry_out(self, plan: Eviction) -> None:
        for victim in plan.victims:
            if victim.startswith(ENCLOSURE_PREFIX):
                key = victim.removeprefix(ENCLOSURE_PREFIX)
                held = self.enclosures.get(key)
                if held is not None and await held.release_if_idle(key):
                    log.info("rigs: closed the idle enclosure of %s to make room under the memory budget", key)
                continue
            live = self.rigs.get(victim)
            if live is not None:
                await self.closer.close_live(live, CloseReason.idle_timeout, cause="memory")

    def holders(self) -> str:
        """What holds memory, in words: ``2 rigs and 3 enclosures (pipeline run a, space b/c, ...)``."""
        rigs = sum(1 for live in self.rigs.all() if live.phase in LIVE_PHASES and live.host_id is None)
        names = ", ".join(describe(key) for key in sorted(self.enclosures))
        return (
            f"{rigs} rig{'s' * (rigs != 1)} and {len(self.enclosures)} "
            f"enclosure{'s' * (len(self.enclosures) != 1)}" + (f" ({names})" if names else "")
        )

    async def admit(self, held: HeldEnclosure) -> None:
        """Count an enclosure about to start (``Refused`` when it does not fit); ``forget`` it when it ends."""
        async with self.lock:
            await self.fit(held.memory_mb, "enclosure")
            self.enclosures[held.key] = held

    def forget(self, key: str) -> None:
        self.enclosures.pop(key, None)

    async def measure(self) -> None:
        """Refresh the enclosures' resident memory (shown by ``rigs.status``; the budget counts their ceiling)."""
        for held in list(self.enclosures.values()):
            if held.handle is not None and held.handle.alive():
                try:
                    held.resident_mb = await held.handle.resident_mb()
                except HangarError:
                    continue


_KINDS = {"pipelineRun": "pipeline run", "space": "space", "agentRun": "agent run", "spaceSetup": "setup script"}


def describe(key: str) -> str:
    """An enclosure's scope key in words (``pipelineRun:<id>`` -> ``pipeline run <id>``)."""
    kind, _, rest = key.partition(":")
    return f"{_KINDS[kind]} {rest.replace(':', '/')}" if kind in _KINDS else key
