"""The HTTP lane of a meeting's audio (bytes travel over HTTP, not the RPC socket), with
``Authorization: Bearer <device credential>``:

- ``POST /meeting-audio/<workspace id>/<meeting id>/channels[?label=<name>]``, the channel's recording as the
  body (any format ffmpeg reads): retained as one channel of the meeting, normalised to 16 kHz mono 16-bit WAV.
  Answers ``201`` with the channel (as ``meetings.get`` lists it). Needs the member role. Refusals: 401, 403, 404
  (no such meeting), 409 (the meeting has ``MAX_CHANNELS`` channels, or the channel would take the workspace's
  kept audio past ``meetings.maxStoredAudioSeconds``, default 180 hours: the channel's file is removed), 413
  (larger than ``meetings.maxChannelBytes``, default 200 MiB), 408 (arriving slower than ``MIN_BYTES_PER_SECOND`` after
  ``BODY_GRACE_S``), 422 (not audio: the message says what ffprobe or ffmpeg found), 429 (the workspace already
  has ``meetings.maxConcurrentUploads`` uploads under way in this process, default 4; ``Retry-After``); 403 as
  well while the workspace is in the guardrails' read-only mode. Access is checked when the upload ends too:
  the credential, the caller's role and the read-only mode are read again once the body has arrived and again
  just before the channel is recorded, so a member removed or demoted during the transfer gets 403 (401 for a
  revoked credential) and nothing is kept.
- ``GET /meeting-audio/<workspace id>/<meeting id>/playback``: the mixed playback track (``audio/wav``) that
  ``meeting.assemblePlayback`` made; 404 before it did. Any member, guests included. The track is sent in pieces
  of ``PLAYBACK_PIECE`` bytes, each admitted only while the caller may still read it (checked again whenever
  authority changed): a member removed mid-track gets no further piece, and the connection is closed short.

The ids in the path are looked up in the workspace's records; the files are found by the server's own ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Iterator

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.core.principal import Principal, Role
from hangar.core.settings import SettingSpec, strict_int
from hangar.errors import Forbidden, HangarError, InvalidArgs, NotFound, Refused, Unauthenticated
from hangar.httpkit.requests import bearer_token, receive_file
from hangar.identity import IdentityService
from hangar.meetings import audio, files, store
from hangar.meetings.results import ChannelView
from hangar.meetings.transcript import MAX_SPEAKER
from hangar.rpc.access import Revocable
from hangar.rpc.guardrails import WORKSPACE_SCOPE, Guardrails

log = logging.getLogger("hangar.meetings")

PREFIX = "/meeting-audio/"
MAX_CHANNEL_SETTING = "meetings.maxChannelBytes"
DEFAULT_MAX_CHANNEL_BYTES = 200 << 20
CEILING_CHANNEL_BYTES = 4 << 30
# What a workspace keeps of meeting audio, summed over all its meetings' channels (each kept as 16 kHz 16-bit WAV,
# 32,000 bytes a second, however small the upload was): 180 hours, about 20 GB.
MAX_STORED_SETTING = "meetings.maxStoredAudioSeconds"
DEFAULT_MAX_STORED_SECONDS = 180 * 3600
CEILING_STORED_SECONDS = 100_000 * 3600
# The audio kept of one channel (the rest of a longer recording is dropped): at most audio.MAX_SECONDS, 6 hours.
MAX_CHANNEL_SECONDS_SETTING = "meetings.maxChannelSeconds"
MIN_BYTES_PER_SECOND = 64 * 1024
BODY_GRACE_S = 30.0
MAX_DECODING = 2  # uploads decoded at once by one process (ffmpeg takes a core each)
# Uploads of one workspace under way at once in one process (each holds a connection, a scratch file and then a
# decoder's turn): one more is refused at once with 429, never queued, so one workspace cannot take the lane.
MAX_UPLOADS_SETTING = "meetings.maxConcurrentUploads"
DEFAULT_MAX_UPLOADS = 4
CEILING_UPLOADS = 64
RETRY_AFTER_S = 30
PLAYBACK_PIECE = 1 << 20  # bytes of the playback track sent between two checks of the caller's access

SETTINGS = [
    SettingSpec(
        MAX_CHANNEL_SETTING,
        f"The largest upload of one meeting audio channel, in bytes (default {DEFAULT_MAX_CHANNEL_BYTES}, "
        f"at most {CEILING_CHANNEL_BYTES}).",
        strict_int(MAX_CHANNEL_SETTING, 1, CEILING_CHANNEL_BYTES),
    ),
    SettingSpec(
        MAX_STORED_SETTING,
        f"The meeting audio one workspace keeps, in seconds over all its meetings' channels (each second is 32,000 "
        f"bytes on disk; default {DEFAULT_MAX_STORED_SECONDS}, about 20 GB; at most {CEILING_STORED_SECONDS}).",
        strict_int(MAX_STORED_SETTING, 1, CEILING_STORED_SECONDS),
    ),
    SettingSpec(
        MAX_CHANNEL_SECONDS_SETTING,
        f"The audio kept of one meeting channel, in seconds; a longer recording is cut there (default and most "
        f"{audio.MAX_SECONDS}, 6 hours).",
        strict_int(MAX_CHANNEL_SECONDS_SETTING, 1, audio.MAX_SECONDS),
    ),
    SettingSpec(
        MAX_UPLOADS_SETTING,
        f"The meeting audio uploads one workspace may have under way at once in one server process; one more is "
        f"refused with 429 (default {DEFAULT_MAX_UPLOADS}, 1 to {CEILING_UPLOADS}).",
        strict_int(MAX_UPLOADS_SETTING, 1, CEILING_UPLOADS),
    ),
]

_decoding = asyncio.Semaphore(MAX_DECODING)


class TooManyUploads(Refused):
    http_status = 429

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this workspace has {limit} meeting audio upload(s) under way already ({MAX_UPLOADS_SETTING}); retry "
            f"in {RETRY_AFTER_S} s",
            detail_code="too_many_uploads",
        )

    def http_headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_S)}


class UploadSlots:
    """Uploads under way per workspace in this process (``meetings.maxConcurrentUploads``)."""

    def __init__(self) -> None:
        self.active: dict[str, int] = {}

    @contextlib.contextmanager
    def held(self, ws: str, limit: int) -> Iterator[None]:
        """A slot of ``ws`` for the block, or ``TooManyUploads``."""
        if self.active.get(ws, 0) >= limit:
            raise TooManyUploads(limit)
        self.active[ws] = self.active.get(ws, 0) + 1
        try:
            yield
        finally:
            left = self.active[ws] - 1
            if left:
                self.active[ws] = left
            else:
                del self.active[ws]


UPLOADS = UploadSlots()


async def _check(app: AppContext, principal: Principal, ws: str, *, changes: bool, action: str, when: str) -> None:
    """That ``principal`` may read (or, ``changes``, change) the workspace's meeting audio, read now."""
    principal.check_reach(ws, changes=changes, action=action, op=False)
    if principal.agent_id is None:
        role = await app.service(IdentityService).role_of(ws, principal.user_id, as_of=principal.authority)
        if role is None:
            raise Forbidden(f"you are not a member of workspace {ws}{when}")
        if changes and role < Role.member:
            raise Forbidden(f"{action} needs the member role; you are {role.name}{when}")


