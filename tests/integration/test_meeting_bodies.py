"""The meeting bodies through real pipeline runs on the real server: ``meeting.updateTranscript`` labels the
transcript from ``diarization_spans`` by overlap and merges fragments into turns (and changes nothing without
spans), ``meeting.assemblePlayback`` mixes the retained channels into the track the playback route serves (and does
nothing without channels), and ``meeting.saveNotes``, ``meeting.addActionItems`` and ``meeting.addDecisions``
persist the agent's outcome, never wiping what an earlier run saved when a later one brings nothing."""

from __future__ import annotations

import io
import itertools
import json
import wave
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.test_meeting_audio import tone, upload, wav_facts
from tests.support.rpc import RpcClient
from tests.support.runs import finished
from tests.unit.agents.support import template, workspace_server

_RUNS = itertools.count()


async def run_body(c: RpcClient, ws: str, body: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A pipeline whose one step runs ``body`` with ``payload`` as its trigger; the finished run's step."""
    tid = f"meeting-{next(_RUNS)}"
    await c.call(
        "pipelines.templates.create",
        workspace_id=ws,
        template=template({"id": "do", "body": body, "config": {"outputKey": "out"}}, tid=tid),
    )
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid, payload=payload)
    run = await finished(c, ws, started["runId"])
    step = next(s for s in run["steps"] if s["stepId"] == "do")
    return {"run": run, "step": step}


def completed(done: dict[str, Any]) -> dict[str, Any]:
    assert done["run"]["status"] == "completed", json.dumps(done["step"])
    return dict(done["run"]["state"]["out"])


FRAGMENTS = [
    {"start": 0.0, "end": 1.0, "speaker": "", "text": "Good"},
    {"start": 1.0, "end": 2.0, "speaker": "", "text": "morning."},
    {"start": 2.0, "end": 3.5, "speaker": "", "text": "Hi,"},
    {"start": 3.5, "end": 4.0, "speaker": "", "text": "there."},
    {"start": 4.0, "end": 5.0, "speaker": "", "text": "Budget?"},
    {"start": 9.0, "end": 10.0, "speaker": "", "text": "(nobody)"},
]
SPANS = [
    {"start": 0.0, "end": 2.2, "speaker": "Person 1"},
    {"start": 2.2, "end": 4.1, "speaker": "Person 2"},
    {"start": 4.1, "end": 6.0, "speaker": "Person 1"},
]


async def test_update_transcript_labels_by_overlap_merges_turns_and_persists(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Sync")
        await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json",
                     content=json.dumps(FRAGMENTS))  # fmt: skip
        out = completed(await run_body(c, ws, "meeting.updateTranscript",
                                       {"meeting_id": m["id"], "diarization_spans": SPANS}))  # fmt: skip
        assert out["updated"] is True and out["segments"] == 6 and out["speakers"] == ["Person 1", "Person 2"]
        want = [
            {"start": 0.0, "end": 2.0, "speaker": "Person 1", "text": "Good morning."},
            {"start": 2.0, "end": 4.0, "speaker": "Person 2", "text": "Hi, there."},
            {"start": 4.0, "end": 5.0, "speaker": "Person 1", "text": "Budget?"},
            {"start": 9.0, "end": 10.0, "speaker": "", "text": "(nobody)"},  # no span overlaps it: kept as it was
        ]
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["transcript"] == want

        # A transcript handed on in state (by the diarisation body) is the one labelled.
        handed = [{"start": 0.0, "end": 3.0, "speaker": "", "text": "From state."}]
        done = await run_body(c, ws, "meeting.updateTranscript",
                              {"meeting_id": m["id"], "diarization_spans": SPANS, "transcript": handed})  # fmt: skip
        assert completed(done)["turns"] == 1
        assert done["run"]["state"]["transcript"] == [
            {"start": 0.0, "end": 3.0, "speaker": "Person 1", "text": "From state."}
        ]


