"""Offline diarisation: the diarisation error rate (DER) and the real-time factor on synthetic meetings, the chosen
method (BIC clustering, ``hangar.meetings.diarize``) beside the measured alternative (cosine clustering of mean
MFCCs) on the same recordings, and the voiceprints' separation.

Meetings are made with espeak-ng voices (``tests/support/meetings.py``): 1 to 4 speakers, "meetings" of 12 turns
of one or two sentences with pauses of 0.3 to 0.8 s (about a minute), "quick exchanges" of 20 one-sentence turns
with pauses of 50 to 250 ms, and "long" meetings of 150 turns (about 13 minutes) with each turn's pitch and speed
moved a little. The seeds measured (100 on) are not the ones the method's constants were tuned on (0 to 3). DER is
missed speech + false alarm + confusion over the reference speech under the best speaker mapping, with the usual
0.25 s collar around reference boundaries and without one. The real-time factor is diarisation time over audio
duration (below 1 is faster than real time), on one core: "RTF" in the bench's own process, as the method's cost;
"RTF child" as the server runs it, in a confined child process of its own (``hangar.meetings.diarize_process``):
the sandbox's start, numpy's import, the WAV read from a file and the voiceprints included.

Run: ``.venv/bin/python bench/bench_diarization.py [--seeds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.meetings import RATE, SENTENCES, VOICES, Meeting, der, make_meeting, speak  # noqa: E402

from hangar.meetings.diarize import MATCH_THRESHOLD, diarize, similarity, voiceprint  # noqa: E402
from hangar.meetings.diarize_process import BASE_LIMITS, diarised_apart  # noqa: E402

KINDS: dict[str, dict[str, Any]] = {
    "meeting": {"turns": 12},
    "quick": {"turns": 20, "pauses": (0.05, 0.25), "sentences": (1,)},
    "long": {"turns": 150, "vary": True},
}


def measure(meetings: list[Meeting], method: str) -> tuple[list[float], list[float], list[float], int]:
    ders, ders_open, rtfs, counted = [], [], [], 0
    for m in meetings:
        started = time.perf_counter()
        spans = diarize(m.samples, m.rate, method=method)  # type: ignore[arg-type]
        rtfs.append((time.perf_counter() - started) / m.seconds)
        ders.append(der(m.turns, spans))
        ders_open.append(der(m.turns, spans, collar=0.0))
        counted += len({s.speaker for s in spans}) == m.speakers
    return ders, ders_open, rtfs, counted


def child_rtfs(meetings: list[Meeting]) -> list[float]:
    """The real-time factor of diarisation as the server runs it: a confined child process per meeting."""
    rtfs = []
    with tempfile.TemporaryDirectory() as folder:
        for n, m in enumerate(meetings):
            path = Path(folder) / f"{n}.wav"
            path.write_bytes(m.wav())
            started = time.perf_counter()
            asyncio.run(diarised_apart([path], 8, BASE_LIMITS))
            rtfs.append((time.perf_counter() - started) / m.seconds)
    return rtfs


def voiceprints(takes: int) -> tuple[list[float], list[float]]:
    prints = {
        (v, t): voiceprint(
            np.concatenate([speak(SENTENCES[(7 * v + 3 * t + k) % len(SENTENCES)], VOICES[v]) for k in range(2)]),
            RATE,
        )
        for v in range(len(VOICES))
        for t in range(takes)
    }
    same, other = [], []
    keys = sorted(prints)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            (same if a[0] == b[0] else other).append(similarity(prints[a], prints[b]))
    return same, other


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5, help="meetings per speaker count and kind")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.seeds} meetings per row")
    print(
        f"{'kind':8} {'spk':>3} {'method':7} {'DER':>7} {'max':>7} {'no collar':>9} {'count ok':>8} {'RTF':>7} "
        f"{'RTF child':>9}"
    )
    for kind, shape in KINDS.items():
        for speakers in (1, 2, 3, 4):
            if kind == "quick" and speakers == 1:
                continue
            count = args.seeds if kind != "long" else max(1, args.seeds // 2)
            meetings = [make_meeting(speakers, seed=100 + s, **shape) for s in range(count)]
            for method in ("bic", "cosine"):
                ders, ders_open, rtfs, counted = measure(meetings, method)
                child = f"{statistics.median(child_rtfs(meetings)):9.4f}" if method == "bic" else ""
                print(
                    f"{kind:8} {speakers:>3} {method:7} {statistics.mean(ders):7.1%} {max(ders):7.1%} "
                    f"{statistics.mean(ders_open):9.1%} {counted:>4}/{len(meetings):<3} {statistics.median(rtfs):7.4f} "
                    f"{child}"
                )
    same, other = voiceprints(3)
    print(
        f"voiceprint similarity: same voice {min(same):.2f}-{max(same):.2f}, other voices {min(other):.2f}-"
        f"{max(other):.2f}; match threshold {MATCH_THRESHOLD}"
    )


if __name__ == "__main__":
    main()
