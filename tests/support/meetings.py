"""Synthetic meetings for the diarisation tests and bench: espeak-ng voices taking known turns, and the diarisation
error rate of a hypothesis against those turns.

Each speaker is a distinct espeak-ng voice (a language variant, a voice variant, a pitch and a speed). A turn is
one or two sentences; turns follow each other with short pauses, and a little seeded noise sits under everything
so the speech detector sees a real floor. The reference turns are the synthesised speech's own extent (espeak's
leading and trailing silence trimmed).
"""

from __future__ import annotations

import io
import itertools
import random
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hangar.meetings.diarize import Span, read_wav

RATE = 16_000


@dataclass(frozen=True)
class Voice:
    name: str
    pitch: int
    speed: int


VOICES: tuple[Voice, ...] = (
    Voice("en+m3", 30, 160),
    Voice("en-us+f2", 75, 175),
    Voice("en-gb-scotland+m7", 15, 145),
    Voice("en-us+f4", 90, 185),
)

SENTENCES: tuple[str, ...] = (
    "Let us start with the release plan for next week",
    "The build on the main branch has been green since Monday",
    "I think we should move the database migration to Thursday",
    "Can somebody take the ticket about the login timeout",
    "The customer asked for an export of their reports as spreadsheets",
    "We measured the new cache and it halves the page load time",
    "I will write the summary and send it to everyone after lunch",
    "There is still one open question about the billing emails",
    "My team can review the pull request before the end of the day",
    "The design for the settings page is ready for feedback",
    "Please keep the old endpoint until every client has moved",
    "We agreed to freeze new features two days before the release",
    "The monitoring alert fired twice last night without a real outage",
    "Who owns the documentation for the new onboarding flow",
    "I can pair with the new engineer on the search service tomorrow",
    "The budget for the conference travel was approved this morning",
)


@dataclass(frozen=True)
class Meeting:
    samples: np.ndarray
    rate: int
    turns: list[Span]
    voices: list[Voice]  # the voice of speaker 1, 2, … (numbered by first appearance, as the turns are)

    @property
    def speakers(self) -> int:
        return len({t.speaker for t in self.turns})

    @property
    def seconds(self) -> float:
        return self.samples.size / self.rate

    def wav(self) -> bytes:
        return to_wav(self.samples, self.rate)


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def to_wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def speak(text: str, voice: Voice, rate: int = RATE) -> np.ndarray:
    """One utterance in ``voice``, resampled to ``rate``, its leading and trailing silence trimmed."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "say.wav"
        subprocess.run(
            ["espeak-ng", "-v", voice.name, "-p", str(voice.pitch), "-s", str(voice.speed), "-w", str(path), text],
            check=True,
            capture_output=True,
            timeout=60,
        )
        samples, source_rate = read_wav(path.read_bytes())
    if source_rate != rate:
        t = np.arange(int(samples.size * rate / source_rate)) / rate
        samples = np.interp(t, np.arange(samples.size) / source_rate, samples)
    loud = np.flatnonzero(np.abs(samples) > 0.01)
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples[:0]


def make_meeting(
    speakers: int,
    *,
    turns: int = 12,
    seed: int = 0,
    rate: int = RATE,
    pauses: tuple[float, float] = (0.3, 0.8),
    sentences: tuple[int, ...] = (1, 2),
    vary: bool = False,
) -> Meeting:
    """``speakers`` (1 to 4) voices taking ``turns`` turns of so many ``sentences`` (chosen at random), each turn
    followed by a pause in the ``pauses`` range (seconds); every voice speaks, no voice twice in a row. ``vary``
    moves each turn's pitch and speed a little around the voice's own, so a sentence said twice is not the same
    audio twice (espeak-ng is deterministic; real speech never repeats exactly, and long meetings repeat
    sentences)."""
    if not 1 <= speakers <= len(VOICES):
        raise ValueError(f"1 to {len(VOICES)} speakers")
    rng = random.Random(seed)
    order = list(range(speakers))
    rng.shuffle(order)
    while len(order) < turns:
        order.append(rng.choice([s for s in range(speakers) if s != order[-1]] or [order[-1]]))
    pieces: list[np.ndarray] = [np.zeros(int(0.5 * rate))]
    spans: list[Span] = []
    at = pieces[0].size
    first_seen: dict[int, int] = {}
    for who in order:
        text = " ".join(rng.sample(SENTENCES, rng.choice(sentences)))
        voice = VOICES[who]
        if vary:
            voice = Voice(voice.name, voice.pitch + rng.randint(-6, 6), voice.speed + rng.randint(-15, 15))
        speech = speak(text, voice, rate) * rng.uniform(0.5, 0.9)
        number = first_seen.setdefault(who, len(first_seen) + 1)
        spans.append(Span(at / rate, (at + speech.size) / rate, number))
        pause = np.zeros(int(rng.uniform(*pauses) * rate))
        pieces += [speech, pause]
        at += speech.size + pause.size
    samples = np.concatenate(pieces)
    samples = samples + np.random.default_rng(seed).normal(0.0, 0.002, samples.size)
    voices = [VOICES[who] for who in sorted(first_seen, key=first_seen.__getitem__)]
    return Meeting(samples=samples, rate=rate, turns=spans, voices=voices)


def _frames(spans: list[Span], count: int, step: float) -> list[set[int]]:
    out: list[set[int]] = [set() for _ in range(count)]
    for s in spans:
        for f in range(max(0, round(s.start / step)), min(count, round(s.end / step))):
            out[f].add(s.speaker)
    return out


def der(reference: list[Span], hypothesis: list[Span], *, collar: float = 0.25, step: float = 0.01) -> float:
    """Diarisation error rate: (missed speech + false alarm + speaker confusion) / reference speech, under the
    speaker mapping that minimises it, frames within ``collar`` of a reference boundary not scored."""
    end = max([s.end for s in reference + hypothesis], default=0.0)
    count = int(end / step) + 2
    ref, hyp = _frames(reference, count, step), _frames(hypothesis, count, step)
    scored = [True] * count
    for s in reference:
        for edge in (s.start, s.end):
            for f in range(max(0, round((edge - collar) / step)), min(count, round((edge + collar) / step))):
                scored[f] = False
    frames = [(r, h) for r, h, keep in zip(ref, hyp, scored, strict=True) if keep]
    total = sum(len(r) for r, _ in frames)
    if total == 0:
        raise ValueError("the reference holds no scored speech")
    hyp_ids = sorted({s.speaker for s in hypothesis})
    # Frames where a reference speaker and a hypothesis speaker both speak: a mapping's correct frames are its
    # pairs' counts, and the error is the frames' max(reference, hypothesis) speaker count less those.
    together: dict[tuple[int, int], int] = {}
    for r, h in frames:
        for pair in itertools.product(r, h):
            together[pair] = together.get(pair, 0) + 1
    ceiling = sum(max(len(r), len(h)) for r, h in frames)
    ref_ids = sorted({s.speaker for s in reference})
    padded = ref_ids + [0] * max(0, len(hyp_ids) - len(ref_ids))
    # Every injective mapping of hypothesis speakers onto reference speakers (a few speakers: brute force is fine).
    correct = max(
        (
            sum(together.get((r, h), 0) for h, r in zip(hyp_ids, perm, strict=True))
            for perm in itertools.permutations(padded, len(hyp_ids))
        ),
        default=0,
    )
    return (ceiling - correct) / total
