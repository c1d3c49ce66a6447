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
turned into families at scrape time (``hangar.core.metric_collectors.OpCalls``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hangar.core.metric_labels import (
    HTTP_METHODS,
    LAG_BUCKETS,
    SLOW_BUCKETS,
    SSO_PROTOCOLS,
    RigCounts,
    bounded,
)

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class Metrics:
    """The server's metrics. ``enabled=False`` keeps no registry: every method returns at once."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry: CollectorRegistry | None = None
        if not enabled:
            return
        # Imported here: ``prometheus_client`` is only needed by a server that counts, and a command that counts
        # nothing (every admin command) would otherwise load it at start-up.
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        from hangar.core.metric_collectors import OpCalls, RigsCollector

        r = self.registry = CollectorRegistry(auto_describe=False)
        self._op_calls = OpCalls()
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
        self._rigs = RigsCollector()
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
        """The Prometheus text format of every metric (nothing when metrics are off)."""
        if self.registry is None:
            return b""
        from prometheus_client import generate_latest  # loaded already: the registry is prometheus_client's

        return generate_latest(self.registry)


class Stopwatch:
    """Seconds since it was made, from the monotonic clock (what every latency here is measured with)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.started