@pytest.mark.parametrize("spans", [None, []])
async def test_update_transcript_changes_nothing_when_diarisation_produced_nothing(
    tmp_path: Path, spans: list[Any] | None
) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Sync")
        await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json",
                     content=json.dumps(FRAGMENTS))  # fmt: skip
        payload: dict[str, Any] = {"meeting_id": m["id"]}
        if spans is not None:
            payload["diarization_spans"] = spans
        out = completed(await run_body(c, ws, "meeting.updateTranscript", payload))
        assert out["updated"] is False
        kept = (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["transcript"]
        assert kept == FRAGMENTS


async def test_a_meeting_body_without_a_known_meeting_fails_naming_the_key(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        for payload in ({}, {"meeting_id": "no-such-meeting"}):
            done = await run_body(c, ws, "meeting.saveNotes", payload)
            assert done["run"]["status"] == "failed" and "meeting_id" in done["step"]["error"]
        m = await c.call("meetings.create", workspace_id=ws, title="Sync")
        bad = await run_body(c, ws, "meeting.updateTranscript",
                             {"meeting_id": m["id"], "diarization_spans": [{"start": 0, "end": 1}]})  # fmt: skip
        assert bad["run"]["status"] == "failed" and "diarization_spans span 1" in bad["step"]["error"]


async def test_assemble_playback_mixes_the_channels_and_the_route_serves_the_track(tmp_path: Path) -> None:
    ada = tone(tmp_path / "ada.ogg", 2.0, freq=300)
    bo = tone(tmp_path / "bo.wav", 3.0, freq=700)
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Sync")
        none = completed(await run_body(c, ws, "meeting.assemblePlayback", {"meeting_id": m["id"]}))
        assert none["assembled"] is False  # nothing retained: nothing made
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["meeting"]["playback"] is False

        for data, label in ((ada, "Ada"), (bo, "Bo")):
            assert (await upload(srv, ws, m["id"], data, label=label)).status_code == 201
        out = completed(await run_body(c, ws, "meeting.assemblePlayback", {"meeting_id": m["id"]}))
        assert out["assembled"] is True and out["channels"] == 2 and out["seconds"] == pytest.approx(3.0, abs=0.05)
        meeting = (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["meeting"]
        assert meeting["playback"] is True and meeting["playbackBytes"] == out["bytes"]

        guest = await srv.new_user_token(ws, "guest", name="gus")
        async with httpx.AsyncClient(timeout=60) as http:
            got = await http.get(f"{srv.url}/meeting-audio/{ws}/{m['id']}/playback",
                                 headers={"Authorization": f"Bearer {guest}"})  # fmt: skip
        assert got.status_code == 200 and got.headers["content-type"] == "audio/wav"
        channels, rate, width, frames = wav_facts(got.content)
        assert (channels, rate, width) == (1, 16000, 2) and frames == pytest.approx(48000, abs=800)
        with wave.open(io.BytesIO(got.content)) as w:
            w.setpos(int(2.5 * 16000))  # past Ada's two seconds: Bo alone, still sounding
            assert max(abs(int.from_bytes(w.readframes(400)[i : i + 2], "little", signed=True))
                       for i in range(0, 800, 2)) > 1000  # fmt: skip


OUTCOME = {
    "summary": "We agreed the budget.",
    "enhancedNotes": "- budget agreed\n- hiring next week",
    "actionItems": ["Send the budget to finance", {"text": "Book the room", "owner": "Bo", "due": "Friday"}, 42],
    "decisions": ["The budget is 10k", {"decision": "Hire one engineer"}, {"nothing": True}],
}


async def test_the_outcome_bodies_persist_and_a_degraded_run_wipes_nothing(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Budget")
        payload = {"meeting_id": m["id"], "meeting_outcome": OUTCOME}
        assert completed(await run_body(c, ws, "meeting.saveNotes", payload))["saved"] is True
        assert completed(await run_body(c, ws, "meeting.addActionItems", payload)) == {
            "meetingId": m["id"], "added": 2, "skipped": 1
        }  # fmt: skip
        assert completed(await run_body(c, ws, "meeting.addDecisions", payload))["added"] == 2

        def saved(got: dict[str, Any]) -> tuple[Any, ...]:
            return (
                [(n["summary"], n["enhancedNotes"]) for n in got["notes"]],
                [(a["text"], a["owner"], a["due"]) for a in got["actionItems"]],
                [d["text"] for d in got["decisions"]],
            )

        before = saved(await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))
        assert before == (
            [("We agreed the budget.", "- budget agreed\n- hiring next week")],
            [("Book the room", "Bo", "Friday"), ("Send the budget to finance", None, None)],
            ["The budget is 10k", "Hire one engineer"],
        )
        degraded: list[dict[str, Any]] = [
            {"meeting_id": m["id"]},
            {"meeting_id": m["id"], "meeting_outcome": {}},
            {"meeting_id": m["id"], "meeting_outcome": "the agent failed"},
            {"meeting_id": m["id"], "meeting_outcome": {"summary": " ", "actionItems": [], "decisions": None}},
        ]
        for each in degraded:
            for body in ("meeting.saveNotes", "meeting.addActionItems", "meeting.addDecisions"):
                out = completed(await run_body(c, ws, body, each))
                assert out.get("saved", False) is False and out.get("added", 0) == 0
        # The same outcome again adds no duplicates.
        for body in ("meeting.addActionItems", "meeting.addDecisions"):
            assert completed(await run_body(c, ws, body, payload))["added"] == 0
        assert saved(await c.call("meetings.get", workspace_id=ws, meetingId=m["id"])) == before


async def test_notes_are_saved_once_per_run_however_often_the_body_runs_in_it(tmp_path: Path) -> None:
    """A step re-run after its worker died runs ``meeting.saveNotes`` again in the same run: its notes are kept
    once; another run's notes (even the same text) are its own."""
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Twice")
        twice = template(
            {"id": "save", "body": "meeting.saveNotes", "config": {"outputKey": "first"}},
            {"id": "again", "body": "meeting.saveNotes", "config": {"outputKey": "second"}},
            tid="twice",
        )
        await c.call("pipelines.templates.create", workspace_id=ws, template=twice)
        payload = {"meeting_id": m["id"], "meeting_outcome": OUTCOME}
        for n in (1, 2):
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="twice", payload=payload)
            run = await finished(c, ws, started["runId"])
            assert run["status"] == "completed" and run["state"]["second"]["saved"] is True, json.dumps(run["steps"])
            got = await c.call("meetings.get", workspace_id=ws, meetingId=m["id"])
            assert [x["summary"] for x in got["notes"]] == [OUTCOME["summary"]] * n


async def test_an_action_item_becomes_a_ticket_once(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Budget")
        completed(await run_body(c, ws, "meeting.addActionItems", {"meeting_id": m["id"], "meeting_outcome": OUTCOME}))
        items = (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["actionItems"]
        room = next(i for i in items if i["text"] == "Book the room")
        made = await c.call("meetings.actionItems.ticket", workspace_id=ws, meetingId=m["id"], actionItemId=room["id"])
        assert made["created"] is True
        ticket = await c.call("tickets.get", workspace_id=ws, ticketId=made["ticketId"])
        assert ticket["title"] == "Book the room" and "Owner: Bo" in ticket["description"]
        again = await c.call("meetings.actionItems.ticket", workspace_id=ws, meetingId=m["id"], actionItemId=room["id"])
        assert again == {"actionItemId": room["id"], "ticketId": made["ticketId"], "created": False}
        assert len((await c.call("tickets.list", workspace_id=ws))["tickets"]) == 1
        items = (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["actionItems"]
        assert next(i for i in items if i["id"] == room["id"])["ticketId"] == made["ticketId"]


async def test_an_action_items_owner_and_due_are_kept_within_their_columns(tmp_path: Path) -> None:
    # The columns are String(200) (owner) and String(100) (due): PostgreSQL refuses a longer value and would fail
    # the whole step, so the body keeps each to its column. At the length kept whole; one past, cut to it.
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Budget")
        items = [
            {"text": "At the limit", "owner": "o" * 200, "due": "d" * 100},
            {"text": "One past", "owner": "p" * 201, "due": "e" * 101},
            {"text": "Far past", "owner": "q" * 150, "due": "f" * 150},
        ]
        payload = {"meeting_id": m["id"], "meeting_outcome": {"actionItems": items}}
        assert completed(await run_body(c, ws, "meeting.addActionItems", payload))["added"] == 3
        got = {a["text"]: (a["owner"], a["due"]) for a in
               (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["actionItems"]}  # fmt: skip
        assert got == {
            "At the limit": ("o" * 200, "d" * 100),
            "One past": ("p" * 200, "e" * 100),
            "Far past": ("q" * 150, "f" * 100),
        }


async def test_overlapping_or_backward_spans_are_refused_and_many_spans_relabel(tmp_path: Path) -> None:
    # Relabelling is a sweep over the sorted spans, on the server's event loop: the spans may not overlap (one
    # speaker at a time, as meeting.diarize emits them). The cap (MAX_SPANS) is past what one RPC frame holds, so
    # its two sides are tested in tests/unit/meetings/test_numbers.py; here as many spans as a frame takes.
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Sync")
        await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json",
                     content=json.dumps(FRAGMENTS))  # fmt: skip
        many = [{"start": k, "end": k + 1, "speaker": "AB"[k % 2]} for k in range(5000)]
        done = await run_body(c, ws, "meeting.updateTranscript", {"meeting_id": m["id"], "diarization_spans": many})
        assert completed(done)["updated"] is True
        crossing = [{"start": 0, "end": 3, "speaker": "A"}, {"start": 2, "end": 4, "speaker": "B"}]
        bad = await run_body(c, ws, "meeting.updateTranscript", {"meeting_id": m["id"], "diarization_spans": crossing})
        assert bad["run"]["status"] == "failed" and "overlaps" in bad["step"]["error"]
        backwards = [{"start": 3, "end": 2, "speaker": "A"}]
        bad = await run_body(c, ws, "meeting.updateTranscript",
                             {"meeting_id": m["id"], "diarization_spans": backwards})  # fmt: skip
        assert bad["run"]["status"] == "failed" and "ends before it starts" in bad["step"]["error"]
