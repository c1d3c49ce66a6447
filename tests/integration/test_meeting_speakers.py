"""The speaker bodies through real pipeline runs on the real server, on meetings spoken by espeak-ng voices and
uploaded over the audio lane: ``meeting.diarize`` labels the transcript ``Person N`` by the known turns and emits
the spans and a diarisation id, the voiceprints kept by the server and never in run state (one channel, or one
voice per channel), ``meeting.identifySpeakers`` names the speaker whose saved voice profile matches and no other,
and with ``meeting.updateTranscript`` the named turns are saved; ``meetings.profiles.fromSpeaker`` keeps a diarised
speaker's voiceprint as a member's profile. The no-op paths: no retained audio passes the transcript through, no
profiles or no kept voiceprints change nothing. Refusals: no meeting, limits one past (and at) their bounds, a
malformed diarisation id in state, voiceprints put in state not used."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hangar.core.principal import Role
from hangar.errors import InvalidArgs, NotFound, Refused, Unavailable
from hangar.identity import IdentityService
from hangar.meetings import diarize_process, store, voiceprints
from hangar.meetings.diarize import VOICEPRINT_DIM, voiceprint
from tests.integration.test_meeting_audio import upload
from tests.integration.test_meeting_bodies import completed, run_body
from tests.support.meetings import RATE, SENTENCES, VOICES, Meeting, espeak_available, make_meeting, speak, to_wav
from tests.support.rpc import RpcClient
from tests.support.runs import finished
from tests.unit.agents.support import template, workspace_server

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng makes the meetings: `make apt-deps`")


def fragments(m: Meeting) -> list[dict[str, Any]]:
    """A transcript as a transcription adapter gives it: each known turn in two unlabelled fragments."""
    out = []
    for n, turn in enumerate(m.turns):
        mid = (turn.start + turn.end) / 2
        out += [
            {"start": round(turn.start, 3), "end": round(mid, 3), "speaker": "", "text": f"turn {n} begins"},
            {"start": round(mid, 3), "end": round(turn.end, 3), "speaker": "", "text": f"and ends {n}."},
        ]
    return out


def expected_labels(m: Meeting, names: dict[int, str] | None = None) -> list[str]:
    """Diarised speakers are numbered by first appearance, as the meeting's own turns are."""
    return [(names or {}).get(t.speaker, f"Person {t.speaker}") for t in m.turns for _ in range(2)]


async def new_meeting(c: RpcClient, ws: str, m: Meeting | None) -> str:
    made = await c.call("meetings.create", workspace_id=ws, title="Weekly sync")
    if m is not None:
        await c.call("meetings.importTranscript", workspace_id=ws, meetingId=made["id"], format="json",
                     content=json.dumps(fragments(m)))  # fmt: skip
    return str(made["id"])


async def kept(srv: Any, ws: str, mid: str, prints: dict[str, list[float]]) -> str:
    """A diarisation of the meeting whose voiceprints the server keeps (as ``meeting.diarize`` saves them)."""
    engine = await srv.ctx.dbs.workspace(ws)
    return await voiceprints.save(engine, mid, prints, run_id=None, now=srv.ctx.clock.now())


def number_lists(value: Any) -> list[list[Any]]:
    """Every list of numbers anywhere in ``value`` that is as long as a voiceprint, or longer."""
    found: list[list[Any]] = []
    if isinstance(value, dict):
        for v in value.values():
            found += number_lists(v)
    elif isinstance(value, list):
        if len(value) >= VOICEPRINT_DIM and all(isinstance(v, int | float) for v in value):
            found.append(value)
        for v in value:
            found += number_lists(v)
    return found


async def run_chain(c: RpcClient, ws: str, tid: str, payload: dict[str, Any], *steps: dict[str, Any]) -> dict[str, Any]:
    await c.call("pipelines.templates.create", workspace_id=ws, template=template(*steps, tid=tid))
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid, payload=payload)
    return await finished(c, ws, started["runId"])


