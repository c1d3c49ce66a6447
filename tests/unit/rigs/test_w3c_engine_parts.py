"""The protocol-free parts of engines B and C: W3C action sequences, image sizes and the fit-inside rule, the
W3C error translation, BiDi value conversion, and the page scripts' loader."""

from __future__ import annotations

import struct
import zlib

import pytest

from hangar.errors import InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.engines.firefox.bidi import local_value, python_value
from hangar.rigs.engines.pixels import fit, image_size
from hangar.rigs.engines.scripts import script
from hangar.rigs.engines.w3c import actions as w3c_actions
from hangar.rigs.engines.w3c.errors import EngineTimeout, w3c_error


def test_chord_holds_modifiers_around_the_key() -> None:
    [source] = w3c_actions.chord("Control+Shift+a")
    assert source["type"] == "key" and source["id"] == w3c_actions.KEYBOARD
    assert [(a["type"], a["value"]) for a in source["actions"]] == [
        ("keyDown", "\ue009"), ("keyDown", "\ue008"), ("keyDown", "a"), ("keyUp", "a"),
        ("keyUp", "\ue008"), ("keyUp", "\ue009"),
    ]  # fmt: skip
    with pytest.raises(InvalidArgs):
        w3c_actions.chord("Hyper+a")


def test_typing_maps_newlines_and_tabs() -> None:
    [source] = w3c_actions.typing("a\r\nb\t")
    values = [a["value"] for a in source["actions"] if a["type"] == "keyDown"]
    assert values == ["a", "\ue007", "b", "\ue004"]
    assert w3c_actions.typing("\r") == []


def test_pointer_sequences() -> None:
    [click] = w3c_actions.click(10, 20, "right")
    assert [a["type"] for a in click["actions"]] == ["pointerMove", "pointerDown", "pointerUp"]
    assert click["actions"][1]["button"] == 2
    [drag] = w3c_actions.drag((0, 0), (100, 50), steps=4)
    moves = [(a["x"], a["y"]) for a in drag["actions"] if a["type"] == "pointerMove"]
    assert moves == [(0, 0), (25, 12), (50, 25), (75, 38), (100, 50)]
    [release] = w3c_actions.press(False, "left", None)  # where the pointer is: no move
    assert release["actions"] == [{"type": "pointerUp", "button": 0}]
    [wheel] = w3c_actions.wheel(5, 6, 0, 300)
    assert wheel["type"] == "wheel" and wheel["actions"][0]["deltaY"] == 300


def test_fit_scales_down_keeping_aspect_and_never_up() -> None:
    assert fit(2560, 1600, 1280, 800) == (1280, 800)
    assert fit(1280, 4000, 1280, 800) == (256, 800)
    assert fit(800, 600, 1280, 800) == (800, 600)


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00" * 3 * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_image_size_reads_png_and_jpeg_headers() -> None:
    assert image_size(_png(7, 3)) == (7, 3)
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc0" + struct.pack(">HBHH", 11, 8, 600, 800) + b"\x01\x01\x11\x00"
    assert image_size(b"\xff\xd8" + app0 + sof + b"\xff\xd9") == (800, 600)
    with pytest.raises(Unavailable):
        image_size(b"GIF89a")


def test_w3c_errors_map_to_hangar_errors() -> None:
    assert isinstance(w3c_error("no such element", "gone", "find"), NotFound)
    assert isinstance(w3c_error("invalid selector", "bad", "find"), InvalidArgs)
    assert isinstance(w3c_error("javascript error", "boom", "execute"), Refused)
    timeout = w3c_error("timeout", "slow", "navigate")
    assert isinstance(timeout, EngineTimeout) and timeout.detail_code == "timeout"
    other = w3c_error("unknown error", "x" * 5000, "navigate")
    assert isinstance(other, Unavailable) and other.detail_code == "unknown_error" and len(other.message) < 400


def test_bidi_values_round_trip() -> None:
    assert local_value({"a": [1, "x", None, True]}) == {
        "type": "object",
        "value": [["a", {"type": "array", "value": [
            {"type": "number", "value": 1}, {"type": "string", "value": "x"}, {"type": "null"},
            {"type": "boolean", "value": True},
        ]}]],
    }  # fmt: skip
    remote = {
        "type": "object",
        "value": [["n", {"type": "number", "value": "NaN"}], ["s", {"type": "string", "value": "v"}]],
    }
    result = python_value(remote)
    assert result["s"] == "v" and result["n"] != result["n"]
    node = {"type": "node", "sharedId": "abc"}
    assert python_value(node) is node
    with pytest.raises(InvalidArgs):
        local_value(float("inf"))


def test_page_scripts_are_function_expressions() -> None:
    from importlib import resources

    names = [p.name[:-3] for p in (resources.files("hangar.rigs.engines") / "js").iterdir() if p.name.endswith(".js")]
    assert {"a11y_approx", "console_hook", "element", "wait_for", "clipboard", "file_input", "nav_mark"} <= set(names)
    for name in names:
        text = script(name)
        assert text.startswith(("(function", "(async function")) and text.endswith(")"), name
