"""Voiceprints stay on the server: a diarised meeting's run, read by a guest of the workspace, holds no voiceprint
(only the diarisation's id), and ``meetings.profiles.fromSpeaker`` keeps a diarised speaker's voiceprint as a
member's voice profile from the server's own table, refused without consent, for a speaker or a member the
workspace does not have, and for a caller whose role does not allow it; the profile it saves then names its
speaker when the meeting is diarised and identified again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.identity import IdentityService
from hangar.meetings import voiceprints
from hangar.meetings.diarize import VOICEPRINT_DIM
from tests.integration.test_meeting_audio import upload
from tests.integration.test_meeting_bodies import completed, run_body
from tests.integration.test_meeting_speakers import new_meeting, number_lists, run_chain
from tests.support.meetings import espeak_available, make_meeting
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng makes the meetings: `make apt-deps`")


async def test_a_guest_reads_no_voiceprint_and_from_speaker_saves_one_that_names_its_speaker(tmp_path: Path) -> None:
    m = make_meeting(2, seed=2)
    async with workspace_server(tmp_path) as (srv, c, ws):
        identity = srv.ctx.service(IdentityService)
        mid = await new_meeting(c, ws, m)
        assert (await upload(srv, ws, mid, m.wav())).status_code == 201
        done = await run_body(c, ws, "meeting.diarize", {"meeting_id": mid})
        assert completed(done)["speakers"] == ["Person 1", "Person 2"]
        run_id = done["run"]["runId"]

        # A guest may read the run: its state, steps and outputs hold the diarisation's id, no voiceprint.
        guest = await srv.new_user_token(ws, "guest", name="gus")
        async with RpcClient(srv.ws_url, guest) as g:
            seen = await g.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
            assert "speaker_embeddings" not in seen["state"], sorted(seen["state"])
            assert number_lists(seen) == []
            diarised = seen["state"]["diarization_id"]
            engine = await srv.ctx.dbs.workspace(ws)
            assert sorted(await voiceprints.of_diarisation(engine, mid, diarised)) == ["Person 1", "Person 2"]
            # A guest changes nothing: not even their own voice profile.
            with pytest.raises(RpcError) as guest_refused:
                await g.call("meetings.profiles.fromSpeaker", workspace_id=ws, meetingId=mid, speaker="Person 1",
                             consented=True)  # fmt: skip
            assert guest_refused.value.code == "forbidden"

        bob = await srv.new_user_token(ws, "member", name="bob")
        bob_id = (await identity.authenticate(bob)).user_id
        mia = await srv.new_user_token(ws, "member", name="mia")
        mia_id = (await identity.authenticate(mia)).user_id
        outsider = await identity.create_user(email="out@example.test", display_name="out")

        async def refused(client: RpcClient, code: str, said: str, **args: object) -> None:
            with pytest.raises(RpcError) as err:
                await client.call("meetings.profiles.fromSpeaker", workspace_id=ws, **args)
            assert err.value.code == code and said in err.value.message, err.value

        async with RpcClient(srv.ws_url, bob) as c_bob:
            await refused(c_bob, "invalid_args", "consent", meetingId=mid, speaker="Person 2", consented=False)
            await refused(c_bob, "invalid_args", "consented", meetingId=mid, speaker="Person 2")
            await refused(c_bob, "not_found", "Person 1, Person 2", meetingId=mid, speaker="Person 9", consented=True)
            await refused(c_bob, "not_found", "no-such-meeting", meetingId="no-such-meeting", speaker="Person 2",
                          consented=True)  # fmt: skip
            empty = await new_meeting(c, ws, None)
            await refused(c_bob, "not_found", "no diarised speakers", meetingId=empty, speaker="Person 2",
                          consented=True)  # fmt: skip
            # A member saves their own voice only; an admin another member's, never a stranger's.
            await refused(c_bob, "forbidden", "admin", meetingId=mid, speaker="Person 1", consented=True,
                          userId=mia_id)  # fmt: skip
            await refused(c, "not_found", outsider.id, meetingId=mid, speaker="Person 1", consented=True,
                          userId=outsider.id)  # fmt: skip
            assert (await c.call("meetings.profiles.list", workspace_id=ws))["profiles"] == []

            own = await c_bob.call("meetings.profiles.fromSpeaker", workspace_id=ws, meetingId=mid,
                                   speaker="Person 2", consented=True)  # fmt: skip
        assert own["userId"] == bob_id and own["label"] == "bob" and own["dimensions"] == VOICEPRINT_DIM
        assert number_lists(own) == []  # the reply names the profile; the voiceprint stays on the server
        theirs = await c.call("meetings.profiles.fromSpeaker", workspace_id=ws, meetingId=mid, speaker="Person 1",
                              consented=True, userId=mia_id, label="Mia", diarizationId=diarised)  # fmt: skip
        assert theirs["userId"] == mia_id and theirs["label"] == "Mia"
        rows = await c.call("audit.list", workspace_id=ws, action="meetings.profiles.fromSpeaker")
        assert sorted(r["details"]["speaker"] for r in rows) == ["Person 1", "Person 2"]
        assert number_lists(rows) == []  # who saved whose voice, from which speaker: never the voiceprint

        # Diarised and identified again: both speakers are named by the profiles saved from them.
        run = await run_chain(
            c, ws, "named", {"meeting_id": mid},
            {"id": "diarize", "body": "meeting.diarize"},
            {"id": "identify", "body": "meeting.identifySpeakers", "config": {"outputKey": "identified"}},
        )  # fmt: skip
        assert run["status"] == "completed", json.dumps(run["steps"])
        found = run["state"]["identified"]
        named = sorted((f["speaker"], f["label"]) for f in found["matches"])
        assert named == [("Person 1", "Mia"), ("Person 2", "bob")]
        assert {s["speaker"] for s in run["state"]["transcript"]} == {"Mia", "bob"}
        assert number_lists(run) == []