async def test_diarize_labels_the_transcript_by_the_known_turns_and_emits_spans_and_voiceprints(
    tmp_path: Path,
) -> None:
    m = make_meeting(3, seed=0)
    async with workspace_server(tmp_path) as (srv, c, ws):
        mid = await new_meeting(c, ws, m)
        assert (await upload(srv, ws, mid, m.wav(), label="Room")).status_code == 201
        done = await run_body(c, ws, "meeting.diarize", {"meeting_id": mid})
        out = completed(done)
        assert out["diarized"] is True and out["speakers"] == ["Person 1", "Person 2", "Person 3"]
        assert out["seconds"] == pytest.approx(m.seconds, abs=0.05)
        state = done["run"]["state"]
        assert [s["speaker"] for s in state["transcript"]] == expected_labels(m)
        assert [s["text"] for s in state["transcript"]] == [f["text"] for f in fragments(m)]
        spans = state["diarization_spans"]
        assert {s["speaker"] for s in spans} == {"Person 1", "Person 2", "Person 3"}
        assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(spans))
        # The voiceprints are the server's, under the diarisation's id: state holds the id, no voiceprint.
        assert "speaker_embeddings" not in state and number_lists(done["run"]) == []
        prints = await voiceprints.of_diarisation(await srv.ctx.dbs.workspace(ws), mid, state["diarization_id"])
        assert sorted(prints) == ["Person 1", "Person 2", "Person 3"]
        assert all(len(v) == VOICEPRINT_DIM for v in prints.values())
        # Relabelling is handed on, not saved: meeting.updateTranscript saves.
        stored = (await c.call("meetings.get", workspace_id=ws, meetingId=mid))["transcript"]
        assert stored == fragments(m)


async def test_one_voice_per_channel_is_diarised_from_the_mixed_channels(tmp_path: Path) -> None:
    m = make_meeting(2, seed=1)
    async with workspace_server(tmp_path) as (srv, c, ws):
        mid = await new_meeting(c, ws, m)
        for who in (1, 2):
            # Each channel is one person's microphone: their own turns, quiet (a faint floor) elsewhere.
            own = np.random.default_rng(who).normal(0.0, 0.001, m.samples.size)
            for t in m.turns:
                if t.speaker == who:
                    a, b = int(t.start * RATE), int(t.end * RATE)
                    own[a:b] = m.samples[a:b]
            assert (await upload(srv, ws, mid, to_wav(own), label=f"Mic {who}")).status_code == 201
        done = await run_body(c, ws, "meeting.diarize", {"meeting_id": mid})
        assert completed(done)["channels"] == 2
        assert [s["speaker"] for s in done["run"]["state"]["transcript"]] == expected_labels(m)


