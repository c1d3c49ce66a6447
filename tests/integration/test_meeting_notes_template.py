"""The built-in "meeting notes" template through a real run on the real server: a meeting spoken by two espeak-ng
voices, uploaded over the audio lane, with a transcript of unlabelled fragments and a saved voice profile for one
voice; an agent (a scripted OpenAI-compatible peer) submits the outcome. The run diarises, names the profiled
speaker, saves the transcript by speaker, saves the notes, action items and decisions, and mixes the playback
track. Without retained audio the same template leaves the transcript's speakers as they were and still saves the
notes. An empty agent is refused naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hangar.meetings.diarize import voiceprint
from tests.integration.test_meeting_audio import upload
from tests.integration.test_meeting_speakers import fragments, new_meeting
from tests.support.meetings import RATE, SENTENCES, espeak_available, make_meeting, speak
from tests.support.rpc import RpcClient, RpcError
from tests.support.runs import finished
from tests.unit.agents.fake_openai import call, running_fake_openai
from tests.unit.agents.support import workspace_server

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng makes the meetings: `make apt-deps`")

OUTCOME = {
    "summary": "The team planned the release.",
    "enhancedNotes": "- release on Thursday\n- migration moved",
    "actionItems": [{"text": "Write the summary", "owner": "Bo", "due": "Friday"}],
    "decisions": ["Freeze features two days before the release"],
}


async def notes_run(c: RpcClient, ws: str, agent: str, mid: str, tid: str) -> dict[str, Any]:
    made = await c.call("meetings.notesTemplate", workspace_id=ws, agentId=agent, templateId=tid)
    assert made["stateKeys"] == ["meeting_id"]
    await c.call("pipelines.templates.create", workspace_id=ws, template=made["template"])
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid, payload={"meeting_id": mid})
    run = await finished(c, ws, started["runId"])
    assert run["status"] == "completed", json.dumps(run["steps"])
    return run


async def test_the_meeting_notes_template_runs_from_audio_to_notes(tmp_path: Path) -> None:
    m = make_meeting(2, seed=4)
    bo = voiceprint(np.concatenate([speak(SENTENCES[k], m.voices[1]) for k in (2, 12)]), RATE)
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, c, ws):
        adapter = {"type": "openai", "baseUrl": fake.url, "model": "notes"}
        agent = (await c.call("agents.create", workspace_id=ws, name="Scribe", adapter=adapter))["id"]
        fake.script("notes", call("submit_output", OUTCOME))
        mid = await new_meeting(c, ws, m)
        assert (await upload(srv, ws, mid, m.wav(), label="Room")).status_code == 201
        await c.call("meetings.profiles.create", workspace_id=ws, label="Bo", embedding=bo, consented=True)
        run = await notes_run(c, ws, agent, mid, "notes-audio")
        got = await c.call("meetings.get", workspace_id=ws, meetingId=mid)
        assert [s["speaker"] for s in got["transcript"]] == [{1: "Person 1", 2: "Bo"}[t.speaker] for t in m.turns]
        assert [n["summary"] for n in got["notes"]] == [OUTCOME["summary"]]
        assert [(a["text"], a["owner"], a["due"]) for a in got["actionItems"]] == [
            ("Write the summary", "Bo", "Friday")
        ]
        assert [d["text"] for d in got["decisions"]] == OUTCOME["decisions"]
        assert got["meeting"]["playback"] is True
        # The agent was given the transcript by speaker.
        assert "Bo" in json.dumps(run["state"]["transcript"])


async def test_without_audio_the_template_keeps_the_speakers_and_saves_the_notes(tmp_path: Path) -> None:
    m = make_meeting(2, seed=0, turns=3)
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, c, ws):
        adapter = {"type": "openai", "baseUrl": fake.url, "model": "notes"}
        agent = (await c.call("agents.create", workspace_id=ws, name="Scribe", adapter=adapter))["id"]
        fake.script("notes", call("submit_output", OUTCOME))
        mid = await new_meeting(c, ws, m)
        await notes_run(c, ws, agent, mid, "notes-text")
        got = await c.call("meetings.get", workspace_id=ws, meetingId=mid)
        assert got["transcript"] == fragments(m)  # no audio: no diarisation, so no labels and no merging
        assert [n["summary"] for n in got["notes"]] == [OUTCOME["summary"]]
        assert got["meeting"]["playback"] is False
        for bad in ({"agentId": ""}, {"agentId": "a", "templateId": ""}):
            with pytest.raises(RpcError) as caught:
                await c.call("meetings.notesTemplate", workspace_id=ws, **bad)
            assert caught.value.code == "invalid_args"
