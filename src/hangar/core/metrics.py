"""Every metric the server exposes at ``GET /metrics``, declared in one place, and what each part calls when the
thing it counts happens.

One ``Metrics`` per server instance, each with its own ``prometheus_client`` registry (tests run many servers in
one process, and a process-wide registry would mix their counts). A part never touches a ``prometheus_client``
object: it calls the method named for what happened (``rpc_call``, ``pipeline_step``, ``rig_booted``...), so a
server with metrics turned off (``HANGAR_METRICS=false``) pays one attribute test per call and declares nothing.

Label values are bounded sets, never what a caller typed, an id or a secret: op names come from the op registry,
doors and outcomes from the fixed sets below (anything else is counted as ``other``), states and surfaces from the
parts' own enums. The live rigs are read at scrape time from the source the rigs part registers (``watch_rigs``),
so that gauge cannot drift from what is live. Op calls, the one family every request touches, are plain counts
turned into families at scrape time (``_OpCalls``).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from hangar.errors import ERROR_CODES

# The ways an op call comes in (``OpContext.door``): the RPC socket, the MCP endpoint, an agent's tool call (a
# pipeline's agent steps included), the chat bridge acting for a person.
DOORS = frozenset({"socket", "mcp", "agent", "chat"})
OUTCOMES = frozenset({"ok", *ERROR_CODES})
OTHER = "other"
UNKNOWN_OP = "unknown"  # the op label of a frame naming no registered op (the name itself is the caller's)
SSO_PROTOCOLS = frozenset({"saml", "oidc"})
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
EXPOSITION_TYPE = CONTENT_TYPE_LATEST

# Op latencies run from a tenth of a millisecond (server.info) to minutes (an agent's turn, a pack build).
_bisect = bisect.bisect_left  # looked up once: ``add`` runs on every op call
OP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
_FIRST_BUCKET = OP_BUCKETS[0]
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SLOW_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

RigCounts = Callable[[], Mapping[tuple[str, str], int]]


def bounded(value: str, allowed: Iterable[str]) -> str:
    """``value`` when it is one of ``allowed``, else ``other``: a label never takes a value from outside its set."""
    return value if value in allowed else OTHER


class _RigsCollector(Collector):
    """``hangar_rigs{surface,state}``: the live rigs, counted when scraped from the source the rigs part gave."""

    def __init__(self) -> None:
        self.sources: list[RigCounts] = []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("hangar_rigs", "Live rigs by surface and state.", labels=["surface", "state"])
        totals: dict[tuple[str, str], int] = {}
        for source in self.sources:
            for key, n in source().items():
                totals[key] = totals.get(key, 0) + n
        for (surface, state), n in sorted(totals.items()):
            family.add_metric([surface, state], n)
        yield family


class _OpCalls(Collector):
    """``hangar_rpc_calls_total`` and ``hangar_rpc_call_seconds``, kept as plain counts and turned into families at
    scrape time. Every op call passes here, so the path is a dict lookup and a few additions, with no lock: calls
    and scrapes both run on the server's event loop (``prometheus_client``'s own metrics take a lock per update,
    which the bench measured at several per cent of a trivial op's time)."""

    def __init__(self) -> None:
        # (op, door, outcome) as given -> its count, and its (op, door)'s buckets: counts per bucket, then the
        # +Inf bucket, the sum and the count. Label values are bounded once, when a combination is first seen.
        self._calls: dict[tuple[str, str, str], list[int]] = {}
        self._labels: dict[tuple[str, str, str], tuple[str, str, str]] = {}
        self._seconds: dict[tuple[str, str], list[float]] = {}
        # What ``add`` updates for a combination, found with one lookup: its count and its (op, door)'s buckets.
        self._entries: dict[tuple[str, str, str], tuple[list[int], list[float]]] = {}

    def add(self, op: str, door: str, outcome: str, seconds: float) -> None:
        entry = self._entries.get((op, door, outcome))
        if entry is None:
            entry = self._first((op, door, outcome))
        count, hist = entry
        count[0] += 1
        # Most calls end within the first bucket: one comparison then, the search only for slower ones.
        hist[0 if seconds <= _FIRST_BUCKET else _bisect(OP_BUCKETS, seconds)] += 1
        hist[-2] += seconds
        hist[-1] += 1

    def _first(self, key: tuple[str, str, str]) -> tuple[list[int], list[float]]:
        op, door, outcome = key
        labels = (op, bounded(door, DOORS), bounded(outcome, OUTCOMES))
        # Two raw combinations that bound to the same labels (two unknown doors) share their counts.
        same = next((k for k, v in self._labels.items() if v == labels), None)
        count = self._calls[same] if same is not None else [0]
        self._calls[key], self._labels[key] = count, labels
        entry = (count, self._seconds.setdefault(labels[:2], [0.0] * (len(OP_BUCKETS) + 3)))
        self._entries[key] = entry
        return entry

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        calls = CounterMetricFamily(
            "hangar_rpc_calls", "Op calls by op, door and outcome.", labels=["op", "door", "outcome"]
        )
        seen: set[tuple[str, str, str]] = set()
        for key, count in self._calls.items():
            labels = self._labels[key]
            if labels not in seen:
                seen.add(labels)
                calls.add_metric(list(labels), count[0])
        yield calls
        seconds = HistogramMetricFamily(
            "hangar_rpc_call_seconds", "Op call latency by op and door.", labels=["op", "door"]
        )
        for (op, door), hist in self._seconds.items():
            cumulative, buckets = 0.0, []
            for le, n in zip([*(repr(float(b)) for b in OP_BUCKETS), "+Inf"], hist[:-2], strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            seconds.add_metric([op, door], buckets, hist[-2])
        yield seconds


class Metrics:
    """The server's metrics. ``enabled=False`` keeps no registry: every method returns at once."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry = CollectorRegistry(auto_describe=False)
        if not enabled:
            return
        r = self.registry
        self._op_calls = _OpCalls()
        r.register(self._op_calls)
        self._mcp_sessions_open = Gauge("hangar_mcp_sessions", "MCP sessions open.", registry=r)
        self._mcp_sessions = Counter("hangar_mcp_sessions_opened", "MCP sessions opened.", registry=r)
        self._event_lag = Histogram(
            "hangar_event_delivery_lag_seconds",
            "Time from an event's recording to its delivery to this server's subscribers.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self._pipeline_runs = Counter("hangar_pipeline_runs", "Pipeline runs reaching a state.", ["state"], registry=r)
        self._pipeline_steps = Counter(
            "hangar_pipeline_steps", "Pipeline steps reaching a state.", ["state"], registry=r
        )
        self._agent_runs = Counter("hangar_agent_runs", "Agent runs reaching a state.", ["state"], registry=r)
        self._model_seconds = Histogram(
            "hangar_agent_model_seconds",
            "Latency of one model call of an agent run, by adapter kind.",
            ["adapter"],
            buckets=SLOW_BUCKETS,
            registry=r,
        )
        self._rig_boots = Counter(
            "hangar_rig_boots", "Rig boots by surface and outcome.", ["surface", "outcome"], registry=r
        )
        self._rig_boot_seconds = Histogram(
            "hangar_rig_boot_seconds",
            "Time from a rig's open to ready, by surface.",
            ["surface"],
            buckets=SLOW_BUCKETS,
            registry=r,
        )
        self._rigs = _RigsCollector()
        r.register(self._rigs)
        self._pack_builds = Counter("hangar_pack_builds", "Image pack builds by outcome.", ["outcome"], registry=r)
        self._pack_build_seconds = Histogram(
            "hangar_pack_build_seconds", "Time one image pack build took.", buckets=SLOW_BUCKETS, registry=r
        )
        self._chat_events = Counter(
            "hangar_chat_events", "Chat bridge events received, by provider and kind.", ["provider", "kind"], registry=r
        )
        self._chat_errors = Counter(
            "hangar_chat_provider_errors", "Errors a chat provider answered, by provider.", ["provider"], registry=r
        )
        self._sso_sign_ins = Counter(
            "hangar_sso_sign_ins", "SSO sign-ins by protocol and outcome.", ["protocol", "outcome"], registry=r
        )
        self._site_requests = Counter(
            "hangar_site_requests",
            "Website HTTP requests by method and status class.",
            ["method", "status"],
            registry=r,
        )

    # --- the RPC layer ------------------------------------------------------------------------------------------

    def rpc_call(self, op: str, door: str, outcome: str, seconds: float) -> None:
        """One op call ended; ``op`` is a registry name (``UNKNOWN_OP`` for a name the registry does not hold)."""
        if not self.enabled:
            return
        self._op_calls.add(op, door, outcome, seconds)

    def mcp_session(self, opened: bool) -> None:
        if not self.enabled:
            return
        if opened:
            self._mcp_sessions.inc()
            self._mcp_sessions_open.inc()
        else:
            self._mcp_sessions_open.dec()

    def event_delivered(self, lag_seconds: float) -> None:
        if self.enabled:
            self._event_lag.observe(max(lag_seconds, 0.0))

    # --- the parts ----------------------------------------------------------------------------------------------

    def pipeline_run(self, state: str) -> None:
        if self.enabled:
            self._pipeline_runs.labels(state).inc()

    def pipeline_step(self, state: str) -> None:
        if self.enabled:
            self._pipeline_steps.labels(state).inc()

    def agent_run(self, state: str) -> None:
        if self.enabled:
            self._agent_runs.labels(state).inc()

    def model_call(self, adapter: str, seconds: float) -> None:
        if self.enabled:
            self._model_seconds.labels(adapter).observe(seconds)

    def rig_booted(self, surface: str, ok: bool, seconds: float) -> None:
        if not self.enabled:
            return
        self._rig_boots.labels(surface, "ok" if ok else "failed").inc()
        if ok:
            self._rig_boot_seconds.labels(surface).observe(seconds)

    def watch_rigs(self, source: RigCounts) -> None:
        """Register where the live rigs are counted (``{(surface, state): n}``), read at each scrape."""
        if self.enabled:
            self._rigs.sources.append(source)

    def pack_built(self, ok: bool, seconds: float) -> None:
        if not self.enabled:
            return
        self._pack_builds.labels("ok" if ok else "failed").inc()
        if ok:
            self._pack_build_seconds.observe(seconds)

    def chat_event(self, provider: str, kind: str) -> None:
        if self.enabled:
            self._chat_events.labels(provider, kind).inc()

    def chat_provider_error(self, provider: str) -> None:
        if self.enabled:
            self._chat_errors.labels(provider).inc()

    def sso_sign_in(self, protocol: str, outcome: str) -> None:
        """``outcome``: ``ok`` or the SSO failure code the sign-in was refused with (``hangar.sso.errors`` checks
        every code against its fixed list when the error is made)."""
        if self.enabled:
            self._sso_sign_ins.labels(bounded(protocol, SSO_PROTOCOLS), outcome).inc()

    def site_request(self, method: str, status: int) -> None:
        if self.enabled:
            self._site_requests.labels(bounded(method, HTTP_METHODS), f"{status // 100}xx").inc()

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


class Stopwatch:
    """Seconds since it was made, from the monotonic clock (what every latency here is measured with)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.started
