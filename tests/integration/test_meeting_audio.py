"""A meeting's retained audio over the real HTTP lane: a channel is uploaded with a device credential, checked by
ffprobe and normalised by ffmpeg (both confined) to 16 kHz mono 16-bit WAV kept under the workspace's folder by the
server's own ids; bytes that are not audio are refused with a sentence saying so; the size bound holds at its value
and refuses one byte past it; who may upload and listen is checked; the store accessors the diarisation bodies use
read the normalised channels."""

from __future__ import annotations

import io
import subprocess
import wave
from pathlib import Path

import httpx
import pytest

from hangar.identity import IdentityService
from hangar.meetings import files, store
from hangar.meetings.routes import MAX_CHANNEL_SECONDS_SETTING, MAX_CHANNEL_SETTING, MAX_STORED_SETTING
from tests.support.server import RunningServer
from tests.unit.agents.support import workspace_server


def tone(path: Path, seconds: float, freq: int = 440, rate: int = 44100, fmt: str | None = None) -> bytes:
    """A sine tone made by ffmpeg (the test's own, trusted), in the format ``path``'s suffix names."""
    argv = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"sine=frequency={freq}:duration={seconds}",
            "-ar", str(rate), "-ac", "2"]  # fmt: skip
    subprocess.run([*argv, *(["-f", fmt] if fmt else []), str(path)], check=True)
    return path.read_bytes()


def channels_url(srv: RunningServer, ws: str, meeting_id: str) -> str:
    return f"{srv.url}/meeting-audio/{ws}/{meeting_id}/channels"


async def upload(
    srv: RunningServer, ws: str, meeting_id: str, data: bytes, label: str = "Ada", token: str | None = None
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=300) as http:
        return await http.post(
            channels_url(srv, ws, meeting_id),
            params={"label": label},
            content=data,
            headers={"Authorization": f"Bearer {token or srv.owner_token}"},
        )


def wav_facts(data: bytes) -> tuple[int, int, int, int]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getnchannels(), w.getframerate(), w.getsampwidth(), w.getnframes()


async def test_a_channel_is_normalised_to_16khz_mono_and_read_by_the_accessors(tmp_path: Path) -> None:
    ogg = tone(tmp_path / "ada.ogg", 2.0)
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        answer = await upload(srv, ws, m["id"], ogg)
        assert answer.status_code == 201, answer.text
        channel = answer.json()
        assert channel["label"] == "Ada" and channel["sourceFormat"] == "ogg"
        assert channel["uploadedBytes"] == len(ogg) and channel["seconds"] == pytest.approx(2.0, abs=0.05)

        engine = await srv.ctx.dbs.workspace(ws)
        [kept] = await store.channels(engine, m["id"])
        assert kept.id == channel["id"]
        path = files.channel_path(srv.ctx, ws, m["id"], kept.id)
        assert path.is_relative_to(srv.ctx.datadir.workspace_dir(ws))
        data = files.read_channel(srv.ctx, ws, m["id"], kept.id)
        assert data == path.read_bytes()
        channels, rate, width, frames = wav_facts(data)
        assert (channels, rate, width) == (1, 16000, 2) and frames == kept.samples
        assert [p.name for p in path.parent.iterdir()] == [path.name]  # nothing left of the upload

        got = await c.call("meetings.get", workspace_id=ws, meetingId=m["id"])
        assert [ch["id"] for ch in got["channels"]] == [kept.id]

        await c.call("meetings.delete", workspace_id=ws, meetingId=m["id"])
        assert not path.parent.exists()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"hello, this is plainly text and not a recording\n" * 50, "the upload is not audio"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\xff" * 200, "the upload is not audio"),
        (b"", "it was empty"),
    ],
)
async def test_bytes_that_are_not_audio_are_refused_and_nothing_is_kept(tmp_path: Path, data: bytes, said: str) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        answer = await upload(srv, ws, m["id"], data)
        assert answer.status_code in (400, 422), answer.text
        assert said in answer.json()["error"]["message"]
        assert (await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["channels"] == []
        folder = files.meeting_dir(srv.ctx, ws, m["id"])
        assert not folder.exists() or list(folder.iterdir()) == []


async def test_a_video_without_sound_is_not_audio(tmp_path: Path) -> None:
    silent = tmp_path / "silent.mkv"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=black:s=32x32:d=1", str(silent)],
                   check=True)  # fmt: skip
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        answer = await upload(srv, ws, m["id"], silent.read_bytes())
        assert answer.status_code == 422 and "holds no audio stream" in answer.json()["error"]["message"]


