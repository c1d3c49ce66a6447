"""Desktop stills: X window dumps turned into PNGs, shrunk by whole factors to the agent bound."""

from __future__ import annotations

import struct

import pytest

from hangar.errors import Unavailable
from hangar.rigs.engines.pixels import image_size
from hangar.rigs.engines.xwd import still_of
from tests.support.png import rgba_at


def dump(width: int, height: int, *, msb: bool = False, bpp: int = 32, pad: int = 0, name: bytes = b"root\0") -> bytes:
    """An X window dump as xwd writes it for a depth-24 true-colour screen; pixel (x, y) is red x, green y, blue 7."""
    line = width * 4 + pad
    header = [100 + len(name), 7, 2, 24, width, height, 0, 1 if msb else 0, 32, 0, 32, bpp, line, 4,
              0xFF0000, 0xFF00, 0xFF, 8, 256, 0, width, height, 0, 0, 0]  # fmt: skip
    rows = []
    for y in range(height):
        row = b"".join(
            bytes((0, x % 256, y % 256, 7)) if msb else bytes((7, y % 256, x % 256, 0)) for x in range(width)
        )
        rows.append(row + b"\0" * pad)
    return struct.pack(">25I", *header) + name + b"".join(rows)


@pytest.mark.parametrize("msb", [False, True])
def test_a_dump_becomes_a_png_of_the_same_pixels(msb: bool) -> None:
    still = still_of(dump(40, 30, msb=msb), 1280, 800)
    assert (still.width, still.height, still.display_width, still.display_height) == (40, 30, 40, 30)
    assert image_size(still.png) == (40, 30)
    assert rgba_at(still.png, 0, 0) == (0, 0, 7, 255)
    assert rgba_at(still.png, 39, 29) == (39, 29, 7, 255)


def test_padded_rows_keep_their_pixels_only() -> None:
    still = still_of(dump(10, 4, pad=8), 1280, 800)
    assert rgba_at(still.png, 9, 3) == (9, 3, 7, 255)


def test_a_larger_screen_shrinks_by_the_smallest_whole_factor_that_fits() -> None:
    exact = still_of(dump(200, 100), 100, 50)  # factor 2, exactly the box
    assert (exact.width, exact.height, exact.display_width, exact.display_height) == (100, 50, 200, 100)
    assert rgba_at(exact.png, 10, 10) == (20, 20, 7, 255)  # every second pixel of every second row
    odd = still_of(dump(201, 101), 100, 50)  # one pixel past the box in each side: factor 3
    assert (odd.width, odd.height) == (67, 34)
    at_limit = still_of(dump(100, 50), 100, 50)  # at the box: unchanged
    assert (at_limit.width, at_limit.height) == (100, 50)


def test_what_is_not_a_depth_24_dump_is_refused() -> None:
    with pytest.raises(Unavailable, match="too short"):
        still_of(b"\0" * 10, 100, 100)
    with pytest.raises(Unavailable, match="16 bits"):
        still_of(dump(4, 4, bpp=16), 100, 100)
    with pytest.raises(Unavailable, match="cut short"):
        still_of(dump(4, 4)[:-3], 100, 100)
