"""The file lane: ``POST /rig/files/<rigId>`` drops files into the rig (a terminal's ``~/drops``, a browser's
``/tmp/hangar-drops``, a desktop's ``~/Drops``, where the landed files also go onto its clipboard as file URIs,
``delivery: "clipboard"``); ``GET /rig/files/<rigId>?p=<base64url path>`` reads one file out. Bytes travel over
HTTP, not the RPC socket.

A drop is parsed as it streams in (multipart, python-multipart's push parser) and spooled to disk under the data
directory, never held whole in memory; the limits (64 files, 256 MB each, 512 MB per drop) are enforced while bytes
arrive, and so is a pace: the body must be whole within 30 s, or keep 64 KiB/s on average past them
(``access.lane_body``; a stalled or trickled drop gets 408). Nothing lands in the rig unless the whole drop is
valid. Files land in ``~/drops`` (beside the worktree, never inside it) and never overwrite: a colliding name lands
as ``2-name.ext``, then ``3-name.ext``. Names are refused when they carry a path (separators, ``.`` or ``..``),
control characters or more than 255 bytes. A drop into a browser rig may carry a drop point (form fields ``x`` and
``y``, the page's CSS pixels, as the live view's ``viewport`` notice gives them): engine A then fires a real drop
event there, and engines B and C, which cannot, point the file input at that point (or the one a label there is for)
at the landed files; the reply's ``delivery`` says which happened: ``dropEvent``, ``fileInput`` or ``landed`` (the
files landed and nothing on the page was told). Dropping is mutating (refused while someone else holds control);
reading a file out is an observation. Both are audited as counts, sizes and paths, never content. Errors are raised
and rendered by the server's error handler (``hangar.httpkit.errors``).

Access is checked when a transfer ends too: once a drop's body has arrived, the credential, the membership and the
read-only mode are checked again before anything lands (a member removed meanwhile gets 403 and nothing lands);
a file read out is sent chunk by chunk, each only while its reader is still a member (checked again whenever
authority changed), so a reader removed mid-file gets nothing more and the download stops short.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import os
import posixpath
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import quote, unquote_to_bytes

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from hangar.core.ids import new_id
from hangar.errors import Conflict, HangarError, InvalidArgs
from hangar.httpkit.requests import BodyTooLarge, bearer_token
from hangar.identity import IdentityService
from hangar.rigs.engines.session import EngineSession
from hangar.rigs.errors import DropTooLarge
from hangar.rigs.lanes.access import authorize, authorize_change, lane_body, still_allowed
from hangar.rigs.model import Surface
from hangar.rpc.access import Revocable

MB = 1024 * 1024
MAX_FILES = 64
MAX_FILE_BYTES = 256 * MB
MAX_DROP_BYTES = 512 * MB
MAX_FIELD_BYTES = 1024  # small form fields (a drop point) are read and ignored by terminal rigs
MAX_FIELDS = 8
MAX_COLLISIONS = 1000
GUEST_HOME = "/home/rig"
DROPS_DIR = f"{GUEST_HOME}/drops"
DESKTOP_DROPS_DIR = f"{GUEST_HOME}/Drops"
BROWSER_DROPS_DIR = "/tmp/hangar-drops"
CHUNK = 256 * 1024
_EXTENDED_FILENAME = re.compile(r"filename\*\s*=\s*UTF-8''([^;\s]+)", re.IGNORECASE)


def check_name(raw: str, index: int) -> str:
    """A dropped file's name, refused (naming the file) when it could leave ``~/drops``."""
    where = f"files[{index}].filename"
    if raw in ("", ".", ".."):
        raise InvalidArgs(f"{where}: a dropped file needs a name (not {raw!r})", field=where)
    if "/" in raw or "\\" in raw:
        raise InvalidArgs(f"{where}: {raw!r} carries a path; drops take plain file names", field=where)
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise InvalidArgs(f"{where}: file names must not contain control characters", field=where)
    if len(raw.encode()) > 255:
        raise InvalidArgs(f"{where}: file names are at most 255 bytes", field=where)
    return raw


def numbered(name: str, n: int) -> str:
    """The n-th candidate name for a drop: ``name.ext``, ``2-name.ext``, ``3-name.ext``..."""
    return name if n == 1 else f"{n}-{name}"


def decode_path(p: str | None) -> str:
    """A guest path from base64url; refused unless absolute, clean, and free of ``..``."""
    if not p:
        raise InvalidArgs("p is required: the base64url-encoded guest path of the file", field="p")
    try:
        path = base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgs("p must be a base64url-encoded UTF-8 path", field="p") from None
    if not path.startswith("/") or "\x00" in path:
        raise InvalidArgs("p must decode to an absolute guest path", field="p")
    if ".." in path.split("/"):
        raise InvalidArgs("p must not contain '..' (path traversal is refused)", field="p")
    return posixpath.normpath(path)


@dataclass
class _Part:
    name: str
    filename: str | None
    path: Path | None
    fh: IO[bytes] | None
    size: int = 0
    value: bytearray = field(default_factory=bytearray)


