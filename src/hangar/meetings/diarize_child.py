"""The diarisation's own process: ``python -m hangar.meetings.diarize_child MAX_SPEAKERS FD...`` reads the retained
channels (16 kHz mono WAV files the server opened, handed on as descriptors ``FD``), mixes them into one signal,
diarises it (``hangar.meetings.diarize``) and takes each speaker's voiceprint, and prints one JSON object on its
stdout: ``{"seconds", "spans": [{start, end, speaker}], "embeddings": {speaker: voiceprint}}``, or
``{"error", "field"}`` (exit status 2) for audio it refuses. It runs apart from the server, confined and bounded
(``hangar.meetings.diarize_process``), so a long or hostile recording takes its memory and CPU, not the server's;
it imports nothing of the server but the diarisation and the error tree."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

from hangar.errors import InvalidArgs
from hangar.meetings.diarize import MIN_VOICE_S, Samples, diarize, read_wav, voiceprint

RATE = 16_000  # the stored channels' rate (hangar.meetings.audio.RATE)
PERSON = "Person {}"


def _mixed(channels: list[bytes]) -> Samples:
    """The channels (the server's own 16 kHz mono WAV files) averaged into one signal."""
    signals = [read_wav(data, field="channel")[0] for data in channels]
    longest = max(s.size for s in signals)
    mix = np.zeros(longest, dtype=np.float32)
    for s in signals:
        mix[: s.size] += s / len(signals)
    return mix


def _voiceprints(mix: Samples, spans: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each speaker's voiceprint over their spans; a speaker with too little speech for one has none."""
    out: dict[str, list[float]] = {}
    for speaker in dict.fromkeys(s["speaker"] for s in spans):
        pieces = [mix[int(s["start"] * RATE) : int(s["end"] * RATE)] for s in spans if s["speaker"] == speaker]
        speech = np.concatenate(pieces)
        if speech.size >= MIN_VOICE_S * RATE:
            try:
                out[speaker] = voiceprint(speech, RATE)
            except InvalidArgs:
                continue  # less than the least speech a voiceprint is taken from, after the pauses
    return out


def diarised(channels: list[bytes], max_speakers: int) -> dict[str, Any]:
    """The answer for ``channels``: the spans (``Person N``), the seconds of the mix and the voiceprints."""
    mix = _mixed(channels)
    found = diarize(mix, RATE, max_speakers=max_speakers) if mix.size >= RATE else []
    spans = [{"start": s.start, "end": s.end, "speaker": PERSON.format(s.speaker)} for s in found]
    return {"seconds": round(mix.size / RATE, 3), "spans": spans, "embeddings": _voiceprints(mix, spans)}


def _read(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read()


def main(args: list[str]) -> int:
    max_speakers, fds = int(args[0]), [int(a) for a in args[1:]]
    try:
        answer = diarised([_read(fd) for fd in fds], max_speakers)
    except InvalidArgs as exc:
        json.dump({"error": str(exc), "field": exc.field}, sys.stdout)
        return 2
    json.dump(answer, sys.stdout, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
