"""The live view's wire: the frame header, the size a watcher gets, and the client's messages parsed totally."""

from __future__ import annotations

import json
import struct
import time

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.engines.session import Frame
from hangar.rigs.lanes.liveview import (
    HEADER,
    KeyInput,
    MouseInput,
    ResizeInput,
    TextInput,
    ViewRequest,
    WheelInput,
    decode_header,
    encode_frame,
    negotiate,
    parse_message,
    view_size,
)


def test_a_frame_is_a_16_byte_big_endian_header_then_the_jpeg() -> None:
    jpeg = b"\xff\xd8\xff\xe0fake-but-opaque-bytes"
    captured = time.monotonic() - 0.25
    before = time.time() * 1000
    data = encode_frame(70_000, Frame(jpeg, 2560, 1600, captured))
    assert HEADER.size == 16 and data[16:] == jpeg
    seq, width, height, ms = decode_header(data)
    assert (seq, width, height) == (70_000, 2560, 1600)
    assert data[:8] == struct.pack(">IHH", 70_000, 2560, 1600)  # network order, as a DataView reads it
    # The monotonic stamp becomes wall-clock milliseconds a quarter second ago (what Date.now() compares to).
    assert before - 300 < ms < before - 200
    with pytest.raises(InvalidArgs):
        decode_header(b"short")


def test_the_sequence_wraps_rather_than_overflowing() -> None:
    assert decode_header(encode_frame(2**32 + 5, Frame(b"x", 1, 1, time.monotonic())))[0] == 5


@pytest.mark.parametrize(
    ("asked", "got"),
    [((1280, 800), (1280, 800)), ((3840, 2160), (2560, 1600)), ((640, 4000), (640, 1600)), ((0, 0), (1, 1))],
)
def test_the_person_s_lane_negotiates_up_to_2560x1600(asked: tuple[int, int], got: tuple[int, int]) -> None:
    assert negotiate(*asked) == got


def test_the_first_size_comes_from_the_query_or_defaults() -> None:
    assert view_size(None, None) == (1280, 800)
    assert view_size("5000", "5000") == (2560, 1600)
    for w, h in (("12", None), ("x", "3"), ("-1", "3")):
        with pytest.raises(InvalidArgs):
            view_size(w, h)


def msg(**fields: object) -> str:
    return json.dumps(fields)


def test_input_messages_parse_into_events() -> None:
    assert parse_message(msg(type="mouse", action="down", x=10, y=20, button="right")) == MouseInput(
        "down", 10, 20, "right"
    )
    assert parse_message(msg(type="mouse", action="move", x=0, y=0)) == MouseInput("move", 0, 0, "left")
    assert parse_message(msg(type="key", action="up", key="Enter")) == KeyInput(False, "Enter")
    assert parse_message(msg(type="key", action="down", key="Space")) == KeyInput(True, " ")
    assert parse_message(msg(type="wheel", x=5, y=6, deltaY=-120)) == WheelInput(5, 6, 0, -120)
    assert parse_message(msg(type="text", text="héllo")) == TextInput("héllo")
    assert parse_message(msg(type="resize", width=1024, height=700)) == ResizeInput(1024, 700)
    assert parse_message(msg(type="view", width=9999, height=300)) == ViewRequest(2560, 300)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not json", "type"),
        ("[1]", "type"),
        (msg(type="teleport"), "type"),
        (msg(type="mouse", action="hover", x=1, y=1), "action"),
        (msg(type="mouse", action="down", x=1.5, y=1), "x"),
        (msg(type="mouse", action="down", x=True, y=1), "x"),
        (msg(type="mouse", action="down", x=1, y=-1), "y"),
        (msg(type="mouse", action="down", x=1, y=1, button="fourth"), "button"),
        (msg(type="key", action="down", key="NoSuchKey"), "key"),
        (msg(type="key", action="press", key="a"), "action"),
        (msg(type="text", text=""), "text"),
        (msg(type="text", text="x" * 65537), "text"),
        (msg(type="resize", width=200, height=700), "width"),
        (msg(type="resize", width=1024, height=1601), "height"),
        (msg(type="wheel", x=1, y=1, deltaX=10**6), "deltaX"),
    ],
)
def test_malformed_messages_name_their_field(text: str, field: str) -> None:
    with pytest.raises(InvalidArgs) as e:
        parse_message(text)
    assert e.value.field == field
