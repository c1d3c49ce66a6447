"""What a rig is: surfaces, engines, phases, close reasons, the ways a clipboard crosses, and the spec's limits
table per surface.

Everything here is plain data. The limits are requirements of the spec (Limits table, row by row); the
simulator has no column there, so it borrows the mobile column (its closest sibling: a touch device driven
through a bridge).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from hangar.errors import InvalidArgs

MB_PER_GB = 1024

# Which way clipboard content crosses between a person's computer and a rig: consent is per person and direction
# (``lanes.consent``), and a verb that crosses says which way (``actions``).
Direction = Literal["hostToRig", "rigToHost"]


class Surface(StrEnum):
    terminal = "terminal"
    browser = "browser"
    computer = "computer"
    mobile = "mobile"
    simulator = "simulator"


class Phase(StrEnum):
    provisioning = "provisioning"  # booting; the status detail carries the current step text
    ready = "ready"  # reachable and accepting actions
    parked = "parked"  # idle-parked: processes frozen, memory still resident
    closing = "closing"  # shutting down
    closed = "closed"  # gone; the row survives for the audit trail
    failed = "failed"  # died or never came up; distinguishable so a client can offer retry


LIVE_PHASES: frozenset[Phase] = frozenset({Phase.provisioning, Phase.ready, Phase.parked})
FINAL_PHASES: frozenset[Phase] = frozenset({Phase.closed, Phase.failed})


class CloseReason(StrEnum):
    requested = "requested"  # a person or agent asked
    idle_timeout = "idleTimeout"  # idle past twice the idle window, or evicted for memory
    ttl_expired = "ttlExpired"  # hard lifetime ran out
    conversation_ended = "conversationEnded"  # the owning conversation ended
    workspace_gone = "workspaceGone"  # workspace deleted or membership lost
    server_shutdown = "serverShutdown"  # the server is stopping
    backend_failure = "backendFailure"  # the machine died underneath the rig


# Reasons that count as reaping (the spec's RigReaped event: idle, TTL or memory eviction).
REAP_REASONS: frozenset[CloseReason] = frozenset({CloseReason.idle_timeout, CloseReason.ttl_expired})

BROWSER_ENGINES: tuple[str, ...] = ("engine-a", "engine-b", "engine-c")
# What a person reads for each engine (the wire keeps the engine value): the browser each one drives.
ENGINE_LABELS: dict[str, str] = {"engine-a": "Chromium", "engine-b": "Firefox", "engine-c": "WebKit"}
DEFAULT_ENGINE: dict[Surface, str] = {Surface.browser: "engine-a"}
ENGINES: dict[Surface, tuple[str, ...]] = {Surface.browser: BROWSER_ENGINES}


@dataclass(frozen=True)
class Display:
    width: int
    height: int

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


@dataclass(frozen=True)
class SurfaceLimits:
    memory_mb: int
    vcpus: int
    ttl_s: float  # hard lifetime; applies even while a lane pins the rig
    idle_window_s: float  # parked after one window idle, reaped after two
    boot_display: Display | None

    @property
    def reap_after_s(self) -> float:
        return 2 * self.idle_window_s


_HOUR = 3600.0
_MIN = 60.0

LIMITS: dict[Surface, SurfaceLimits] = {
    Surface.terminal: SurfaceLimits(512, 2, 8 * _HOUR, 45 * _MIN, None),
    Surface.browser: SurfaceLimits(2048, 2, 2 * _HOUR, 15 * _MIN, Display(1280, 800)),
    Surface.computer: SurfaceLimits(4096, 4, 2 * _HOUR, 15 * _MIN, Display(1280, 800)),
    Surface.mobile: SurfaceLimits(4096, 4, 2 * _HOUR, 15 * _MIN, Display(1080, 1920)),
    Surface.simulator: SurfaceLimits(4096, 4, 2 * _HOUR, 15 * _MIN, Display(1080, 1920)),
}

# Engines B and C run a heavier browser stack than engine A (the spec's 2560 MB cell).
_BROWSER_MEMORY_MB: dict[str, int] = {"engine-a": 2048, "engine-b": 2560, "engine-c": 2560}

DEFAULT_MEMORY_BUDGET_MB = 12 * MB_PER_GB  # resident MB for all rigs of this host, parked rigs included
MAX_FORWARDED_PORTS = 16
PORT_POLL_INTERVAL_S = 4.0
# The most listening ports of one rig taken in at a poll (the lowest numbers): a guest, or a rig host answering
# for one, can claim any number of them, and each is tracked, logged and written to an audit row.
MAX_LISTENING_PORTS = 1024
MAX_PORT = 65535


def listening_within(values: object) -> tuple[list[int], int]:
    """The distinct TCP port numbers (integers 1..65535) among ``values`` (what a backend or a rig host reported,
    not trusted), sorted, at most ``MAX_LISTENING_PORTS`` of them (the lowest); and how many valid ones were cut.
    Anything that is not a port number is dropped."""
    if not isinstance(values, list | tuple | set | frozenset):
        return [], 0
    ports = sorted({p for p in values if type(p) is int and 1 <= p <= MAX_PORT})
    return ports[:MAX_LISTENING_PORTS], max(0, len(ports) - MAX_LISTENING_PORTS)


def limits_for(surface: Surface, engine: str | None = None) -> SurfaceLimits:
    base = LIMITS[surface]
    if surface is Surface.browser and engine is not None:
        return SurfaceLimits(_BROWSER_MEMORY_MB[engine], base.vcpus, base.ttl_s, base.idle_window_s, base.boot_display)
    return base


def parse_surface(value: str) -> Surface:
    try:
        return Surface(value)
    except ValueError:
        names = ", ".join(s.value for s in Surface)
        raise InvalidArgs(f"surface must be one of {names}, not {value!r}", field="surface") from None


def resolve_engine(surface: Surface, engine: str | None) -> str | None:
    """The engine a rig of ``surface`` runs. An unknown name is refused, never defaulted; a surface without
    engines refuses any engine."""
    engines = ENGINES.get(surface)
    if engines is None:
        if engine is not None:
            raise InvalidArgs(f"the {surface.value} surface has no engines; leave engine out", field="engine")
        return None
    if engine is None:
        return DEFAULT_ENGINE[surface]
    if engine not in engines:
        raise InvalidArgs(
            f"engine must be one of {', '.join(engines)} for the {surface.value} surface, not {engine!r}",
            field="engine",
        )
    return engine


@dataclass(frozen=True)
class RigRecord:
    """One row of ``rig_sessions`` as the manager and ``rig_list`` see it."""

    id: str
    space_id: str
    surface: Surface
    engine: str | None
    backend: str
    phase: Phase
    status_detail: str
    close_reason: CloseReason | None
    controller: str | None  # user id of the person holding control, or None
    opened_by: str  # principal label
    memory_mb: int
    vcpus: int
    display: str | None
    resident_mb: int
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    server_url: str | None = None  # where the servers reach the process running it (``Settings.serving_origin``)

    @property
    def live(self) -> bool:
        return self.phase in LIVE_PHASES
