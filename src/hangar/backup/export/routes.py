"""The HTTP routes of workspace export and import (bytes travel over HTTP, not the RPC socket).

- ``GET /workspace-transfer/export?token=<signed>``: the export of the workspace the token names, as a tar stream
  (``application/x-tar``), for the person it was minted for, whose authority is checked again now.
- ``POST /workspace-transfer/import[?name=<name>]`` with ``Authorization: Bearer <device credential>`` and the
  export as the body: ``201 {"id", "name"}`` of the new workspace, owned by the uploader. Refusals answer with the
  error body of the error tree: 401, 403 (not allowed to create workspaces), 408 (the body arrived slower than
  ``workspaceImport.minBytesPerSecond`` after ``BODY_GRACE_S``), 413 (larger than ``workspaceImport.maxBytes``),
  422 (the archive is refused: the message names the item, table, line or rule).

Both routes take one of the process's transfer slots (``slots``) for as long as they run: past
``workspaceTransfer.maxConcurrent`` the answer is 429 with ``Retry-After``.

Access is checked when a transfer ends too: an import checks the uploader's credential and their right to create
workspaces again once the body has arrived and again just before the workspace is made (403, or 401 for a
credential revoked meanwhile, and nothing is kept); an export admits each piece of the stream only while its
person may still export the workspace (``check_exporter``, checked again whenever authority changed), so a person
removed or demoted mid-download gets nothing more and the download stops short.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hangar.backup.archive import BackupRefused
from hangar.backup.export.access import check_exporter
from hangar.backup.export.dump import scratch_folder, stream_export
from hangar.backup.export.layout import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ITEMS,
    DEFAULT_MAX_LINE,
    DEFAULT_MAX_TRANSFERS,
    DEFAULT_MIN_RATE,
    MAX_BYTES_SETTING,
    MAX_ITEMS_SETTING,
    MAX_LINE_SETTING,
    MAX_TRANSFERS_SETTING,
    MIN_RATE_SETTING,
    ExportManifest,
)
from hangar.backup.export.load import Limits, Rewrite, load, seeder, verify
from hangar.backup.export.signing import ExportSigner
from hangar.backup.export.slots import TransferSlots
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import Forbidden, InvalidArgs, Refused, Unauthenticated
from hangar.httpkit.requests import bearer_token, receive_file
from hangar.identity import IdentityService, check_may_create, create_workspace
from hangar.rpc.access import Revocable

PREFIX = "/workspace-transfer/"
EXPORT_PATH = f"{PREFIX}export"
IMPORT_PATH = f"{PREFIX}import"
MAX_NAME = 200
# Seconds an upload may take before the minimum rate applies (read when a body is received: a test may change it).
BODY_GRACE_S = 30.0


class ImportRefused(Refused):
    """An upload that is not an export this server imports; the message names what is wrong."""

    http_status = 422


def _file_name(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.") or "workspace"
    return f"{safe[:80]}.hangar-workspace.tar"


async def download(request: Request) -> Response:
    """Download a workspace's export (a tar) through the signed URL workspaces.export answered (?token=...)."""
    app: AppContext = request.app.state.ctx
    grant = app.service(ExportSigner).verify(request.query_params.get("token"))
    await check_exporter(app, grant.workspace_id, grant.user_id)
    ws = await app.service(IdentityService).get_workspace(grant.workspace_id)
    assert ws is not None  # check_exporter found it
    release = await _take_slot(app)
    try:
        await app.audit.append(
            ws.id, principal=f"user:{grant.user_id}", action="workspaces.export", target=f"workspace:{ws.id}"
        )
        chunks = stream_export(app, ws.id, ws.name, grant.user_id)
        # The first chunk before the answer's status: a snapshot that cannot be taken is answered as an error, not
        # as a download cut short.
        first = await anext(chunks)
    except BaseException:
        release()
        raise

    guard = Revocable(
        functools.partial(check_exporter, app, ws.id, grant.user_id),
        stamp=app.service(IdentityService).authority_stamp,
    )

    async def body() -> AsyncIterator[bytes]:
        try:
            await guard.admit()
            yield first
            async for chunk in chunks:
                await guard.admit()  # nothing more once its person may no longer export the workspace
                yield chunk
        finally:
            release()  # the download ended, finished or cut short

    return StreamingResponse(
        body(),
        media_type="application/x-tar",
        headers={
            "Content-Disposition": f'attachment; filename="{_file_name(ws.name)}"',
            "Cache-Control": "no-store",
        },
    )


