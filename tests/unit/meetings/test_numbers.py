"""Numbers in pipeline state and in a transcript: an integer past a float (which ``float()`` raises on) is refused
naming the field, as any other bad number is. The RPC frame refuses such integers before a run starts, so these
are the bodies' own guards for state that arrived another way."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.meetings.bodies import MAX_SPANS, Span, labelled, spans_of
from hangar.meetings.transcript import MAX_SEGMENTS, Segment, finite, from_json


def test_finite_takes_finite_numbers_only() -> None:
    assert finite(2) == 2.0 and finite(1.5) == 1.5 and finite(10**308) == 1e308
    for bad in (10**400, float("inf"), float("nan"), True, "1", None):
        assert finite(bad) is None


def test_an_integer_past_a_float_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgs, match="diarization_spans span 2"):
        spans_of([{"start": 0, "end": 1, "speaker": "A"}, {"start": 2, "end": 10**400, "speaker": "B"}])
    assert spans_of([{"start": 0, "end": 10**308, "speaker": "A"}])[0].end == 1e308
    with pytest.raises(InvalidArgs, match="segment 1: start must be a number"):
        from_json([{"start": 10**400, "end": 2, "text": "x"}])


def test_the_spans_cap_holds_on_both_sides_and_relabelling_is_a_sweep() -> None:
    assert MAX_SPANS == MAX_SEGMENTS
    spans = [{"start": k, "end": k + 1, "speaker": "AB"[k % 2]} for k in range(MAX_SPANS)]
    found = spans_of(spans)
    assert len(found) == MAX_SPANS
    with pytest.raises(InvalidArgs, match=f"at most {MAX_SPANS} spans"):
        spans_of([*spans, {"start": MAX_SPANS, "end": MAX_SPANS + 1, "speaker": "A"}])
    # Each segment takes the speaker it overlaps most, found among its own spans only.
    segments = [Segment(k + 0.1, k + 1.4, "", "x") for k in range(0, MAX_SPANS - 1, 2)]
    assert {s.speaker for s in labelled(segments, found)} == {"A"}
    assert labelled([Segment(0.6, 1.5, "", "x")], found)[0].speaker == "B"
    assert labelled([Segment(MAX_SPANS + 5, MAX_SPANS + 6, "kept", "x")], found)[0].speaker == "kept"
    assert labelled([Segment(0.5, 0.9, "", "x")], [Span(0.0, 1.0, "A"), Span(1.0, 1.0, "Z")])[0].speaker == "A"