async def _caller(request: Request, *, changes: bool, action: str) -> tuple[AppContext, Principal, str, str]:
    """The app, the caller (a member, or a guest for reads) and the path's workspace and meeting ids."""
    app: AppContext = request.app.state.ctx
    principal = await app.service(IdentityService).authenticate_bearer(request)
    ws, meeting_id = request.path_params["workspace_id"], request.path_params["meeting_id"]
    await _check(app, principal, ws, changes=changes, action=action, when="")
    return app, principal, ws, meeting_id


async def _still_allowed(request: Request, ws: str, *, changes: bool, action: str, when: str) -> None:
    """Access checked again while a transfer runs or as it ends: the credential (revoked, its user deactivated, its
    session over) and the caller's role, read afresh (a member may be removed or demoted mid-transfer, by any
    process)."""
    app: AppContext = request.app.state.ctx
    token = bearer_token(request.headers.get("authorization")) or ""
    try:
        principal = await app.service(IdentityService).authenticate(token, touch=False)
    except Unauthenticated as exc:
        raise Unauthenticated(f"{exc.message}{when}") from None
    await _check(app, principal, ws, changes=changes, action=action, when=when)


async def _max_bytes(app: AppContext) -> int:
    """Read on every upload (an owner may change it while the server runs)."""
    return await int_setting(app, MAX_CHANNEL_SETTING, DEFAULT_MAX_CHANNEL_BYTES)


