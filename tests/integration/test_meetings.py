"""Meetings on the real server over the real RPC client: records, transcripts imported as WebVTT and JSON (and
refused, naming the segment, when segments overlap or run out of order, the stored transcript kept), speakers
renamed, voice profiles kept only with consent and deleted by their member or an admin, action items made tickets
once, and the store accessors the diarisation bodies use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hangar.errors import InvalidArgs
from hangar.meetings import store
from hangar.meetings.profiles import members_profiles
from hangar.meetings.transcript import MAX_SEGMENTS, Segment
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server

VTT = """WEBVTT

1
00:00:00.000 --> 00:00:02.500
<v Ada>Good morning, everyone.

2
00:00:02.500 --> 00:00:05.000 align:start
<v Bo>Morning. Shall we start with the budget?

00:01:05.000 --> 00:01:07.250
<v Ada><b>Yes</b>, the budget.
"""


async def new_meeting(c: RpcClient, ws: str, title: str = "Weekly sync", **extra: Any) -> dict[str, Any]:
    return dict(await c.call("meetings.create", workspace_id=ws, title=title, **extra))


def segs(*rows: tuple[float, float, str, str]) -> str:
    return json.dumps([{"start": a, "end": b, "speaker": s, "text": t} for a, b, s, t in rows])


async def test_a_meeting_is_recorded_listed_and_its_webvtt_transcript_read_back(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        made = await new_meeting(c, ws, participants=["Ada", "Bo", "Ada"], startedAt="2026-11-02T09:00:00Z")
        assert made["participants"] == ["Ada", "Bo"] and made["playback"] is False
        assert made["startedAt"].startswith("2026-11-02T09:00:00")
        later = await new_meeting(c, ws, "Retro", startedAt="2026-11-09T09:00:00Z")
        listed = (await c.call("meetings.list", workspace_id=ws))["meetings"]
        assert [m["id"] for m in listed] == [later["id"], made["id"]]  # the latest first

        done = await c.call(
            "meetings.importTranscript", workspace_id=ws, meetingId=made["id"], format="webvtt", content=VTT
        )
        assert done == {"meetingId": made["id"], "segments": 3, "speakers": ["Ada", "Bo"]}
        got = await c.call("meetings.get", workspace_id=ws, meetingId=made["id"])
        assert got["transcript"] == [
            {"start": 0.0, "end": 2.5, "speaker": "Ada", "text": "Good morning, everyone."},
            {"start": 2.5, "end": 5.0, "speaker": "Bo", "text": "Morning. Shall we start with the budget?"},
            {"start": 65.0, "end": 67.25, "speaker": "Ada", "text": "Yes, the budget."},
        ]
        assert got["channels"] == [] and got["notes"] == [] and got["actionItems"] == [] and got["decisions"] == []

        renamed = await c.call(
            "meetings.relabelSpeakers", workspace_id=ws, meetingId=made["id"], names={"Ada": "Bo", "Bo": "Ada"}
        )
        assert renamed["segments"] == 3
        got = await c.call("meetings.get", workspace_id=ws, meetingId=made["id"])
        assert [s["speaker"] for s in got["transcript"]] == ["Bo", "Ada", "Bo"]  # swapped at once

        with pytest.raises(RpcError) as unknown:
            await c.call("meetings.get", workspace_id=ws, meetingId="../../etc")
        assert unknown.value.code == "not_found"

        await c.call("meetings.delete", workspace_id=ws, meetingId=made["id"])
        assert [m["id"] for m in (await c.call("meetings.list", workspace_id=ws))["meetings"]] == [later["id"]]


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (
            segs((0, 2, "A", "one"), (1.5, 3, "B", "two")),
            "segment 2 (00:00:01.500 --> 00:00:03.000) overlaps segment 1",
        ),
        (segs((5, 6, "A", "one"), (1, 2, "B", "two")), "segment 2 (00:00:01.000 --> 00:00:02.000) is out of order"),
        (segs((0, 1, "A", "one"), (3, 2, "B", "two")), "segment 2 (00:00:03.000 --> 00:00:02.000) ends before"),
        (segs((0, 1, "A", "one"), (-1, 2, "B", "two")), "segment 2: times must be seconds"),
        ("WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nx\n\n00:00:02.000 --> 00:00:04.000\ny\n", "segment 2"),
        ("not a vtt", "starts with the line WEBVTT"),
        ('[{"start": 0, "end": "1", "text": "x"}]', "segment 1: end must be a number"),
        ("{", "not JSON"),
        # Hostile shapes: nesting past the parser's recursion, numbers past a float or past int's digit limit.
        ("[" * 100_000, "nested too deeply"),
        ('[{"start": 1' + "0" * 400 + ', "end": 2, "text": "x"}]', "segment 1: start must be a number"),
        ('[{"start": 0, "end": ' + "1" * 5000 + ', "text": "x"}]', "not JSON"),
        ("WEBVTT\n\n" + "9" * 400 + ":00:01.000 --> 00:00:03.000\nx\n", "is not a time"),
    ],
)
async def test_a_bad_transcript_is_refused_naming_the_segment_and_the_stored_one_is_kept(
    tmp_path: Path, content: str, named: str
) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        m = await new_meeting(c, ws)
        good = segs((0, 1, "Ada", "hello"), (1, 2, "Bo", "hi"))
        await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json", content=good)
        fmt = "webvtt" if content.startswith(("WEBVTT", "not")) else "json"
        with pytest.raises(RpcError) as refused:
            await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format=fmt, content=content)
        assert refused.value.code == "invalid_args" and named in refused.value.message
        kept = (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["transcript"]
        assert [s["text"] for s in kept] == ["hello", "hi"]


async def test_segments_that_touch_are_accepted_and_the_segment_limit_holds_on_both_sides(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await new_meeting(c, ws)
        touching = segs((0, 1, "A", "one"), (1, 2, "B", "two"), (2, 2, "B", "three"))
        done = await c.call(
            "meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json", content=touching
        )
        assert done["segments"] == 3
        engine = await srv.ctx.dbs.workspace(ws)
        at_limit = [Segment(float(n), float(n) + 0.5, "A", "x") for n in range(MAX_SEGMENTS)]
        assert len(await store.replace_transcript(engine, m["id"], at_limit)) == MAX_SEGMENTS
        with pytest.raises(InvalidArgs, match="at most 20000 segments"):
            await store.replace_transcript(engine, m["id"], [*at_limit, Segment(1e5, 1e5 + 1, "A", "x")])
        assert len(await store.transcript(engine, m["id"])) == MAX_SEGMENTS


async def test_voice_profiles_need_consent_and_belong_to_their_member(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        with pytest.raises(RpcError) as no_consent:
            await c.call("meetings.profiles.create", workspace_id=ws, label="Me", embedding=[0.1, 0.2], consented=False)
        assert no_consent.value.code == "invalid_args" and "consent" in no_consent.value.message
        with pytest.raises(RpcError) as missing:
            await c.call("meetings.profiles.create", workspace_id=ws, label="Me", embedding=[0.1, 0.2])
        assert missing.value.code == "invalid_args"
        with pytest.raises(RpcError) as not_finite:
            await c.call("meetings.profiles.create", workspace_id=ws, label="Me", embedding=[], consented=True)
        assert not_finite.value.code == "invalid_args"
        mine = await c.call(
            "meetings.profiles.create", workspace_id=ws, label="Owner", embedding=[0.5, -0.25, 1.0], consented=True
        )
        assert mine["dimensions"] == 3

        member_token = await srv.new_user_token(ws, "member", name="mia")
        async with RpcClient(srv.ws_url, member_token) as mia:
            own = await mia.call(
                "meetings.profiles.create", workspace_id=ws, label="Mia", embedding=[1.0] * 8, consented=True
            )
            with pytest.raises(RpcError) as others:
                await mia.call(
                    "meetings.profiles.create", workspace_id=ws, label="X", embedding=[1.0], consented=True,
                    userId=mine["userId"],
                )  # fmt: skip
            assert others.value.code == "forbidden"
            with pytest.raises(RpcError) as not_hers:
                await mia.call("meetings.profiles.delete", workspace_id=ws, profileId=mine["id"])
            assert not_hers.value.code == "forbidden"
            await mia.call("meetings.profiles.delete", workspace_id=ws, profileId=own["id"])
            again = await mia.call(
                "meetings.profiles.create", workspace_id=ws, label="Mia", embedding=[0.5] * 4, consented=True
            )
            # A member who leaves takes their voice along: never handed out again, deleted at the next use.
            await mia.call("members.remove", workspace_id=ws, userId=again["userId"])
        assert [p.label for p in await members_profiles(srv.ctx, ws)] == ["Owner"]

        # The accessors the diarisation bodies read: every profile with its embedding (of members only).
        engine = await srv.ctx.dbs.workspace(ws)
        kept = await store.voice_profiles(engine)
        assert [(p.label, p.embedding) for p in kept] == [("Owner", [0.5, -0.25, 1.0])]
        listed = (await c.call("meetings.profiles.list", workspace_id=ws))["profiles"]
        assert [p["id"] for p in listed] == [mine["id"]] and "embedding" not in listed[0]
        await c.call("meetings.profiles.delete", workspace_id=ws, profileId=mine["id"])
        assert (await c.call("meetings.profiles.list", workspace_id=ws))["profiles"] == []


async def test_a_member_deletes_only_their_own_meetings_and_a_guest_only_reads(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        owners = await new_meeting(c, ws, "Board")
        async with RpcClient(srv.ws_url, await srv.new_user_token(ws, "member", name="mo")) as mo:
            with pytest.raises(RpcError) as refused:
                await mo.call("meetings.delete", workspace_id=ws, meetingId=owners["id"])
            assert refused.value.code == "forbidden"
            own = await new_meeting(mo, ws, "Mine")
            await mo.call("meetings.delete", workspace_id=ws, meetingId=own["id"])
        async with RpcClient(srv.ws_url, await srv.new_user_token(ws, "guest", name="gus")) as gus:
            assert len((await gus.call("meetings.list", workspace_id=ws))["meetings"]) == 1
            with pytest.raises(RpcError) as guest:
                await new_meeting(gus, ws)
            assert guest.value.code == "forbidden"


async def test_store_accessors_read_replace_and_relabel_the_transcript(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await new_meeting(c, ws)
        engine = await srv.ctx.dbs.workspace(ws)
        assert await store.transcript(engine, m["id"]) == []
        assert await store.channels(engine, m["id"]) == []
        written = [Segment(0.0, 1.0, "Person 1", "hi"), Segment(1.0, 2.5, "Person 2", "hello")]
        assert await store.replace_transcript(engine, m["id"], written) == written
        assert await store.transcript(engine, m["id"]) == written
        assert await store.relabel_speakers(engine, m["id"], {"Person 2": "Ada"}) == 1
        assert [s.speaker for s in await store.transcript(engine, m["id"])] == ["Person 1", "Ada"]
        with pytest.raises(InvalidArgs, match="overlaps"):
            await store.replace_transcript(engine, m["id"], [written[1], Segment(2.0, 3.0, "x", "y")])
        assert [s.text for s in await store.transcript(engine, m["id"])] == ["hi", "hello"]
