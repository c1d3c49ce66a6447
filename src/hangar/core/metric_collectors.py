"""The collectors behind ``hangar.core.metrics`` that ``prometheus_client`` scrapes, and the exposition's content
type. Loaded only by a ``Metrics`` that counts (``prometheus_client`` takes a noticeable part of a command's
start-up, and an admin command counts nothing)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from hangar.core.metric_labels import BISECT, DOORS, FIRST_BUCKET, OP_BUCKETS, OUTCOMES, RigCounts, bounded

EXPOSITION_TYPE = CONTENT_TYPE_LATEST


class RigsCollector(Collector):
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


class OpCalls(Collector):
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
        hist[0 if seconds <= FIRST_BUCKET else BISECT(OP_BUCKETS, seconds)] += 1
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
