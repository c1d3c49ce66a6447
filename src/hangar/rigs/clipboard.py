"""The clipboard lane: ``GET /rig/clipboard/<rigId>`` copies the rig's clipboard out, ``POST`` pastes into it.
Bytes travel over HTTP (an image would not fit the RPC socket's 256 KiB frames).

Authorization is the file lane's: the device credential as a bearer, a signed ``rig-files:<ws>/<rig>`` URL
(``rig.fileLaneUrl``) and membership. On top, the person's clipboard policy per direction (``consent``): pasting
is allowed by default, copying out answers 403 ``consent_required`` until they grant it. Pasting is mutating
(refused while someone else holds control, and in read-only mode); copying is an observation.

Kinds: text (``text/plain``, UTF-8, at most 1 MiB), one PNG or JPEG image (``image/png`` / ``image/jpeg``, at most
16 MB, its magic bytes checked), or guest file paths (``application/json`` ``{"files": [...]}``; ``{"text": ...}``
is accepted there too). A browser rig's clipboard is its page's: it exists only in a secure context (https, or
localhost), holds text through the engine, and never holds files; whatever is not applied says why in
``reason``. GET answers ``{rigId, engine, available, text, image, files, note}``; POST ``{rigId, kind, applied,
reason, bytes, files}``. The audit (the rig's action log and the workspace audit) keeps counts, sizes and paths,
never content.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hangar.errors import InvalidArgs, Refused
from hangar.identity import IdentityService
from hangar.rigs.consent import ClipboardGrants, ConsentRequired, consent_message
from hangar.rigs.lanes import LaneAccess, authorize
from hangar.rigs.model import Surface

MB = 1024 * 1024
MAX_IMAGE_BYTES = 16 * MB
MAX_TEXT_BYTES = 1 * MB
MAX_FILES = 64
MAX_JSON_BYTES = 256 * 1024
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
NOT_SECURE = (
    "the page is not a secure context, so it has no clipboard API (pages over https or from localhost have one; "
    "type into the page instead)"
)
NO_FILES = "a browser's clipboard holds no files; drop them onto the page instead (the file lane)"
NO_IMAGES = (
    "this browser rig's engine reaches the page's clipboard for text only, so the image was not pasted; "
    "drop the image file onto the page instead"
)


class ClipboardTooLarge(Refused):
    """A paste over the lane's limits (16 MB for an image, 1 MiB for text)."""

    http_status = 413


def image_kind(data: bytes, declared: str) -> str:
    """The image's MIME type when its magic bytes are the declared format's; ``InvalidArgs`` otherwise."""
    magic = _MAGIC.get(declared)
    if magic is None:
        raise InvalidArgs("images are image/png or image/jpeg", field="content-type")
    if not data.startswith(magic):
        raise InvalidArgs(f"the body is not a {declared.split('/')[1].upper()} image (its first bytes say otherwise)",
                          field="image")  # fmt: skip
    return declared


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
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise ClipboardTooLarge(f"{what} is over {_size(limit)} (the clipboard lane's limit)")
    return bytes(data)


def _size(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // 1024} KiB"


class Paste:
    """What a POST carries: exactly one kind."""

    def __init__(self, kind: str, *, text: str = "", image: bytes = b"", mime: str = "", files: list[str]) -> None:
        self.kind, self.text, self.image, self.mime, self.files = kind, text, image, mime, files

    @property
    def size(self) -> int:
        return len(self.text.encode()) if self.kind == "text" else len(self.image)


async def read_paste(request: Request) -> Paste:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in _MAGIC:
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


def _browser_only(access: LaneAccess) -> None:
    live = access.live
    if live.surface is not Surface.browser:
        raise Refused(
            f"rig {live.id} is a {live.surface.value} rig, which has no clipboard this lane reaches "
            "(use the file lane for files)"
        )


async def _audit(request: Request, access: LaneAccess, verb: str, details: dict[str, Any]) -> None:
    app = request.app.state.ctx
    await access.manager.log_action(access.ws, access.live.id, access.principal, verb, details)
    await app.audit.append(
        access.ws, principal=access.principal.label, action=f"rig.{verb}", target=f"rig:{access.live.id}",
        details=details,
    )  # fmt: skip


async def read_clipboard(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    principal = await app.service(IdentityService).authenticate_bearer(request)
    access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=False)
    decision = await ClipboardGrants(app.dbs.server, app.clock).decide(principal.user_id, "rigToHost")
    if not decision.allowed:
        raise ConsentRequired(consent_message("rigToHost"))
    _browser_only(access)
    mgr = access.manager
    async with mgr.acting(access.ws, rig_id, principal, mutating=False, what="clipboard_read") as (_l, handle):
        session = handle.browser()
        text = await session.clipboard_read()
    details: dict[str, Any] = {
        "kind": "text" if text else "empty",
        "available": text is not None,
        "bytes": len(text.encode()) if text else 0,
        "files": [],
        "consent": decision.why,
    }
    await _audit(request, access, "clipboard_read", details)
    return JSONResponse(
        {
            "rigId": rig_id,
            "engine": session.engine,
            "available": text is not None,
            "text": text,
            "image": None,
            "files": [],
            "note": None if text is not None else NOT_SECURE,
        }
    )


async def write_clipboard(request: Request) -> Response:
    app = request.app.state.ctx
    rig_id = request.path_params["rig_id"]
    principal = await app.service(IdentityService).authenticate_bearer(request)
    access = await authorize(app, "files", rig_id, request.query_params.get("sig"), principal, mutating=True)
    mgr = access.manager
    mgr.check_control(access.live, principal, "clipboard_write")
    decision = await ClipboardGrants(app.dbs.server, app.clock).decide(principal.user_id, "hostToRig")
    if not decision.allowed:
        raise ConsentRequired("pasting into rigs is turned off for you")
    _browser_only(access)
    paste = await read_paste(request)
    applied, reason = False, None
    async with mgr.acting(access.ws, rig_id, principal, mutating=True, what="clipboard_write") as (_l, handle):
        session = handle.browser()
        if paste.kind == "text":
            applied = await session.clipboard_write(paste.text)
            reason = None if applied else NOT_SECURE
        elif paste.kind == "image":
            reason = NO_IMAGES
        else:
            reason = NO_FILES
    details: dict[str, Any] = {"kind": paste.kind, "bytes": paste.size, "files": paste.files, "applied": applied}
    if paste.kind == "image":
        details["mime"] = paste.mime
    await _audit(request, access, "clipboard_write", details)
    return JSONResponse(
        {"rigId": rig_id, "kind": paste.kind, "applied": applied, "reason": reason, "bytes": paste.size,
         "files": paste.files},
    )  # fmt: skip
