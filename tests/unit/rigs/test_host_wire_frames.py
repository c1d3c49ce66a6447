"""The rig hosts' wire keeps every frame under the server listener's WebSocket message cap: a long text message
goes in pieces (at the cap one frame, one byte past it pieces), a message is bounded (at ``MAX_MESSAGE`` carried,
one byte past refused, on sending and on gathering), and file chunks and terminal bytes fit a frame."""

from __future__ import annotations

import base64
import struct

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.hosts import wire
from hangar.rpc.endpoint import MAX_FRAME_BYTES
from hangar.server import listeners


def _sized(n: int) -> str:
    """A JSON text message of exactly ``n`` bytes."""
    head = wire.dumps({"re": 1, "ok": {"stdout": ""}})
    return head.replace('""', '"' + "x" * (n - len(head)) + '"')


def _gather(frames: list[str | bytes]) -> str:
    pieces = wire.Pieces()
    got = None
    for one in frames:
        assert isinstance(one, bytes) and len(one) <= wire.FRAME_MAX
        channel, data = wire.unframe(one)
        assert channel == wire.PART_CHANNEL and got is None
        got = pieces.add(data)
    assert got is not None
    return got


def test_the_frame_cap_is_the_listeners() -> None:
    assert wire.FRAME_MAX == MAX_FRAME_BYTES == listeners.MAX_FRAME_BYTES  # what the listener's ws_max_size is


def test_a_message_at_the_cap_is_one_frame_one_byte_past_goes_in_pieces() -> None:
    at = _sized(wire.FRAME_MAX)
    assert list(wire.message_frames(at)) == [at]
    past = _sized(wire.FRAME_MAX + 1)
    frames = list(wire.message_frames(past))
    assert len(frames) == 2 and _gather(frames) == past
    multibyte = wire.dumps({"re": 2, "ok": {"stdout": "é" * wire.FRAME_MAX}}).replace("\\u00e9", "é")
    assert _gather(list(wire.message_frames(multibyte))) == multibyte  # a character cut between pieces


def test_a_message_at_the_bound_is_carried_one_byte_past_is_refused() -> None:
    at = _sized(wire.MAX_MESSAGE)
    frames = list(wire.message_frames(at))
    assert _gather(frames) == at
    with pytest.raises(wire.MessageTooLong):
        list(wire.message_frames(_sized(wire.MAX_MESSAGE + 1)))
    # Gathering: pieces past the bound (a peer that does not keep it) are refused, what was gathered dropped.
    pieces = wire.Pieces()
    step = wire.FRAME_MAX - 5
    for _ in range(wire.MAX_MESSAGE // step):
        assert pieces.add(b"\x00" + b"x" * step) is None
    assert pieces.add(b"\x00" + b"x" * (wire.MAX_MESSAGE % step)) is None  # exactly at the bound
    with pytest.raises(wire.MessageTooLong):
        pieces.add(b"\x01x")
    assert pieces.add(b"\x01{}") == "{}"
    with pytest.raises(InvalidArgs):
        pieces.add(b"\x02{}")


def test_file_chunks_and_terminal_bytes_fit_a_frame() -> None:
    chunk = base64.b64encode(b"\xff" * wire.FILE_CHUNK).decode()
    request = wire.dumps({"id": 2**53, "op": "fileChunk", "channel": 2**32 - 1, "data": chunk})
    answer = wire.dumps({"re": 2**53, "ok": {"data": chunk}})
    assert len(request) <= wire.FRAME_MAX and len(answer) <= wire.FRAME_MAX
    data = bytes(range(256)) * 3000
    frames = list(wire.terminal_frames(7, data))
    assert all(len(f) <= wire.FRAME_MAX for f in frames) and len(frames) == 3
    assert b"".join(f[4:] for f in frames) == data
    assert {struct.unpack(">I", f[:4])[0] for f in frames} == {7}
