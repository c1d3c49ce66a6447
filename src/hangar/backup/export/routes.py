"""The HTTP routes of workspace export and import (bytes travel over HTTP, not the RPC socket).

- ``GET /workspace-transfer/export?token=<signed>``: the export of the workspace the token names, as a tar stream
  (``application/x-tar``), for the person it was minted for, whose authority is checked again now.
- ``POST /workspace-transfer/import[?name=<name>]`` with ``Authorization: Bearer <device credential>`` and the
  export as the body: ``201 {"id", "name"}`` of the new workspace, owned by the uploader. Refusals answer with the
  error body of the error tree: 401, 403 (not allowed to create workspaces), 413 (larger than
  ``workspaceImport.maxBytes``), 422 (the archive is refused: the message names the item, table, line or rule).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
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
    MAX_BYTES_SETTING,
    MAX_ITEMS_SETTING,
    MAX_LINE_SETTING,
    ExportManifest,
)
from hangar.backup.export.load import Limits, Rewrite, load, seeder, verify
from hangar.backup.export.signing import ExportSigner
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import InvalidArgs, Refused
from hangar.httpkit.requests import BodyTooLarge
from hangar.identity import IdentityService, check_may_create, create_workspace

PREFIX = "/workspace-transfer/"
EXPORT_PATH = f"{PREFIX}export"
IMPORT_PATH = f"{PREFIX}import"
MAX_NAME = 200


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
    await app.audit.append(
        ws.id, principal=f"user:{grant.user_id}", action="workspaces.export", target=f"workspace:{ws.id}"
    )
    chunks = stream_export(app, ws.id, ws.name, grant.user_id)
    # The first chunk before the answer's status: a snapshot that cannot be taken is answered as an error, not as
    # a download cut short.
    first = await anext(chunks)

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    return StreamingResponse(
        body(),
        media_type="application/x-tar",
        headers={
            "Content-Disposition": f'attachment; filename="{_file_name(ws.name)}"',
            "Cache-Control": "no-store",
        },
    )


async def limits(app: AppContext) -> Limits:
    """The import's bounds, read on every upload (an admin may change them while the server runs)."""
    identity = app.service(IdentityService)

    async def read(key: str, default: int) -> int:
        value = await identity.get_setting(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    return Limits(
        await read(MAX_BYTES_SETTING, DEFAULT_MAX_BYTES),
        await read(MAX_ITEMS_SETTING, DEFAULT_MAX_ITEMS),
        await read(MAX_LINE_SETTING, DEFAULT_MAX_LINE),
    )


async def _receive(request: Request, path: Path, limit: int) -> None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        total = 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise BodyTooLarge(limit)
            out.write(chunk)
    if total == 0:
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
    sets = app.dbs.workspace_sets
    scratch = await asyncio.to_thread(scratch_folder, app)
    try:
        upload_path = scratch / "upload.tar"
        await _receive(request, upload_path, bounds.max_bytes)
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
        final = app.datadir.workspace_dir(ws_id)
        rewrite = Rewrite(manifest.exported_by, principal.user_id, final, manifest.workspace_id)
        staged = scratch / "files" / ws_id
        if staged.is_dir():
            os.rename(staged, final)  # before the workspace exists: nothing reaches a folder no workspace names
        try:
            ws = await create_workspace(
                app,
                name or manifest.workspace_name[:MAX_NAME] or "imported",
                principal.user_id,
                by=principal.label,
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