async def test_the_matching_voice_profile_names_its_speaker_and_update_transcript_saves_the_turns(
    tmp_path: Path,
) -> None:
    m = make_meeting(2, seed=2)
    async with workspace_server(tmp_path) as (srv, c, ws):
        mid = await new_meeting(c, ws, m)
        assert (await upload(srv, ws, mid, m.wav())).status_code == 201
        # Bo's profile: a voiceprint of the voice of Person 2 saying other words, recorded apart.
        person2_voice = m.voices[1]
        stranger = next(v for v in VOICES if v not in m.voices)
        bo = voiceprint(np.concatenate([speak(SENTENCES[k], person2_voice) for k in (3, 9)]), RATE)
        other = voiceprint(np.concatenate([speak(SENTENCES[k], stranger) for k in (3, 9)]), RATE)
        await c.call("meetings.profiles.create", workspace_id=ws, label="Bo", embedding=bo, consented=True)
        bob = await srv.new_user_token(ws, "member", name="bob")
        async with RpcClient(srv.ws_url, bob) as c_bob:
            await c_bob.call("meetings.profiles.create", workspace_id=ws, label="Stranger", embedding=other,
                             consented=True)  # fmt: skip
            # A profile whose embedding is not a voiceprint cannot be compared: not used.
            await c_bob.call("meetings.profiles.create", workspace_id=ws, label="Odd", embedding=[1.0] * 7,
                             consented=True)  # fmt: skip
        run = await run_chain(
            c, ws, "speakers", {"meeting_id": mid},
            {"id": "diarize", "body": "meeting.diarize"},
            {"id": "identify", "body": "meeting.identifySpeakers", "config": {"outputKey": "identified"}},
            {"id": "update", "body": "meeting.updateTranscript"},
        )  # fmt: skip
        assert run["status"] == "completed", json.dumps(run["steps"])
        found = run["state"]["identified"]
        assert [(f["speaker"], f["label"]) for f in found["matches"]] == [("Person 2", "Bo")]
        assert found["unmatched"] == ["Person 1"]
        assert "speaker_embeddings" not in run["state"] and number_lists(run) == []
        stored = (await c.call("meetings.get", workspace_id=ws, meetingId=mid))["transcript"]
        # Fragments merged into turns, each turn named: Person 1 stays, Person 2 is Bo.
        want = [{1: "Person 1", 2: "Bo"}[t.speaker] for t in m.turns]
        assert [s["speaker"] for s in stored] == want
        assert [s["text"] for s in stored] == [f"turn {n} begins and ends {n}." for n in range(len(m.turns))]


async def test_without_retained_audio_the_transcript_passes_through_unchanged(tmp_path: Path) -> None:
    m = make_meeting(2, seed=0, turns=3)
    async with workspace_server(tmp_path) as (_srv, c, ws):
        mid = await new_meeting(c, ws, m)
        done = await run_body(c, ws, "meeting.diarize", {"meeting_id": mid})
        assert completed(done) == {"meetingId": mid, "diarized": False, "reason": "no retained audio"}
        assert done["run"]["state"]["transcript"] == fragments(m)
        assert done["run"]["state"]["diarization_spans"] == []
        # The whole chain then changes nothing stored.
        run = await run_chain(
            c, ws, "noaudio", {"meeting_id": mid},
            {"id": "diarize", "body": "meeting.diarize"},
            {"id": "identify", "body": "meeting.identifySpeakers", "config": {"outputKey": "identified"}},
            {"id": "update", "body": "meeting.updateTranscript", "config": {"outputKey": "updated"}},
        )  # fmt: skip
        assert run["status"] == "completed"
        assert run["state"]["identified"]["reason"] == "no speaker embeddings"
        assert run["state"]["updated"]["updated"] is False
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=mid))["transcript"] == fragments(m)


async def test_identify_speakers_changes_nothing_without_profiles_or_embeddings(tmp_path: Path) -> None:
    handed = [{"start": 0.0, "end": 2.0, "speaker": "Person 1", "text": "Hello."}]
    vec = voiceprint(speak(SENTENCES[0], VOICES[0]), RATE)
    async with workspace_server(tmp_path) as (srv, c, ws):
        mid = await new_meeting(c, ws, None)
        diarised = await kept(srv, ws, mid, {"Person 1": vec})
        payload = {"meeting_id": mid, "transcript": handed, "diarization_id": diarised}
        done = await run_body(c, ws, "meeting.identifySpeakers", payload)
        assert completed(done) == {"meetingId": mid, "identified": 0, "reason": "no voice profiles"}
        assert "transcript" not in done["run"]["state"]  # nothing rewritten: the trigger's transcript stands
        await c.call("meetings.profiles.create", workspace_id=ws, label="Ada", embedding=vec, consented=True)
        # No diarisation; one that kept no voiceprint (no speech); another meeting's; and voiceprints put in the
        # run's payload, which are its starter's and never compared with the profiles.
        other = await new_meeting(c, ws, None)
        for extra in ({}, {"diarization_id": await kept(srv, ws, mid, {})},
                      {"diarization_id": await kept(srv, ws, other, {"Person 1": vec})},
                      {"speaker_embeddings": {"Person 1": vec}}):  # fmt: skip
            done = await run_body(c, ws, "meeting.identifySpeakers", {"meeting_id": mid, "transcript": handed, **extra})
            assert completed(done)["reason"] == "no speaker embeddings", extra
            assert "transcript" not in done["run"]["state"]
        # With both, the same voice is named (the positive side of the same run).
        done = await run_body(c, ws, "meeting.identifySpeakers", payload)
        assert completed(done)["identified"] == 1
        assert done["run"]["state"]["transcript"][0]["speaker"] == "Ada"