async def _setting(app: AppContext, key: str, default: int) -> int:
    """A bound, read on every transfer (an admin may change it while the server runs)."""
    value = await app.service(IdentityService).get_setting(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


async def limits(app: AppContext) -> Limits:
    """The import's bounds of what an archive holds."""
    return Limits(
        await _setting(app, MAX_BYTES_SETTING, DEFAULT_MAX_BYTES),
        await _setting(app, MAX_ITEMS_SETTING, DEFAULT_MAX_ITEMS),
        await _setting(app, MAX_LINE_SETTING, DEFAULT_MAX_LINE),
    )


async def _take_slot(app: AppContext) -> Callable[[], None]:
    return app.service(TransferSlots).take(await _setting(app, MAX_TRANSFERS_SETTING, DEFAULT_MAX_TRANSFERS))


async def _receive(request: Request, path: Path, limit: int, rate: int) -> None:
    """The body into ``path``: at most ``limit`` bytes, arriving in time (``receive_file``; ``BODY_GRACE_S`` is
    read here, so a test may change it)."""
    if await receive_file(request, path, limit, rate, BODY_GRACE_S, MIN_RATE_SETTING) == 0:
        raise InvalidArgs("the body must be a workspace export (a tar archive)", field="body")


def _refused(exc: BackupRefused) -> ImportRefused:
    # The archive reader is the backup's, whose sentences speak of a backup.
    return ImportRefused(str(exc).replace("the backup", "the export").replace("a backup", "an export"))


def _opened(path: Path) -> IO[bytes]:
    return path.open("rb")


async def upload(request: Request) -> Response:
    """Import a workspace export (the body) as a new workspace owned by the caller (Bearer credential; ?name=)."""
    app: AppContext = request.app.state.ctx
    identity = app.service(IdentityService)
    principal = await identity.authenticate_bearer(request)
    principal.check_reach(None, changes=True, action="workspaces.import")
    if principal.agent_id is not None:
        raise Refused("an agent's credential cannot import workspaces")
    await check_may_create(app, principal.user_id)
    name = request.query_params.get("name", "").strip()
    if len(name) > MAX_NAME:
        raise InvalidArgs(f"name must be at most {MAX_NAME} characters", field="name")
    bounds = await limits(app)
    rate = await _setting(app, MIN_RATE_SETTING, DEFAULT_MIN_RATE)
    release = await _take_slot(app)
    try:
        return await _import(app, request, principal.user_id, principal.label, name, bounds, rate)
    finally:
        release()


async def _still_may_import(app: AppContext, request: Request, user_id: str) -> None:
    """What ``upload`` checked at the start, checked again (the upload took its time): the credential still
    works, is still the same person's, and they may still create workspaces."""
    ended = " (checked again as the import ended: nothing was kept)"
    try:
        principal = await app.service(IdentityService).authenticate(
            bearer_token(request.headers.get("authorization")) or "", touch=False
        )
    except Unauthenticated as exc:
        raise Unauthenticated(f"{exc.message}{ended}") from None
    if principal.user_id != user_id:
        raise Unauthenticated(f"the credential is no longer the uploader's{ended}")
    try:
        await check_may_create(app, user_id)
    except Forbidden as exc:
        raise Forbidden(f"{exc.message}{ended}") from None


async def _import(
    app: AppContext, request: Request, user_id: str, label: str, name: str, bounds: Limits, rate: int
) -> Response:
    sets = app.dbs.workspace_sets
    scratch = await asyncio.to_thread(scratch_folder, app)
    try:
        upload_path = scratch / "upload.tar"
        await _receive(request, upload_path, bounds.max_bytes, rate)
        await _still_may_import(app, request, user_id)  # before the archive is read
        ws_id = new_id()

        def check_and_load() -> tuple[ExportManifest, Path]:
            with _opened(upload_path) as stream:
                manifest = verify(stream, bounds, sets)
            with _opened(upload_path) as stream:
                return manifest, load(stream, manifest, bounds, sets, scratch, ws_id)

        try:
            manifest, rows_db = await asyncio.to_thread(check_and_load)
        except BackupRefused as exc:
            raise _refused(exc) from None
        await _still_may_import(app, request, user_id)  # and last, before anything is made
        final = app.datadir.workspace_dir(ws_id)
        rewrite = Rewrite(manifest.exported_by, user_id, final, manifest.workspace_id)
        staged = scratch / "files" / ws_id
        if staged.is_dir():
            os.rename(staged, final)  # before the workspace exists: nothing reaches a folder no workspace names
        try:
            ws = await create_workspace(
                app,
                name or manifest.workspace_name[:MAX_NAME] or "imported",
                user_id,
                by=label,
                workspace_id=ws_id,
                action="workspaces.import",
                seed=[seeder(rows_db, sets, rewrite)],
            )
        except BackupRefused as exc:
            await asyncio.to_thread(shutil.rmtree, final, True)
            raise _refused(exc) from None
        except BaseException:
            await asyncio.to_thread(shutil.rmtree, final, True)
            raise
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)
    return JSONResponse({"id": ws.id, "name": ws.name}, status_code=201)


TRANSFER_ROUTES = [
    Route(EXPORT_PATH, download, methods=["GET"]),
    Route(IMPORT_PATH, upload, methods=["POST"]),
]