async def int_setting(app: AppContext, key: str, default: int) -> int:
    """A whole-number server setting, read on every use (an owner may change it while the server runs)."""
    value = await app.service(IdentityService).get_setting(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


async def _stored_budget(app: AppContext) -> store.StoredBudget:
    """Read on every upload, like ``_max_bytes``."""
    seconds = await int_setting(app, MAX_STORED_SETTING, DEFAULT_MAX_STORED_SECONDS)
    return store.StoredBudget(samples=seconds * audio.RATE, setting=MAX_STORED_SETTING)


async def _refuse_if_read_only(app: AppContext, engine: AsyncEngine, ws: str) -> None:
    """A lane is a route, not an op, so the guardrails' read-only mode (which denies every change) is checked
    here, at every upload."""
    guardrails = app.maybe_service(Guardrails)
    if guardrails is not None and (await guardrails.get(engine, ws, WORKSPACE_SCOPE)).read_only:
        raise Refused("meetings.uploadAudio refused: this workspace is in read-only mode, which denies changes")


def _label(request: Request) -> str:
    label = request.query_params.get("label", "").strip()
    if len(label) > MAX_SPEAKER or "\x00" in label:
        raise InvalidArgs(f"label must be at most {MAX_SPEAKER} characters", field="label")
    return label


UPLOAD = "meetings.uploadAudio"
ENDED = " (checked again as the upload ended: nothing was kept)"


async def upload_channel(request: Request) -> Response:
    """Retain the body as one audio channel of the meeting (see the module docstring)."""
    app, principal, ws, meeting_id = await _caller(request, changes=True, action=UPLOAD)
    label = _label(request)
    engine = await app.dbs.workspace(ws)
    await _refuse_if_read_only(app, engine, ws)
    budget = await _stored_budget(app)
    await store.check_channel_room(engine, meeting_id, budget)
    limit = await _max_bytes(app)
    with UPLOADS.held(ws, await int_setting(app, MAX_UPLOADS_SETTING, DEFAULT_MAX_UPLOADS)):
        channel, size = await _receive_channel(request, app, principal, ws, meeting_id, label, limit, budget)
    await app.audit.append(
        ws, principal=principal.label, action=UPLOAD, target=f"meeting:{meeting_id}",
        details={"channelId": channel.id, "bytes": size, "format": channel.source_format, "seconds": channel.seconds},
    )  # fmt: skip
    body = ChannelView.of(channel).model_dump(mode="json", by_alias=True)
    return JSONResponse(body, status_code=201)


async def _ended_allowed(request: Request, app: AppContext, engine: AsyncEngine, ws: str) -> None:
    """What the start of an upload checked, checked again (the transfer took its time)."""
    await _still_allowed(request, ws, changes=True, action=UPLOAD, when=ENDED)
    await _refuse_if_read_only(app, engine, ws)


async def _receive_channel(
    request: Request, app: AppContext, principal: Principal, ws: str, meeting_id: str, label: str, limit: int,
    budget: store.StoredBudget,
) -> tuple[store.Channel, int]:  # fmt: skip
    """The body received, decoded and recorded as a channel (its file in place); the channel and the bytes
    received. Every file of the upload is removed on any refusal."""
    engine = await app.dbs.workspace(ws)
    src = files.scratch_path(app, ws, meeting_id, "upload")
    wav = files.scratch_path(app, ws, meeting_id, "wav")
    final = None
    try:
        size = await receive_file(request, src, limit, MIN_BYTES_PER_SECOND, BODY_GRACE_S, "meetings upload rate")
        if size == 0:
            raise InvalidArgs("the body must be the channel's recording; it was empty", field="body")
        await _ended_allowed(request, app, engine, ws)  # before a decoder is spent on it
        async with _decoding:
            source_format = await audio.probe(app, src)
            kept = await int_setting(app, MAX_CHANNEL_SECONDS_SETTING, audio.MAX_SECONDS)
            samples = await audio.normalise(app, src, wav, kept)
        await _ended_allowed(request, app, engine, ws)  # and last, just before the channel is recorded
        channel_id = new_id()
        final = files.channel_path(app, ws, meeting_id, channel_id)
        os.rename(wav, final)
        channel = store.Channel(
            id=channel_id, meeting_id=meeting_id, label=label or f"Channel {channel_id[:8]}", uploaded_bytes=size,
            source_format=source_format, samples=samples, created_by=principal.label, created_at=app.clock.now(),
        )  # fmt: skip
        await store.add_channel(engine, channel, budget)
        final = None  # recorded: kept
    finally:
        files.discard(src)
        files.discard(wav)
        if final is not None:
            files.discard(final)
    return channel, size


async def playback(request: Request) -> Response:
    """The meeting's mixed playback track."""
    app, _principal, ws, meeting_id = await _caller(request, changes=False, action="meetings.playback")
    meeting = await store.get_meeting(await app.dbs.workspace(ws), meeting_id)
    if meeting.playback_bytes is None:
        raise NotFound(f"meeting {meeting_id} has no playback track yet (meeting.assemblePlayback makes it)")
    path = files.playback_path(app, ws, meeting.id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotFound(f"meeting {meeting_id}'s playback track is missing") from None
    reader = os.fdopen(fd, "rb")
    size = os.fstat(reader.fileno()).st_size
    identity = app.service(IdentityService)
    check = functools.partial(_still_allowed, request, ws, changes=False, action="meetings.playback",
                              when=" (checked again during playback)")  # fmt: skip
    guard = Revocable(check, stamp=identity.authority_stamp)

    async def chunks() -> AsyncIterator[bytes]:
        with reader:
            while chunk := await asyncio.to_thread(reader.read, PLAYBACK_PIECE):
                try:
                    await guard.admit()  # nothing more once the caller may no longer listen
                except HangarError as exc:
                    log.info("playback of meeting %s stopped: %s", meeting_id, exc.message)
                    raise
                yield chunk

    headers = {"Content-Length": str(size), "Cache-Control": "private, no-store"}
    return StreamingResponse(chunks(), media_type="audio/wav", headers=headers)


ROUTES = [
    Route(PREFIX + "{workspace_id}/{meeting_id}/channels", upload_channel, methods=["POST"]),
    Route(PREFIX + "{workspace_id}/{meeting_id}/playback", playback, methods=["GET"]),
]
