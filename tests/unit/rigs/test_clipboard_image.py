"""How the page script's answers about clipboard images are read (``engines/clipboard_image.py``): every answer
comes from an untrusted page, so anything but a well-formed image within the limit is a None with a note."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from hangar.rigs.engines.clipboard_image import MAX_IMAGE_BYTES, NO_CLIPBOARD_API, NOT_KEPT, read_back, written
from tests.support.images import solid_png

PNG = solid_png(4, 3, (1, 2, 3))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_write_is_applied_only_when_the_clipboard_kept_the_image() -> None:
    assert written("engine-a", "image/png", {"kept": True, "type": "image/png", "converted": False}) == (True, None)
    ok, note = written("engine-c", "image/jpeg", {"kept": True, "type": "image/png", "converted": True})
    assert ok is True and note is not None and "engine-c's clipboard takes PNG images only" in note
    assert "JPEG was converted to PNG" in note
    assert written("engine-a", "image/png", {"kept": False, "type": "image/png"}) == (False, NOT_KEPT)
    assert written("engine-a", "image/png", {"absent": True}) == (False, NO_CLIPBOARD_API)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"denied": "NotAllowedError: no"}, "the page's clipboard API refused: NotAllowedError: no"),
        ({"unsupported": "no ClipboardItem"}, "no ClipboardItem"),
        ({"kept": "yes"}, NOT_KEPT),  # only a true boolean counts
        ("done", "unexpected"),
        (None, "unexpected"),
    ],
)
def test_a_write_that_failed_says_why(answer: Any, says: str) -> None:
    ok, note = written("engine-a", "image/png", answer)
    assert ok is False and note is not None and says in note


def test_a_long_refusal_is_cut() -> None:
    _, note = written("engine-a", "image/png", {"denied": "x" * 5000})
    assert note is not None and len(note) < 400


def test_a_read_returns_the_checked_image() -> None:
    assert read_back({"type": "image/png", "data": b64(PNG)}) == (("image/png", PNG), None)
    jpeg = b"\xff\xd8\xff\xe0" + bytes(20)
    assert read_back({"type": "image/jpeg", "data": b64(jpeg)}) == (("image/jpeg", jpeg), None)
    assert read_back({"none": True}) == (None, None)  # no image on the clipboard: nothing to say
    assert read_back({"absent": True}) == (None, NO_CLIPBOARD_API)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"tooLarge": 20 * 1024 * 1024, "type": "image/png"}, "20.0 MB, over the 16 MB limit"),
        ({"type": "image/gif", "data": b64(b"GIF89a")}, "not a PNG or JPEG"),
        ({"type": "image/png", "data": 42}, "not a PNG or JPEG"),
        ({"type": "image/png", "data": "not base64!"}, "not valid base64"),
        ({"type": "image/png", "data": b64(b"\xff\xd8\xff" + bytes(8))}, "its first bytes say otherwise"),
        ({"denied": "NotAllowedError: no"}, "refused"),
        (["image/png"], "unexpected"),
    ],
)
def test_a_read_of_anything_else_is_none_with_a_note(answer: Any, says: str) -> None:
    image, note = read_back(answer)
    assert image is None and note is not None and says in note


def test_a_read_larger_than_the_cap_is_refused_whatever_the_page_claims() -> None:
    big = b"\x89PNG\r\n\x1a\n" + bytes(MAX_IMAGE_BYTES)  # the page ignored the cap it was given
    image, note = read_back({"type": "image/png", "data": b64(big)})
    assert image is None and note is not None and "within the limit" in note
    small = b"\x89PNG\r\n\x1a\n" + bytes(100)
    assert read_back({"type": "image/png", "data": b64(small)}, cap=64)[0] is None
    assert read_back({"type": "image/png", "data": b64(small)}, cap=200)[0] == ("image/png", small)