class DropSpool:
    """Receives multipart callbacks and spools file parts to disk, enforcing the lane's limits as it goes."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.files: list[_Part] = []
        self.fields = 0
        self.values: dict[str, str] = {}  # small form fields by name (a drop point)
        self.total = 0
        self._headers: dict[str, str] = {}
        self._field = b""
        self._value = b""
        self._part: _Part | None = None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def on_header_end(self) -> None:
        # Header bytes are kept one character per byte (latin-1): the multipart parser works on that form, and a
        # browser sends a file name as raw UTF-8 bytes, decoded below as a whole.
        self._headers[self._field.decode("latin-1").lower()] = self._value.decode("latin-1")
        self._field = self._value = b""

    def on_headers_finished(self) -> None:
        disposition = self._headers.get("content-disposition", "")
        _, opts = parse_options_header(disposition)
        name = opts.get(b"name", b"").decode("utf-8", "replace")
        raw_filename = opts.get(b"filename")
        extended = _EXTENDED_FILENAME.search(disposition)
        if extended is not None:  # RFC 5987 filename*=UTF-8''<percent-encoded>, preferred when given
            raw_filename = unquote_to_bytes(extended.group(1))
        self._headers = {}
        if raw_filename is None:
            self.fields += 1
            if self.fields > MAX_FIELDS:
                raise InvalidArgs(f"a drop takes at most {MAX_FIELDS} form fields besides files", field="fields")
            self._part = _Part(name, None, None, None)
            return
        index = len(self.files)
        if index >= MAX_FILES:
            raise DropTooLarge(f"a drop takes at most {MAX_FILES} files")
        try:
            decoded = raw_filename.decode("utf-8")
        except UnicodeDecodeError:
            where = f"files[{index}].filename"
            raise InvalidArgs(f"{where}: file names must be UTF-8", field=where) from None
        filename = check_name(decoded, index)
        path = self.dir / f"{index:03d}"
        self._part = _Part(name, filename, path, open(path, "xb"))  # noqa: SIM115 - closed at part end
        self.files.append(self._part)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        if part is None:
            return
        chunk = data[start:end]
        if part.fh is None:
            part.value += chunk
            if len(part.value) > MAX_FIELD_BYTES:
                raise InvalidArgs(f"form field {part.name!r} is over {MAX_FIELD_BYTES} bytes", field=part.name)
            return
        part.size += len(chunk)
        self.total += len(chunk)
        if part.size > MAX_FILE_BYTES:
            raise DropTooLarge(f"{part.filename!r} is over {MAX_FILE_BYTES // MB} MB (the per-file limit)")
        if self.total > MAX_DROP_BYTES:
            raise DropTooLarge(f"the drop is over {MAX_DROP_BYTES // MB} MB (the per-drop limit)")
        part.fh.write(chunk)

    def on_part_end(self) -> None:
        if self._part is not None and self._part.fh is not None:
            self._part.fh.close()
            self._part.fh = None
        elif self._part is not None:
            self.values[self._part.name] = self._part.value.decode("utf-8", "replace")
        self._part = None

    def point(self) -> tuple[int, int] | None:
        """The drop point (fields ``x`` and ``y``, whole CSS pixels of the page), when one was given."""
        given = [name for name in ("x", "y") if name in self.values]
        if not given:
            return None
        coords: list[int] = []
        for name in ("x", "y"):
            raw = self.values.get(name, "").strip()
            if not raw.isdigit() or int(raw) > 100_000:
                raise InvalidArgs(f"{name} must be a whole number of pixels (give both x and y, or neither)",
                                  field=name)  # fmt: skip
            coords.append(int(raw))
        return coords[0], coords[1]

    def close(self) -> None:
        for part in self.files:
            if part.fh is not None:
                part.fh.close()
        shutil.rmtree(self.dir, ignore_errors=True)


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    with open(path, "rb") as fh:  # noqa: ASYNC230 - local spool file, chunked reads
        while chunk := fh.read(CHUNK):
            yield chunk


async def _receive(request: Request, spool: DropSpool) -> None:
    ctype = request.headers.get("content-type", "")
    kind, params = parse_options_header(ctype)
    boundary = params.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise InvalidArgs("send the files as multipart/form-data", field="content-type")
    envelope = MAX_DROP_BYTES + MAX_FILES * 4096 + 65536  # the files, their part headers and the form fields
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > envelope:
        raise DropTooLarge(f"the drop is over {MAX_DROP_BYTES // MB} MB (the per-drop limit)")
    callbacks: Any = {
        "on_header_field": spool.on_header_field,
        "on_header_value": spool.on_header_value,
        "on_header_end": spool.on_header_end,
        "on_headers_finished": spool.on_headers_finished,
        "on_part_data": spool.on_part_data,
        "on_part_end": spool.on_part_end,
    }
    parser = MultipartParser(boundary, callbacks)
    try:
        async for chunk in lane_body(request, envelope):
            parser.write(chunk)
    except BodyTooLarge:
        raise DropTooLarge(f"the drop is over {MAX_DROP_BYTES // MB} MB (the per-drop limit)") from None
    parser.finalize()
    if not spool.files:
        raise InvalidArgs("a drop needs at least one file part (with a filename)", field="files")


async def drop_files(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    spool: DropSpool | None = None
    try:
        principal = await app.service(IdentityService).authenticate_bearer(request)
        access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=True)
        mgr, live = access.manager, access.live
        mgr.check_control(live, principal, "drop_files")
        spool_dir = app.datadir.sub("rigs", "spool", new_id())
        spool = DropSpool(spool_dir)
        await _receive(request, spool)
        # The body took its time: the person may have been removed, or the workspace made read-only, meanwhile.
        await still_allowed(app, access.ws, bearer_token(request.headers.get("authorization")) or "")
        await authorize_change(access, "files", "the files lane")
        point = spool.point()
        browser, desktop = live.surface is Surface.browser, live.surface is Surface.computer
        directory = BROWSER_DROPS_DIR if browser else DESKTOP_DROPS_DIR if desktop else DROPS_DIR
        landed: list[dict[str, Any]] = []
        delivery: Delivery = "landed"
        async with mgr.acting(access.ws, rig_id, principal, mutating=True, what="drop_files") as (_live, handle):
            for part in spool.files:
                assert part.path is not None and part.filename is not None
                for n in range(1, MAX_COLLISIONS + 1):
                    guest = f"{directory}/{numbered(part.filename, n)}"
                    try:
                        await handle.write_file(guest, _chunks(part.path), exclusive=True)
                    except Conflict:
                        continue
                    landed.append({"name": part.filename, "path": guest, "size": part.size})
                    break
                else:
                    raise Conflict(f"{part.filename!r} collides with {MAX_COLLISIONS} existing drops")
            if browser and point is not None:
                delivery = await deliver(handle.browser(), [f["path"] for f in landed], point)
            elif desktop:  # no synthesized drag: the files reach the desktop on its clipboard
                await handle.desktop().offer_files([f["path"] for f in landed])
                delivery = "clipboard"
        details: dict[str, Any] = {"count": len(landed), "bytes": sum(f["size"] for f in landed), "files": landed}
        if browser or desktop:
            details |= {"delivery": delivery, "point": list(point) if point is not None else None}
        await mgr.log_action(access.ws, rig_id, principal, "drop_files", details)
        await app.audit.append(
            access.ws, principal=principal.label, action="rig.drop_files", target=f"rig:{rig_id}", details=details
        )
        note = DELIVERY_NOTES[delivery] if browser or desktop else None
        return JSONResponse(
            {"rigId": rig_id, "delivery": delivery, "note": note, "directory": directory, "files": landed}
        )
    finally:
        if spool is not None:
            spool.close()


Delivery = Literal["dropEvent", "fileInput", "landed", "clipboard"]
DELIVERY_NOTES: dict[Delivery, str] = {
    "clipboard": "the files landed in ~/Drops and are on the desktop's clipboard as file URIs",
    "dropEvent": "the page got a real drop event at the drop point",
    "fileInput": "this engine cannot take a real drop: the file input at the drop point was set to the files",
    "landed": "the files landed in the rig; nothing on the page was told",
}


async def deliver(session: EngineSession, paths: list[str], point: tuple[int, int]) -> Delivery:
    """Tell the page about landed files at ``point``: a real drop where the engine can fire one, else the file
    input there, else nothing."""
    x, y = point
    if session.real_drop:
        await session.drop_files(paths, x, y)
        return "dropEvent"
    if await session.set_input_files(x, y, paths):
        return "fileInput"
    return "landed"


async def read_file(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    principal = await app.service(IdentityService).authenticate_bearer(request)
    access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=False)
    path = decode_path(request.query_params.get("p"))
    mgr = access.manager
    async with mgr.acting(access.ws, rig_id, principal, mutating=False, what="read_file") as (_live, handle):
        stream = handle.read_file(path)
        first = await anext(stream, b"")  # errors (missing, escaping, not regular) surface before 200

    counted = {"bytes": 0}
    token = bearer_token(request.headers.get("authorization")) or ""
    guard = Revocable(
        functools.partial(still_allowed, app, access.ws, token), stamp=app.service(IdentityService).authority_stamp
    )

    async def body() -> AsyncIterator[bytes]:
        try:
            if first:
                await guard.admit()
                counted["bytes"] += len(first)
                yield first
            async for chunk in stream:
                await guard.admit()  # nothing more once the reader may no longer use the lane
                counted["bytes"] += len(chunk)
                yield chunk
        finally:
            details = {"count": 1, "files": [{"path": path, "size": counted["bytes"]}]}
            with contextlib.suppress(HangarError):
                await mgr.log_action(access.ws, rig_id, principal, "read_file", details)
                await app.audit.append(
                    access.ws,
                    principal=principal.label,
                    action="rig.read_file",
                    target=f"rig:{rig_id}",
                    details=details,
                )

    filename = quote(os.path.basename(path) or "file", safe="")
    return StreamingResponse(
        body(),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{filename}",
            "X-Content-Type-Options": "nosniff",
        },
    )
