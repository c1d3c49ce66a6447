"""Images on a browser page's clipboard, the part every engine shares: the page script's answers (``js/
clipboard_image.js``) read into a verdict and a note, and the bounds.

The image travels base64-encoded as one protocol message each way (at most 16 MB of image, so about 22 MB of
text), which the three protocols carry: the DevTools and BiDi sockets are opened with 256 MB message limits and
classic WebDriver is plain HTTP. Reading is bounded in the page first (an image over the cap answers only its
size), then again here, because the page's answer is untrusted: it may be anything, of any size the socket let
through, so its type and magic bytes are checked before it is handed on as an image.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from hangar.rigs.engines.session import ImageMime

MB = 1024 * 1024
MAX_IMAGE_BYTES = 16 * MB  # the clipboard lane's limit, both ways
MAGIC: dict[ImageMime, bytes] = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
NO_CLIPBOARD_API = "the page is not a secure context, so it has no clipboard API"
NOT_KEPT = "the page's clipboard accepted the image but does not hold it afterwards"
NOT_AN_IMAGE = "the page's answer to the clipboard read is not a PNG or JPEG image within the limit"


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _refusal(answer: dict[str, Any]) -> str | None:
    """What the page said when its clipboard API could not or would not (cut: the page chose the words)."""
    if "unsupported" in answer:
        return str(answer["unsupported"])[:300]
    if "denied" in answer:
        return f"the page's clipboard API refused: {str(answer['denied'])[:300]}"
    return None


def written(engine: str, mime: ImageMime, answer: Any) -> tuple[bool, str | None]:
    """Whether the page's write put the image on the clipboard, and the note: why not, or what it changed."""
    if not isinstance(answer, dict):
        return False, "the page answered the clipboard write with something unexpected"
    if answer.get("absent"):
        return False, NO_CLIPBOARD_API
    refusal = _refusal(answer)
    if refusal is not None:
        return False, refusal
    if answer.get("kept") is not True:
        return False, NOT_KEPT
    if answer.get("converted"):
        return True, (
            f"{engine}'s clipboard takes PNG images only, so the {mime.split('/')[1].upper()} was converted to PNG "
            "in the page (same pixels; metadata such as EXIF is dropped)"
        )
    return True, None


def read_back(answer: Any, cap: int = MAX_IMAGE_BYTES) -> tuple[tuple[ImageMime, bytes] | None, str | None]:
    """The image the page's read found, or None and a note (None when the clipboard simply holds no image)."""
    if not isinstance(answer, dict):
        return None, "the page answered the clipboard read with something unexpected"
    if answer.get("absent"):
        return None, NO_CLIPBOARD_API
    if answer.get("none"):
        return None, None
    refusal = _refusal(answer)
    if refusal is not None:
        return None, refusal
    size = answer.get("tooLarge")
    if isinstance(size, int):
        return None, f"the clipboard's image is {size / MB:.1f} MB, over the {cap // MB} MB limit, so it was not read"
    mime, text = answer.get("type"), answer.get("data")
    if mime not in MAGIC or not isinstance(text, str) or len(text) > (cap + 2) // 3 * 4:
        return None, NOT_AN_IMAGE
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None, "the page's answer to the clipboard read is not valid base64"
    if len(data) > cap:
        return None, NOT_AN_IMAGE
    image_mime: ImageMime = "image/png" if mime == "image/png" else "image/jpeg"
    if not data.startswith(MAGIC[image_mime]):
        return None, f"the clipboard's {image_mime} is not one (its first bytes say otherwise)"
    return (image_mime, data), None
