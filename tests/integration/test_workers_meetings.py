"""The meeting bodies on ``hangar worker`` processes: the built-in "meeting notes" template run end to end with every
step done by a worker (the server drives the run and runs no step's body): the worker reads the retained audio
from the server that took the upload and hands the mixed playback track back to it through the worker lane
(``hangar.meetings.worker_lane``, bound to the try it holds).

Real processes: a ``hangar serve`` and a ``hangar worker --server`` on their own data directories, on the suite's
throwaway PostgreSQL cluster; a meeting spoken by two espeak-ng voices; a scripted OpenAI-compatible peer as the
agent; the real RPC client.
"""

from __future__ import annotations

import json
import time
import wave
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from hangar.meetings.diarize import voiceprint
from hangar.meetings.worker_lane import PREFIX, wav_limit
from hangar.pipelines import spec_of_body
from hangar.pipelines.stepqueue import SAFETY_POLL_S, WAITS_FOR_SERVER_WORKER
from hangar.pipelines.worker_lane import TRY_KEY_HEADER
from hangar.server.parts import all_parts
from tests.integration.test_meeting_notes_template import OUTCOME
from tests.integration.test_meeting_speakers import new_meeting
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import (
    fan_out,
    hangar_worker,
    mint,
    server,
    server_and_worker,
    sql,
    start,
    wait_for,
    workers_attached,
)
from tests.support.meetings import RATE, SENTENCES, espeak_available, make_meeting, speak
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import call, running_fake_openai

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not espeak_available(), reason="espeak-ng makes the meetings: `make apt-deps`"),
]

QUEUE = "SELECT step_id, body_key, status, tries FROM hangar_server.pipeline_step_queue WHERE run_id = %s"


def upload(url: str, token: str, ws: str, mid: str, data: bytes) -> httpx.Response:
    return httpx.post(
        f"{url}/meeting-audio/{ws}/{mid}/channels",
        params={"label": "Room"},
        content=data,
        headers={"Authorization": f"Bearer {token}"},
        timeout=300,
    )


async def test_the_meeting_notes_template_is_done_by_a_worker(tmp_path: Path, pg_url: str) -> None:
    m = make_meeting(2, seed=4)
    bo = voiceprint(np.concatenate([speak(SENTENCES[k], m.voices[1]) for k in (2, 12)]), RATE)
    data = tmp_path / "server"
    async with running_fake_openai() as fake:
        with server(tmp_path, pg_url) as (s, token):
            mint(data, pg_url, "pool", tmp_path / "cred")
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
                workers_attached(pg_url, 1)
                async with RpcClient(s.ws_url, token) as c:
                    ws = (await c.call("workspaces.create", name="meet"))["id"]
                    adapter = {"type": "openai", "baseUrl": fake.url, "model": "notes"}
                    agent = (await c.call("agents.create", workspace_id=ws, name="Scribe", adapter=adapter))["id"]
                    fake.script("notes", call("submit_output", OUTCOME))
                    mid = await new_meeting(c, ws, m)
                    assert upload(s.url, token, ws, mid, m.wav()).status_code == 201
                    await c.call("meetings.profiles.create", workspace_id=ws, label="Bo", embedding=bo, consented=True)
                    made = await c.call("meetings.notesTemplate", workspace_id=ws, agentId=agent, templateId="notes")
                    await c.call("pipelines.templates.create", workspace_id=ws, template=made["template"])
                    started = await c.call(
                        "pipelines.runs.start", workspace_id=ws, templateId="notes", payload={"meeting_id": mid}
                    )
                    run_id = started["runId"]
                    run = await finished(c, ws, run_id, timeout=300)
                    assert_completed(run)
                    got = await c.call("meetings.get", workspace_id=ws, meetingId=mid)
                    async with httpx.AsyncClient(timeout=60) as http:
                        played = await http.get(
                            f"{s.url}/meeting-audio/{ws}/{mid}/playback", headers={"Authorization": f"Bearer {token}"}
                        )
    assert [x["speaker"] for x in got["transcript"]] == [{1: "Person 1", 2: "Bo"}[t.speaker] for t in m.turns]
    assert [n["summary"] for n in got["notes"]] == [OUTCOME["summary"]]
    assert [a["text"] for a in got["actionItems"]] == ["Write the summary"]
    assert [d["text"] for d in got["decisions"]] == OUTCOME["decisions"]
    assert got["meeting"]["playback"] is True and played.status_code == 200
    assert played.content[:4] == b"RIFF" and len(played.content) == got["meeting"]["playbackBytes"]
    # Every meeting body (and the agent's step) went through the queue to the worker, once each.
    rows = {r[1]: r[2:] for r in sql(pg_url, QUEUE, run_id)}
    bodies = {spec_of_body(b).key for p in all_parts() if p.name == "meetings" for b in p.bodies}
    assert len(bodies) == 7, bodies  # the meetings part's own bodies (their names: tests/unit/pipelines)
    assert bodies <= set(rows), rows
    assert all(rows[b] == ("done", 1) for b in bodies), rows
    # The worker's scratch copies of the audio are gone; the track lies with the server.
    assert not [p for p in (tmp_path / "w1").rglob("*.wav")]
    assert (data / ws / "meetings" / mid / "playback.wav").exists()
    assert "Bo" in json.dumps(run["state"]["transcript"])


