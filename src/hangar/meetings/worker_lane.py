"""How the meeting bodies on a ``hangar worker`` reach the audio: the retained channels and the playback track lie
in the data directory of the server that took the upload (``hangar.meetings.files``), so a worker reads and writes
them through that server's worker lane (``hangar.pipelines.worker_lane``: its worker credential and the try it
holds, a live claim of the workspace), never through a shared filesystem.

- ``GET /worker/meeting-audio/<workspace id>/<meeting id>/<channel id>``: a retained channel's WAV. The ids are
  looked up in the workspace's records (404 when the meeting or the channel is not there); the file is found by
  the server's own ids.
- ``PUT /worker/meeting-audio/<workspace id>/<meeting id>/playback``: the mixed track ``meeting.assemblePlayback``
  made on the worker, as the body: a WAV (``RIFF``/``WAVE``) of at most ``WAV_HEADER`` bytes plus two bytes a sample
  of the meeting's longest channel (413 past it; 409 without channels), written beside its final name and renamed
  into place; ``204``. The worker records the track in the meeting's row itself (the database is shared).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hangar.core.context import AppContext
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.httpkit.requests import receive_file
from hangar.meetings import files, store
from hangar.pipelines import StepContext, claim_of, lane_of

PREFIX = "/worker/meeting-audio/"
WAV_HEADER = 44  # bytes before the samples in the WAVs Hangar writes (Python's ``wave``)
MIN_BYTES_PER_SECOND = 64 * 1024  # a worker's upload of the playback track (as a person's upload of a channel)
BODY_GRACE_S = 30.0


def wav_limit(samples: int) -> int:
    """The most bytes a WAV of ``samples`` 16-bit mono samples takes."""
    return WAV_HEADER + 2 * samples


async def _records(request: Request) -> tuple[AppContext, str, store.Meeting, list[store.Channel]]:
    app: AppContext = request.app.state.ctx
    ws, meeting_id = request.path_params["workspace_id"], request.path_params["meeting_id"]
    await claim_of(request, ws)
    engine = await app.dbs.workspace(ws)
    meeting = await store.get_meeting(engine, meeting_id)
    return app, ws, meeting, await store.channels(engine, meeting.id)


async def channel_audio(request: Request) -> Response:
    """A retained channel's WAV, for a worker's meeting body."""
    app, ws, meeting, retained = await _records(request)
    channel_id = request.path_params["channel_id"]
    if not any(c.id == channel_id for c in retained):
        raise NotFound(f"meeting {meeting.id} has no channel {channel_id}")
    path = files.channel_path(app, ws, meeting.id, channel_id)
    chunks, size = files.file_stream(path, f"channel {channel_id}'s audio is missing")
    return StreamingResponse(chunks, media_type="audio/wav", headers={"Content-Length": str(size)})


async def playback_audio(request: Request) -> Response:
    """The playback track a worker mixed, kept as the meeting's (see the module docstring)."""
    app, ws, meeting, retained = await _records(request)
    if not retained:
        raise Conflict(f"meeting {meeting.id} has no retained channels to mix")
    limit = wav_limit(max(c.samples for c in retained))
    scratch = files.scratch_path(app, ws, meeting.id, "wav")
    try:
        await receive_file(request, scratch, limit, MIN_BYTES_PER_SECOND, BODY_GRACE_S, "a worker's upload rate")
        head = await asyncio.to_thread(files.read_head, scratch, 12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            raise InvalidArgs("the playback track must be a WAV file", field="body")
        os.rename(scratch, files.playback_path(app, ws, meeting.id))
    finally:
        files.discard(scratch)
    return Response(status_code=204)


# -- the worker's side --------------------------------------------------------------------------------------------


async def fetched_channels(step: StepContext, meeting_id: str, retained: list[store.Channel]) -> list[Path]:
    """On a worker: the channels' WAVs brought from the server into scratch files of this worker's data directory
    (the caller discards them)."""
    lane = lane_of(step.app, f"meeting {meeting_id}'s audio")
    got: list[Path] = []
    try:
        for c in retained:
            scratch = files.scratch_path(step.app, step.workspace_id, meeting_id, "wav")
            got.append(scratch)
            route = f"{PREFIX}{step.workspace_id}/{meeting_id}/{c.id}"
            await lane.download("GET", route, step.try_key, scratch, wav_limit(c.samples))
    except BaseException:
        for fetched in got:
            files.discard(fetched)
        raise
    return got


@contextlib.asynccontextmanager
async def channel_files(step: StepContext, meeting_id: str, retained: list[store.Channel]) -> AsyncIterator[list[Path]]:
    """The channels' WAV files for the block: this process's own in a server; on a worker, brought through the
    lane into scratch files that are discarded when the block ends."""
    if not step.on_worker:
        yield [files.channel_path(step.app, step.workspace_id, meeting_id, c.id) for c in retained]
        return
    paths = await fetched_channels(step, meeting_id, retained)
    try:
        yield paths
    finally:
        for path in paths:
            files.discard(path)


async def send_playback(step: StepContext, meeting_id: str, track: Path) -> None:
    """On a worker: the mixed track handed to the server that keeps the meeting's audio."""
    lane = lane_of(step.app, f"meeting {meeting_id}'s audio")
    await lane.upload(f"{PREFIX}{step.workspace_id}/{meeting_id}/playback", step.try_key, track)


ROUTES = [
    Route(PREFIX + "{workspace_id}/{meeting_id}/playback", playback_audio, methods=["PUT"]),
    Route(PREFIX + "{workspace_id}/{meeting_id}/{channel_id}", channel_audio, methods=["GET"]),
]
