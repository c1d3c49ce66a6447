"""The clipboard lane: ``GET /rig/clipboard/<rigId>`` copies the rig's clipboard out, ``POST`` pastes into it.
Bytes travel over HTTP (an image would not fit the RPC socket's 256 KiB frames).

Authorization is the file lane's: the device credential as a bearer, a signed ``rig-files:<ws>/<rig>`` URL
(``rig.fileLaneUrl``) and membership. On top, the person's clipboard policy per direction (``consent``): pasting
is allowed by default, copying out answers 403 ``consent_required`` until they grant it. Pasting is mutating
(refused while someone else holds control, and in read-only mode); copying is an observation.

Kinds: text (``text/plain``, UTF-8, at most 1 MiB), one PNG or JPEG image (``image/png`` / ``image/jpeg``, at most
16 MB, its magic bytes checked), or guest file paths (``application/json`` ``{"files": [...]}``; ``{"text": ...}``
is accepted there too), read at the lanes' pace (``access.lane_body``) (a paste that stalls past it gets 408).
A computer rig's clipboard is its desktop's CLIPBOARD selection: text reads and pastes
as UTF-8, an image is offered as its own type, files as a ``text/uri-list`` of ``file://`` URIs. A browser rig's
clipboard is its page's: it exists only in a secure context (https, or localhost), holds text or one image through
the page's async clipboard API (engine B's headless Firefox keeps no images; engines A and C keep PNG, so a JPEG is
converted in the page), and never holds files; whatever is not
applied says why in ``reason``, and ``note`` says what an applied paste changed. GET answers ``{rigId, engine,
available, text, image, files, note}`` with ``image`` as ``{mime, base64, bytes, width, height}`` when the
clipboard holds one (then ``text`` is None); POST ``{rigId, kind, applied, reason, note, bytes, files}``. The
audit (the rig's action log and the workspace audit) keeps kinds, counts, sizes and paths, never content.
"""

from __future__ import annotations

import base64
import json
import posixpath
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hangar.errors import InvalidArgs, Refused, Unavailable
from hangar.httpkit.requests import BodyTooLarge
from hangar.identity import IdentityService
from hangar.rigs.engines.clipboard_image import MAGIC, MAX_IMAGE_BYTES, MB
from hangar.rigs.engines.pixels import image_size
from hangar.rigs.engines.session import ImageMime
from hangar.rigs.lanes.access import LaneAccess, authorize, lane_body
from hangar.rigs.lanes.consent import ClipboardGrants
from hangar.rigs.model import Surface

MAX_TEXT_BYTES = 1 * MB
MAX_FILES = 64
MAX_JSON_BYTES = 256 * 1024
NOT_SECURE = (
    "the page is not a secure context, so it has no clipboard API (pages over https or from localhost have one; "
    "type into the page instead)"
)
NO_FILES = "a browser's clipboard holds no files; drop them onto the page instead (the file lane)"
IMAGE_INSTEAD = "drop the image file onto the page instead"


class ClipboardTooLarge(Refused):
    """A paste over the lane's limits (16 MB for an image, 1 MiB for text)."""

    http_status = 413


def image_kind(data: bytes, declared: str) -> ImageMime:
    """The image's MIME type when its magic bytes are the declared format's; ``InvalidArgs`` otherwise."""
    if declared not in MAGIC:
        raise InvalidArgs("images are image/png or image/jpeg", field="content-type")
    mime: ImageMime = "image/png" if declared == "image/png" else "image/jpeg"
    if not data.startswith(MAGIC[mime]):
        raise InvalidArgs(f"the body is not a {declared.split('/')[1].upper()} image (its first bytes say otherwise)",
                          field="image")  # fmt: skip
    return mime