def lane(url: str, method: str, path: str, bearer: str | None, try_key: str, body: bytes = b"") -> httpx.Response:
    headers = {TRY_KEY_HEADER: try_key} | ({"Authorization": f"Bearer {bearer}"} if bearer is not None else {})
    return httpx.request(method, url + path, headers=headers, content=body or None, timeout=60)


def wav_bytes(samples: int) -> bytes:
    import io

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(b"\0\0" * samples)
    return out.getvalue()


async def test_the_audio_lane_answers_only_a_live_claim_and_bounds_the_track(tmp_path: Path, pg_url: str) -> None:
    m = make_meeting(2, seed=0, turns=2)
    data = tmp_path / "server"
    with server_and_worker(tmp_path, pg_url) as (s, token, cred, other):
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="lane"))["id"]
            elsewhere = (await c.call("workspaces.create", name="elsewhere"))["id"]
            mid = await new_meeting(c, ws, m)
            bare = await new_meeting(c, ws, None)
            assert upload(s.url, token, ws, mid, m.wav()).status_code == 201
            [channel] = (await c.call("meetings.get", workspace_id=ws, meetingId=mid))["channels"]
            run_id = await start(c, ws, fan_out("hold", 1, "sleep 30; echo done"))
            live = f"pipeline:{run_id}/s0#1.1"
            wait_for(lambda: [r for r in sql(pg_url, QUEUE, run_id) if r[2] == "claimed"], "the claim")
            samples = round(channel["seconds"] * RATE)
            get = f"{PREFIX}{ws}/{mid}/{channel['id']}"
            put = f"{PREFIX}{ws}/{mid}/playback"

            fetched = lane(s.url, "GET", get, cred, live)
            stored = (data / ws / "meetings" / mid / f"{channel['id']}.wav").read_bytes()
            assert fetched.status_code == 200 and fetched.content == stored
            assert len(stored) == wav_limit(samples)
            # Refused: no credential, a device credential, another worker's, a try not live, another
            # workspace, a key that is not a try's, a channel or meeting not there.
            assert lane(s.url, "GET", get, None, live).status_code == 401
            assert lane(s.url, "GET", get, token, live).status_code == 401
            assert lane(s.url, "GET", get, other, live).status_code == 403
            assert lane(s.url, "GET", get, cred, f"pipeline:{run_id}/s0#1.2").status_code == 403
            assert lane(s.url, "GET", f"{PREFIX}{elsewhere}/{mid}/{channel['id']}", cred, live).status_code == 403
            assert lane(s.url, "GET", get, cred, "not a key").status_code == 400
            assert lane(s.url, "GET", f"{PREFIX}{ws}/{mid}/{bare}", cred, live).status_code == 404
            assert lane(s.url, "GET", f"{PREFIX}{ws}/{bare}/{channel['id']}", cred, live).status_code == 404

            # The track: a WAV as long as the longest channel is kept; one byte more is refused; not a WAV
            # is refused; a meeting without channels has nothing to mix.
            longest = wav_bytes(samples)
            assert len(longest) == wav_limit(samples)
            assert lane(s.url, "PUT", put, cred, live, longest + b"\0").status_code == 413
            assert lane(s.url, "PUT", put, cred, live, b"x" * 100).status_code == 400
            assert lane(s.url, "PUT", f"{PREFIX}{ws}/{bare}/playback", cred, live, longest).status_code == 409
            assert lane(s.url, "PUT", put, other, live, longest).status_code == 403
            assert not (data / ws / "meetings" / mid / "playback.wav").exists()
            assert lane(s.url, "PUT", put, cred, live, longest).status_code == 204
            assert (data / ws / "meetings" / mid / "playback.wav").read_bytes() == longest
            assert not [p for p in (data / ws / "meetings" / mid).iterdir() if p.name.startswith(".")]
            await c.call("pipelines.runs.cancel", workspace_id=ws, runId=run_id)


