"""A meeting's transcript: segments in time order, each a start and an end in seconds, a speaker's label and the
text said. It arrives as WebVTT or as JSON segments (``meetings.importTranscript``), from the diarisation body, or
from ``meeting.updateTranscript``; every way in goes through ``checked``, which refuses a transcript whose
segments overlap or run out of order, naming the segment, before anything is written (a refused transcript leaves
the stored one as it was).

JSON: a list of segments, or ``{"segments": [...]}``; a segment is ``{"start", "end", "speaker"?, "text"}`` with
times in seconds (``speaker`` may also be spelt ``speakerLabel``). WebVTT: cues ``HH:MM:SS.mmm --> HH:MM:SS.mmm``
(hours optional) whose text may open with a voice tag ``<v Name>``, the speaker; other tags are dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hangar.errors import InvalidArgs

MAX_SEGMENTS = 20_000  # of one transcript
MAX_TEXT = 10_000  # characters of one segment
MAX_SPEAKER = 200  # characters of a speaker's label
MAX_SECONDS = 24 * 3600.0  # a segment ends within a day of the meeting's start
UNKNOWN_SPEAKER = ""  # a segment no one has been named for yet


@dataclass(frozen=True)
class Segment:
    start: float  # seconds from the meeting's start
    end: float
    speaker: str
    text: str

    def to_wire(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "speaker": self.speaker, "text": self.text}


def stamp(seconds: float) -> str:
    """``HH:MM:SS.mmm``, as errors name a segment's times."""
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def _named(n: int, seg: Segment) -> str:
    return f"segment {n} ({stamp(seg.start)} --> {stamp(seg.end)})"


def checked(segments: Iterable[Segment]) -> list[Segment]:
    """The segments, if they make a transcript; else ``InvalidArgs`` naming the first bad one (1-based)."""
    out: list[Segment] = []
    for n, seg in enumerate(segments, start=1):
        if len(out) >= MAX_SEGMENTS:
            raise InvalidArgs(f"a transcript holds at most {MAX_SEGMENTS} segments", field="transcript")
        if not (math.isfinite(seg.start) and math.isfinite(seg.end)) or seg.start < 0 or seg.end > MAX_SECONDS:
            raise InvalidArgs(
                f"segment {n}: times must be seconds from 0 to {MAX_SECONDS:g}, not {seg.start!r} to {seg.end!r}",
                field="transcript",
            )
        if seg.end < seg.start:
            raise InvalidArgs(f"{_named(n, seg)} ends before it starts", field="transcript")
        if len(seg.text) > MAX_TEXT or "\x00" in seg.text:
            raise InvalidArgs(
                f"segment {n}: its text must be at most {MAX_TEXT} characters without NUL", field="transcript"
            )
        if len(seg.speaker) > MAX_SPEAKER or "\x00" in seg.speaker:
            raise InvalidArgs(
                f"segment {n}: its speaker must be at most {MAX_SPEAKER} characters without NUL", field="transcript"
            )
        if out:
            prev = out[-1]
            if seg.start < prev.start:
                raise InvalidArgs(
                    f"{_named(n, seg)} is out of order: it starts before {_named(n - 1, prev)}", field="transcript"
                )
            if seg.start < prev.end:
                raise InvalidArgs(
                    f"{_named(n, seg)} overlaps {_named(n - 1, prev)}: it starts before that one ends",
                    field="transcript",
                )
        out.append(seg)
    return out


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool, not an integer too large for a float), else
    ``None``: input from JSON may hold either, and ``float()`` raises on the second."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number(value: Any, n: int, key: str) -> float:
    number = finite(value)
    if number is None:
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:40]}…"
        raise InvalidArgs(f"segment {n}: {key} must be a number of seconds, not {shown}", field="transcript")
    return number


def _text(value: Any, n: int, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgs(f"segment {n}: {key} must be a string", field="transcript")
    return value.strip()


def from_json(raw: Any) -> list[Segment]:
    """Segments from decoded JSON (a list, or an object holding ``segments``)."""
    items = raw.get("segments") if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        raise InvalidArgs('a JSON transcript is a list of segments or {"segments": [...]}', field="transcript")
    found: list[Segment] = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InvalidArgs(f"segment {n} must be an object with start, end and text", field="transcript")
        speaker = item.get("speaker", item.get("speakerLabel", UNKNOWN_SPEAKER))
        found.append(
            Segment(
                start=_number(item.get("start"), n, "start"),
                end=_number(item.get("end"), n, "end"),
                speaker=_text(speaker if speaker is not None else UNKNOWN_SPEAKER, n, "speaker"),
                text=_text(item.get("text"), n, "text"),
            )
        )
    return checked(found)


# Hours of at most six digits: a longer field would only be a number past any meeting (and past a float).
_CUE_TIME = re.compile(r"^(?:(\d{1,6}):)?([0-5]\d):([0-5]\d)\.(\d{3})$")
_VOICE = re.compile(r"^<v(?:\.[^ >]*)?\s+([^>]*)>")
_TAG = re.compile(r"</?[^>]*>")


def _seconds(text: str, line_no: int) -> float:
    m = _CUE_TIME.match(text.strip())
    if m is None:
        shown = text.strip() if len(text.strip()) <= 40 else f"{text.strip()[:40]}…"
        raise InvalidArgs(f"WebVTT line {line_no}: {shown!r} is not a time HH:MM:SS.mmm", field="transcript")
    hours, minutes, seconds, millis = (int(g) if g else 0 for g in m.groups())
    return hours * 3600 + minutes * 60 + seconds + millis / 1000


def from_webvtt(text: str) -> list[Segment]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
        raise InvalidArgs("a WebVTT transcript starts with the line WEBVTT", field="transcript")
    found: list[Segment] = []
    i = 1
    while i < len(lines):
        line = lines[i]
        if "-->" not in line:
            # A cue's identifier, a NOTE or STYLE block's text, or a blank line: nothing said.
            i += 1
            continue
        start_text, _, rest = line.partition("-->")
        start = _seconds(start_text, i + 1)
        end = _seconds(rest.strip().split(" ")[0], i + 1)  # cue settings may follow the end time
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip():
            body.append(lines[i].strip())
            i += 1
        said = " ".join(body)
        voice = _VOICE.match(said)
        speaker = voice.group(1).strip() if voice else UNKNOWN_SPEAKER
        found.append(Segment(start, end, speaker, _TAG.sub("", said).strip()))
    return checked(found)


def parse(content: str, fmt: str) -> list[Segment]:
    """``fmt`` is ``webvtt`` or ``json``."""
    if fmt == "webvtt":
        return from_webvtt(content)
    try:
        raw = json.loads(content)
    except RecursionError:
        raise InvalidArgs("the transcript is not JSON a parser reads: nested too deeply", field="transcript") from None
    except ValueError as exc:  # JSONDecodeError, and an integer past Python's digit limit
        raise InvalidArgs(f"the transcript is not JSON: {str(exc)[:200]}", field="transcript") from None
    return from_json(raw)


def merged_turns(segments: Sequence[Segment]) -> list[Segment]:
    """Consecutive segments of one speaker joined into one turn (from the first's start to the last's end)."""
    turns: list[Segment] = []
    for seg in segments:
        joined = f"{turns[-1].text} {seg.text}".strip() if turns else ""
        # A turn stays within a segment's text bound: a longer monologue goes on in a turn of its own.
        if turns and turns[-1].speaker == seg.speaker and len(joined) <= MAX_TEXT:
            last = turns[-1]
            turns[-1] = Segment(last.start, max(last.end, seg.end), last.speaker, joined)
        else:
            turns.append(seg)
    return turns