async def test_bad_state_and_limits_fail_the_step_naming_what_was_wrong(tmp_path: Path) -> None:
    voice = speak(" ".join(SENTENCES[:6]), VOICES[0])
    minute = np.resize(voice, 60 * RATE)
    async with workspace_server(tmp_path) as (srv, c, ws):
        for body in ("meeting.diarize", "meeting.identifySpeakers"):
            for payload in ({}, {"meeting_id": "no-such-meeting"}):
                done = await run_body(c, ws, body, payload)
                assert done["run"]["status"] == "failed" and "meeting_id" in done["step"]["error"]
        mid = await new_meeting(c, ws, None)
        for bad in (5, "", ["x"], {"id": "x"}, "x" * 65):
            done = await run_body(c, ws, "meeting.identifySpeakers", {"meeting_id": mid, "diarization_id": bad})
            assert done["run"]["status"] == "failed" and "diarization_id" in done["step"]["error"], bad

        async def diarize_with(extras: dict[str, Any]) -> dict[str, Any]:
            tid = f"limits-{len(json.dumps(extras))}-{abs(hash(json.dumps(extras))) % 10**8}"
            return await run_chain(c, ws, tid, {"meeting_id": mid},
                                   {"id": "do", "body": "meeting.diarize", "config": {"extras": extras}})  # fmt: skip

        limits: list[tuple[dict[str, Any], bool]] = [
            ({"maxSpeakers": 32}, True), ({"maxSpeakers": 33}, False), ({"maxSpeakers": 0}, False),
            ({"maxMinutes": 360}, True), ({"maxMinutes": 361}, False), ({"maxSpeakers": "2"}, False),
        ]  # fmt: skip
        for extras, ok in limits:
            run = await diarize_with(extras)
            assert (run["status"] == "completed") is ok, (extras, run["status"])
            if not ok:
                step = next(s for s in run["steps"] if s["stepId"] == "do")
                assert next(iter(extras)) in step["error"]
        # maxMinutes holds at its value and refuses past it: a minute of audio, then a minute and a second.
        assert (await upload(srv, ws, mid, to_wav(minute))).status_code == 201
        assert (await diarize_with({"maxMinutes": 1}))["status"] == "completed"
        longer = await new_meeting(c, ws, None)
        assert (await upload(srv, ws, longer, to_wav(np.resize(voice, 61 * RATE)))).status_code == 201
        one_minute = {"id": "do", "body": "meeting.diarize", "config": {"extras": {"maxMinutes": 1}}}
        run = await run_chain(c, ws, "too-long", {"meeting_id": longer}, one_minute)
        assert run["status"] == "failed"
        assert "maxMinutes" in next(s for s in run["steps"] if s["stepId"] == "do")["error"]