async def test_a_worker_without_a_server_leaves_the_audio_steps_to_one_with_a_server(
    tmp_path: Path, pg_url: str
) -> None:
    m = make_meeting(2, seed=0, turns=2)
    data = tmp_path / "server"
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger"}]
    for sid, body in (("diarize", "meeting.diarize"), ("mix", "meeting.assemblePlayback")):
        steps.append({"id": sid, "kind": "listen", "body": body, "trigger": {"sourceStepIds": ["start"]}})
    steps.append(
        {
            "id": "sh",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "echo shell", "outputKey": "sh"},
        }
    )

    def queue(run_id: str) -> dict[str, tuple[str, int]]:
        return {step: (status, tries) for step, _, status, tries in sql(pg_url, QUEUE, run_id)}

    with server(tmp_path, pg_url) as (s, token):
        mint(data, pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="noserver"))["id"]
            mid = await new_meeting(c, ws, m)
            assert upload(s.url, token, ws, mid, m.wav()).status_code == 201
            await c.call("pipelines.templates.create", workspace_id=ws, template={"id": "t", "steps": steps})
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log"):
                workers_attached(pg_url, 1)
                started = await c.call(
                    "pipelines.runs.start", workspace_id=ws, templateId="t", payload={"meeting_id": mid}
                )
                run_id = started["runId"]
                # The worker without --server runs the shell step and leaves both audio steps queued.
                wait_for(lambda: queue(run_id).get("sh") == ("done", 1), "the shell step on the worker")
                wait_for(lambda: len(queue(run_id)) == 3, "the audio steps handed over")
                time.sleep(2 * SAFETY_POLL_S)  # the worker's safety polls pass over them too
                left = queue(run_id)
                assert left == {"sh": ("done", 1), "diarize": ("queued", 0), "mix": ("queued", 0)}
                run = await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
                waiting = {st["stepId"]: st["progress"] for st in run["steps"] if st["stepId"] in ("diarize", "mix")}
                assert waiting == {key: {"waitingFor": WAITS_FOR_SERVER_WORKER} for key in ("diarize", "mix")}
            # A worker started with --server takes them and completes them.
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "cred", tmp_path / "w2.log", "--server", s.url):
                assert_completed(await finished(c, ws, run_id, timeout=300))
    assert queue(run_id) == {"sh": ("done", 1), "diarize": ("done", 1), "mix": ("done", 1)}
    assert (data / ws / "meetings" / mid / "playback.wav").is_file()
