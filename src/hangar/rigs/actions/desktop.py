"""``computer_use``: a desktop on X11. Coordinates are guest pixels in the current mode; keys use X11
spellings (``ctrl+shift+t``, ``Return``, ``KP_Enter``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator

from hangar.rigs.actions.base import (
    ActionModel,
    ClipboardText,
    Coordinate,
    Drag,
    MaybePoint,
    NoParams,
    Point,
    Verb,
    VerbTable,
)
from hangar.rigs.model import Surface

_X11_COMBO = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")

Seconds60 = Annotated[StrictFloat, Field(ge=0, le=60)]  # strict floats still take ints, never bools


def x11_combo(value: str) -> str:
    if not _X11_COMBO.match(value):
        raise ValueError("must be X11 key names joined by '+', like ctrl+shift+t or Return")
    return value


class Scroll(ActionModel):
    coordinate: Coordinate | None = None
    scroll_direction: Literal["up", "down", "left", "right"]
    scroll_amount: Annotated[StrictInt, Field(ge=1, le=50)] = 3


class Key(ActionModel):
    text: Annotated[StrictStr, Field(min_length=1, max_length=200)]

    @field_validator("text")
    @classmethod
    def _combo(cls, v: str) -> str:
        return x11_combo(v)


class HoldKey(Key):
    duration: Seconds60  # seconds, 0 to 60


# Typed key by key (a few milliseconds each): 4096 characters take about 20 s; longer text goes through
# clipboard_write and a paste.
MAX_TYPE = 4096


class TypeText(ActionModel):
    text: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TYPE)]


class Wait(ActionModel):
    duration: Seconds60  # seconds, 0 to 60


class SetDisplay(ActionModel):
    # The human lane negotiates up to 2560x1600; nothing smaller than the browser's minimum viewport.
    width: Annotated[StrictInt, Field(ge=320, le=2560)]
    height: Annotated[StrictInt, Field(ge=240, le=1600)]


class ClipboardRead(ActionModel):
    selection: Literal["clipboard", "primary", "xdnd"] = "clipboard"


COMPUTER_USE = VerbTable.of(
    "computer_use",
    Surface.computer,
    "a desktop backend (the enclosure's Xvfb desktop, or a full VM: fullvm-kvm on Linux, fullvm-hvf on macOS)",
    Verb("screenshot", NoParams, observation=True),
    Verb("cursor_position", NoParams, observation=True),
    Verb("mouse_move", Point),
    Verb("left_click", MaybePoint),
    Verb("right_click", MaybePoint),
    Verb("middle_click", MaybePoint),
    Verb("double_click", MaybePoint),
    Verb("triple_click", MaybePoint),
    Verb("left_mouse_down", MaybePoint),
    Verb("left_mouse_up", MaybePoint),
    Verb("left_click_drag", Drag),
    Verb("scroll", Scroll),
    Verb("key", Key),
    Verb("hold_key", HoldKey),
    Verb("type", TypeText),
    Verb("wait", Wait, observation=True),
    Verb("set_display", SetDisplay),
    Verb("clipboard_read", ClipboardRead, observation=True, crossing="rigToHost"),
    Verb("clipboard_write", ClipboardText, crossing="hostToRig"),
)