async def test_max_minutes_bounds_the_audio_of_all_channels_together(tmp_path: Path) -> None:
    # Every channel is read to diarise, so the limit is on their sum, not on the longest: 16 channels of the
    # longest allowed would otherwise be held at once. Two half minutes are a minute (accepted); two of 0.51
    # minutes are past it (refused, naming maxMinutes), though each alone is well within it.
    voice = speak(" ".join(SENTENCES[:6]), VOICES[0])
    async with workspace_server(tmp_path) as (srv, c, ws):
        one_minute = {"id": "do", "body": "meeting.diarize", "config": {"extras": {"maxMinutes": 1}}}
        for n, (seconds, ok) in enumerate(((30.0, True), (30.6, False))):
            mid = await new_meeting(c, ws, None)
            for who in ("Ada", "Bo"):
                data = to_wav(np.resize(voice, int(seconds * RATE)))
                assert (await upload(srv, ws, mid, data, label=who)).status_code == 201
            run = await run_chain(c, ws, f"total-{n}", {"meeting_id": mid}, one_minute)
            assert (run["status"] == "completed") is ok, (seconds, run["status"])
            if not ok:
                error = next(s for s in run["steps"] if s["stepId"] == "do")["error"]
                assert "maxMinutes" in error and "2 channels" in error, error


async def _bob_with_a_voice(srv: Any, c: RpcClient, ws: str, vec: list[float]) -> str:
    bob = await srv.new_user_token(ws, "member", name="bob")
    bob_id = (await srv.ctx.service(IdentityService).authenticate(bob)).user_id
    async with RpcClient(srv.ws_url, bob) as c_bob:
        await c_bob.call("meetings.profiles.create", workspace_id=ws, label="Bob", embedding=vec, consented=True)
    return str(bob_id)


async def test_a_removed_members_voice_profile_names_no_speaker(tmp_path: Path) -> None:
    # identifySpeakers reads membership afresh: a removal whose event was never seen (made by another process,
    # here without one) already keeps the removed member's voice from naming anyone.
    handed = [{"start": 0.0, "end": 2.0, "speaker": "Person 1", "text": "Hello."}]
    vec = voiceprint(speak(SENTENCES[0], VOICES[0]), RATE)
    async with workspace_server(tmp_path) as (srv, c, ws):
        mid = await new_meeting(c, ws, None)
        bob_id = await _bob_with_a_voice(srv, c, ws, vec)
        diarised = await kept(srv, ws, mid, {"Person 1": vec})
        payload = {"meeting_id": mid, "transcript": handed, "diarization_id": diarised}
        done = await run_body(c, ws, "meeting.identifySpeakers", payload)
        assert completed(done)["identified"] == 1  # while Bob is a member his voice names him
        await srv.ctx.service(IdentityService).remove_member(ws, bob_id)
        done = await run_body(c, ws, "meeting.identifySpeakers", payload)
        assert completed(done) == {"meetingId": mid, "identified": 0, "reason": "no voice profiles"}
        assert "transcript" not in done["run"]["state"]
        assert (await c.call("meetings.profiles.list", workspace_id=ws))["profiles"] == []


async def test_removing_a_member_deletes_their_voice_profiles_and_a_re_added_member_has_none(
    tmp_path: Path,
) -> None:
    vec = voiceprint(speak(SENTENCES[0], VOICES[0]), RATE)
    async with workspace_server(tmp_path) as (srv, c, ws):
        bob_id = await _bob_with_a_voice(srv, c, ws, vec)
        await c.call("members.remove", workspace_id=ws, userId=bob_id)
        # The removal itself deletes the stored profile, with no listing or use of profiles in between.
        engine = await srv.ctx.dbs.workspace(ws)
        for _ in range(600):
            if not await store.voice_profiles(engine, bob_id):
                break
            await asyncio.sleep(0.05)
        assert await store.voice_profiles(engine, bob_id) == []
        await srv.ctx.service(IdentityService).add_member(ws, bob_id, Role.member)
        assert (await c.call("meetings.profiles.list", workspace_id=ws, userId=bob_id))["profiles"] == []