async def test_the_channel_size_bound_holds_at_its_value_and_refuses_one_byte_more(tmp_path: Path) -> None:
    wav = tone(tmp_path / "bo.wav", 0.5, rate=16000)
    async with workspace_server(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(MAX_CHANNEL_SETTING, len(wav))
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        at_limit = await upload(srv, ws, m["id"], wav)
        assert at_limit.status_code == 201, at_limit.text
        over = await upload(srv, ws, m["id"], wav + b"\x00")
        assert over.status_code == 413 and str(len(wav)) in over.json()["error"]["message"]
        assert len((await c.call("meetings.get", workspace_id=ws, meetingId=m["id"]))["channels"]) == 1


async def test_who_may_upload_and_an_id_is_a_record_never_a_path(tmp_path: Path) -> None:
    wav = tone(tmp_path / "x.wav", 0.3)
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        guest = await srv.new_user_token(ws, "guest", name="gus")
        assert (await upload(srv, ws, m["id"], wav, token=guest)).status_code == 403
        other_ws = await srv.new_workspace("other")
        outsider = await srv.new_user_token(other_ws, "owner", name="olga")
        assert (await upload(srv, ws, m["id"], wav, token=outsider)).status_code == 403
        assert (await upload(srv, ws, m["id"], wav, token="not-a-credential")).status_code == 401
        assert (await upload(srv, ws, "..%2F..%2Fetc", wav)).status_code == 404
        assert (await upload(srv, ws, "no-such-meeting", wav)).status_code == 404
        assert not (srv.ctx.datadir.workspace_dir(ws) / "meetings" / "no-such-meeting").exists()
        member = await srv.new_user_token(ws, "member", name="mo")
        await c.call("guardrails.set", workspace_id=ws, readOnly=True)
        read_only = await upload(srv, ws, m["id"], wav, token=member)
        assert read_only.status_code == 403 and "read-only mode" in read_only.json()["error"]["message"]
        await c.call("guardrails.set", workspace_id=ws, readOnly=False)
        assert (await upload(srv, ws, m["id"], wav, token=member)).status_code == 201

        # Playback is not there until the pipeline assembled it.
        async with httpx.AsyncClient() as http:
            url = f"{srv.url}/meeting-audio/{ws}/{m['id']}/playback"
            missing = await http.get(url, headers={"Authorization": f"Bearer {guest}"})
            assert missing.status_code == 404 and "no playback track" in missing.json()["error"]["message"]
            refused = await http.get(url, headers={"Authorization": f"Bearer {outsider}"})
            assert refused.status_code == 403


async def test_uploads_stop_at_the_channel_count_bound(tmp_path: Path) -> None:
    wav = tone(tmp_path / "x.wav", 0.1, rate=16000)
    async with workspace_server(tmp_path) as (srv, c, ws):
        m = await c.call("meetings.create", workspace_id=ws, title="Panel")
        for n in range(store.MAX_CHANNELS):
            assert (await upload(srv, ws, m["id"], wav, label=f"mic {n}")).status_code == 201
        refused = await upload(srv, ws, m["id"], wav)
        assert refused.status_code == 409 and f"at most {store.MAX_CHANNELS}" in refused.json()["error"]["message"]


def pcm_wav(samples: int) -> bytes:
    """A 16 kHz mono WAV of exactly ``samples`` samples (a quiet ramp), kept sample for sample by the lane."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"".join(((n % 200) - 100).to_bytes(2, "little", signed=True) for n in range(samples)))
    return buf.getvalue()


async def test_the_workspace_stored_audio_budget_holds_at_its_value_and_refuses_one_sample_more(
    tmp_path: Path,
) -> None:
    # 16 MB of Opus can become hours of WAV: the bound is on what is kept, summed over every meeting of the
    # workspace. A budget of 2 seconds: a second in one meeting and a second in another fill it exactly; one
    # sample more is refused, and the refused channel's file is not left behind.
    async with workspace_server(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(MAX_STORED_SETTING, 2)
        first = await c.call("meetings.create", workspace_id=ws, title="Monday")
        second = await c.call("meetings.create", workspace_id=ws, title="Tuesday")
        assert (await upload(srv, ws, first["id"], pcm_wav(16000))).status_code == 201
        over = await upload(srv, ws, second["id"], pcm_wav(16001))
        assert over.status_code == 409, over.text
        assert MAX_STORED_SETTING in over.json()["error"]["message"]
        assert list(files.meeting_dir(srv.ctx, ws, second["id"]).glob("*")) == []
        at_limit = await upload(srv, ws, second["id"], pcm_wav(16000))
        assert at_limit.status_code == 201, at_limit.text
        # Full: even the shortest channel is refused now, in either meeting.
        assert (await upload(srv, ws, first["id"], pcm_wav(1600))).status_code == 409
        assert len((await c.call("meetings.get", workspace_id=ws, meetingId=second["id"]))["channels"]) == 1
        assert len(list(files.meeting_dir(srv.ctx, ws, second["id"]).glob("*"))) == 1
        # Deleting a meeting gives its audio back to the budget.
        await c.call("meetings.delete", workspace_id=ws, meetingId=first["id"])
        assert (await upload(srv, ws, second["id"], pcm_wav(16000))).status_code == 201


async def test_the_audio_kept_of_one_channel_is_a_setting_held_at_its_value(tmp_path: Path) -> None:
    # meetings.maxChannelSeconds: a recording of exactly that length is kept whole; one sample longer is cut to it.
    async with workspace_server(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(MAX_CHANNEL_SECONDS_SETTING, 1)
        m = await c.call("meetings.create", workspace_id=ws, title="Standup")
        for samples in (16000, 16001, 48000):
            answer = await upload(srv, ws, m["id"], pcm_wav(samples))
            assert answer.status_code == 201 and answer.json()["seconds"] == 1.0, (samples, answer.text)
        engine = await srv.ctx.dbs.workspace(ws)
        assert [ch.samples for ch in await store.channels(engine, m["id"])] == [16000, 16000, 16000]