def guest_paths(value: Any) -> list[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_FILES:
        raise InvalidArgs(f"files must be a list of 1 to {MAX_FILES} guest paths", field="files")
    paths: list[str] = []
    for i, p in enumerate(value):
        where = f"files[{i}]"
        if not isinstance(p, str) or not p.startswith("/") or "\x00" in p or len(p) > 4096:
            raise InvalidArgs(f"{where} must be an absolute guest path", field=where)
        if ".." in p.split("/"):
            raise InvalidArgs(f"{where} must not contain '..'", field=where)
        paths.append(posixpath.normpath(p))
    return paths


async def _body(request: Request, limit: int, what: str) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise ClipboardTooLarge(f"{what} is over {_size(limit)} (the clipboard lane's limit)")
    data = bytearray()
    try:
        async for chunk in lane_body(request, limit):  # the file lane's pace: a stalled paste gets 408
            data += chunk
    except BodyTooLarge:
        raise ClipboardTooLarge(f"{what} is over {_size(limit)} (the clipboard lane's limit)") from None
    return bytes(data)


def _size(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // 1024} KiB"


class Paste:
    """What a POST carries: exactly one kind."""

    def __init__(
        self, kind: str, *, text: str = "", image: bytes = b"", mime: ImageMime = "image/png", files: list[str]
    ) -> None:
        self.kind, self.text, self.image, self.mime, self.files = kind, text, image, mime, files

    @property
    def size(self) -> int:
        return len(self.text.encode()) if self.kind == "text" else len(self.image)


async def read_paste(request: Request) -> Paste:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in MAGIC:
        data = await _body(request, MAX_IMAGE_BYTES, "the image")
        return Paste("image", image=data, mime=image_kind(data, ctype), files=[])
    if ctype == "text/plain":
        raw = await _body(request, MAX_TEXT_BYTES, "the text")
        try:
            return Paste("text", text=raw.decode("utf-8"), files=[])
        except UnicodeDecodeError:
            raise InvalidArgs("text must be UTF-8", field="text") from None
    if ctype == "application/json":
        try:
            body = json.loads(await _body(request, MAX_JSON_BYTES + MAX_TEXT_BYTES, "the JSON body"))
        except ValueError:
            raise InvalidArgs("the body is not JSON", field="body") from None
        if not isinstance(body, dict) or len(body) != 1 or not ({"text", "files"} & body.keys()):
            raise InvalidArgs('send {"text": "..."} or {"files": ["/guest/path", ...]}', field="body")
        if "files" in body:
            return Paste("files", files=guest_paths(body["files"]))
        text = body["text"]
        if not isinstance(text, str) or len(text.encode()) > MAX_TEXT_BYTES:
            raise InvalidArgs(f"text must be a string of at most {_size(MAX_TEXT_BYTES)}", field="text")
        return Paste("text", text=text, files=[])
    raise InvalidArgs("send text/plain, image/png, image/jpeg, or application/json with files", field="content-type")


def _with_clipboard(access: LaneAccess) -> None:
    live = access.live
    if live.surface not in (Surface.browser, Surface.computer):
        raise Refused(
            f"rig {live.id} is a {live.surface.value} rig, which has no clipboard this lane reaches "
            "(use the file lane for files)"
        )


async def _read_desktop(request: Request, access: LaneAccess, why: str) -> Response:
    """A desktop's CLIPBOARD selection as text (empty when nothing holds it)."""
    mgr = access.manager
    async with mgr.acting(access.ws, access.live.id, access.principal, mutating=False, what="clipboard_read") as (
        _l,
        handle,
    ):
        text = await handle.desktop().read_selection("clipboard")
    size = len(text.encode())
    details: dict[str, Any] = {"kind": "text" if text else "empty", "available": True, "bytes": size, "files": [],
                               "consent": why}  # fmt: skip
    await _audit(request, access, "clipboard_read", details)
    return JSONResponse({"rigId": access.live.id, "engine": None, "available": True, "text": text, "image": None,
                         "files": [], "note": None})  # fmt: skip


async def _write_desktop(request: Request, access: LaneAccess, paste: Paste) -> Response:
    """Text, one image or files (as their URIs) onto a desktop's CLIPBOARD selection."""
    mgr = access.manager
    async with mgr.acting(access.ws, access.live.id, access.principal, mutating=True, what="clipboard_write") as (
        _l,
        handle,
    ):
        desktop = handle.desktop()
        if paste.kind == "text":
            await desktop.write_clipboard(paste.text.encode())
        elif paste.kind == "image":
            await desktop.write_clipboard(paste.image, paste.mime)
        else:
            await desktop.offer_files(paste.files)
    details: dict[str, Any] = {"kind": paste.kind, "bytes": paste.size, "files": paste.files, "applied": True}
    if paste.kind == "image":
        details["mime"] = paste.mime
    await _audit(request, access, "clipboard_write", details)
    return JSONResponse({"rigId": access.live.id, "kind": paste.kind, "applied": True, "reason": None, "note": None,
                         "bytes": paste.size, "files": paste.files})  # fmt: skip


async def _audit(request: Request, access: LaneAccess, verb: str, details: dict[str, Any]) -> None:
    app = request.app.state.ctx
    await access.manager.log_action(access.ws, access.live.id, access.principal, verb, details)
    await app.audit.append(
        access.ws, principal=access.principal.label, action=f"rig.{verb}", target=f"rig:{access.live.id}",
        details=details,
    )  # fmt: skip


def _image_json(mime: ImageMime, data: bytes) -> dict[str, Any]:
    width: int | None
    height: int | None
    try:
        width, height = image_size(data)
    except Unavailable:  # a PNG or JPEG (its magic bytes were checked) whose header says no size: sizes unknown
        width = height = None
    return {"mime": mime, "base64": base64.b64encode(data).decode("ascii"), "bytes": len(data), "width": width,
            "height": height}  # fmt: skip


async def read_clipboard(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    principal = await app.service(IdentityService).authenticate_bearer(request)
    access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=False)
    decision = await ClipboardGrants(app.dbs.server, app.clock).require(principal, "rigToHost")
    _with_clipboard(access)
    if access.live.surface is Surface.computer:
        return await _read_desktop(request, access, decision.why)
    mgr = access.manager
    text: str | None = None
    async with mgr.acting(access.ws, rig_id, principal, mutating=False, what="clipboard_read") as (_l, handle):
        session = handle.browser()
        # The image first: a clipboard holding one answers it, and its text (empty, or the image's alternative)
        # is not what was copied. Without an image (or a page clipboard), the text as before.
        image = await session.clipboard_read_image()
        image_note = session.clipboard_image_note
        if image is None:
            text = await session.clipboard_read()
    available = image is not None or text is not None
    note = None if available else NOT_SECURE
    if image is None and text is not None and image_note is not None:
        note = image_note  # an image was there but could not be read (over the limit, refused): say so
    details: dict[str, Any] = {
        "kind": "image" if image else "text" if text else "empty",
        "available": available,
        "bytes": len(image[1]) if image else len(text.encode()) if text else 0,
        "files": [],
        "consent": decision.why,
    }
    if image:
        details["mime"] = image[0]
    await _audit(request, access, "clipboard_read", details)
    return JSONResponse(
        {
            "rigId": rig_id,
            "engine": session.engine,
            "available": available,
            "text": text,
            "image": _image_json(*image) if image else None,
            "files": [],
            "note": note,
        }
    )


async def write_clipboard(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    principal = await app.service(IdentityService).authenticate_bearer(request)
    access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=True)
    mgr = access.manager
    mgr.check_control(access.live, principal, "clipboard_write")
    await ClipboardGrants(app.dbs.server, app.clock).require(principal, "hostToRig")
    _with_clipboard(access)
    paste = await read_paste(request)
    if access.live.surface is Surface.computer:
        return await _write_desktop(request, access, paste)
    applied, reason, note = False, None, None
    async with mgr.acting(access.ws, rig_id, principal, mutating=True, what="clipboard_write") as (_l, handle):
        session = handle.browser()
        if paste.kind == "text":
            applied = await session.clipboard_write(paste.text)
            reason = None if applied else NOT_SECURE
        elif paste.kind == "image":
            applied = await session.clipboard_write_image(paste.mime, paste.image)
            said = session.clipboard_image_note
            if applied:
                note = said
            else:
                reason = f"the image was not pasted: {said or 'the page did not take it'}; {IMAGE_INSTEAD}"
        else:
            reason = NO_FILES
    details: dict[str, Any] = {"kind": paste.kind, "bytes": paste.size, "files": paste.files, "applied": applied}
    if paste.kind == "image":
        details["mime"] = paste.mime
        details["converted"] = applied and note is not None
    await _audit(request, access, "clipboard_write", details)
    return JSONResponse(
        {"rigId": rig_id, "kind": paste.kind, "applied": applied, "reason": reason, "note": note,
         "bytes": paste.size, "files": paste.files},
    )  # fmt: skip