async def test_diarisation_past_its_memory_bound_fails_the_step_and_keeps_what_is_stored(tmp_path: Path) -> None:
    # Diarisation runs in a child process of its own, its memory bounded by meetings.diarizationMemoryMb: at the
    # setting's least (64 MB) the child cannot even load its arrays, and the step fails saying so and naming the
    # setting, with the stored transcript as it was; at the default the same meeting is diarised.
    m = make_meeting(2, seed=0, turns=4)
    async with workspace_server(tmp_path) as (srv, c, ws):
        settings = srv.ctx.service(IdentityService)
        for value in (63, 65537, "64"):
            with pytest.raises(InvalidArgs, match=diarize_process.MEMORY_SETTING):
                await settings.set_setting(diarize_process.MEMORY_SETTING, value)
        for value in (0, 86401):
            with pytest.raises(InvalidArgs, match=diarize_process.CPU_SETTING):
                await settings.set_setting(diarize_process.CPU_SETTING, value)
        mid = await new_meeting(c, ws, m)
        assert (await upload(srv, ws, mid, m.wav(), label="Room")).status_code == 201
        await settings.set_setting(diarize_process.MEMORY_SETTING, 64)
        chain = [{"id": "diarize", "body": "meeting.diarize"},
                 {"id": "update", "body": "meeting.updateTranscript", "config": {"outputKey": "updated"}}]  # fmt: skip
        run = await run_chain(c, ws, "tiny-memory", {"meeting_id": mid}, *chain)
        assert run["status"] == "failed"
        error = next(s for s in run["steps"] if s["stepId"] == "diarize")["error"]
        assert "ran out of its 64 MB of memory" in error and diarize_process.MEMORY_SETTING in error, error
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=mid))["transcript"] == fragments(m)
        await settings.set_setting(diarize_process.MEMORY_SETTING, diarize_process.MEMORY_MB_RANGE[1])
        run = await run_chain(c, ws, "enough-memory", {"meeting_id": mid}, *chain)
        assert run["status"] == "completed" and run["state"]["updated"]["speakers"] == ["Person 1", "Person 2"]


async def test_a_child_that_dies_fails_the_step_with_its_reason(tmp_path: Path) -> None:
    # The CPU bound (meetings.diarizationCpuSeconds) ends a child that spins: here a child made to spin stands
    # for a recording that takes too long; the step fails naming the setting, nothing stored changes.
    spin = [sys.executable, "-c", "while True: pass"]
    limits = dataclasses.replace(diarize_process.BASE_LIMITS, cpu_s=1, seconds=30.0)
    with pytest.raises(Refused, match=f"1 s of CPU time \\({diarize_process.CPU_SETTING}\\)"):
        await diarize_process.run_child(spin, [], limits)
    limits = dataclasses.replace(diarize_process.BASE_LIMITS, cpu_s=30, seconds=1.0)
    with pytest.raises(Refused, match="did not finish within 1 s of wall clock"):
        await diarize_process.run_child(spin, [], limits)
    crash = [sys.executable, "-c", "import sys; sys.exit('the child broke')"]
    with pytest.raises(Unavailable, match="exited with status 1 \\(the child broke\\)"):
        await diarize_process.run_child(crash, [], diarize_process.BASE_LIMITS)


async def test_the_child_answers_the_same_confined_and_under_trusted_host_execution(tmp_path: Path) -> None:
    m = make_meeting(2, seed=0, turns=4)
    wav = tmp_path / "channel.wav"
    wav.write_bytes(m.wav())
    confined = await diarize_process.diarised_apart([wav], 8, diarize_process.BASE_LIMITS)
    plain = await diarize_process.diarised_apart([wav], 8, diarize_process.BASE_LIMITS, confined=False)
    assert confined == plain and [s["speaker"] for s in confined["spans"]][:2] == ["Person 1", "Person 2"]
    # A channel that is not a server-made file (a symlink in its place) is never opened.
    link = tmp_path / "link.wav"
    link.symlink_to(wav)
    with pytest.raises(NotFound):
        await diarize_process.diarised_apart([link], 8, diarize_process.BASE_LIMITS)
