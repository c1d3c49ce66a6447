"""``browser_use``: a headless browser engine. Keys are DOM key names (``Enter``, ``ArrowLeft``, ``a``,
``Control+a``); the browser has one clipboard, so ``clipboard_read`` takes no selection."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator, model_validator

from hangar.rigs.actions.base import (
    ActionModel,
    ClipboardText,
    Coordinate,
    Drag,
    MaybePoint,
    NoParams,
    Point,
    Selector,
    Text,
    Verb,
    VerbTable,
)
from hangar.rigs.model import Surface

_DOM_KEY = re.compile(r"^((Alt|Control|Meta|Shift)\+)*([^\s+]|\+|[A-Z][A-Za-z0-9]{1,30})$")
Delta = Annotated[StrictInt, Field(ge=-100_000, le=100_000)]


class Navigate(ActionModel):
    url: Annotated[StrictStr, Field(min_length=1, max_length=8192)]

    @field_validator("url")
    @classmethod
    def _http_only(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http:// or https:// URL")
        if any(c.isspace() for c in v):
            raise ValueError("must not contain whitespace")
        return v


class Reload(ActionModel):
    hard: StrictBool = False  # engines B and C perform a hard reload as a normal one


class Click(ActionModel):
    selector: Selector | None = None
    coordinate: Coordinate | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Click:
        if (self.selector is None) == (self.coordinate is None):
            raise ValueError("give exactly one of selector or coordinate")
        return self


class Fill(ActionModel):
    selector: Selector
    value: Annotated[StrictStr, Field(max_length=65536)]


class TypeText(ActionModel):
    text: Text
    selector: Selector | None = None


class Key(ActionModel):
    key: Annotated[StrictStr, Field(min_length=1, max_length=100)]

    @field_validator("key")
    @classmethod
    def _dom_key(cls, v: str) -> str:
        if not _DOM_KEY.match(v):
            raise ValueError("must be a DOM key name such as Enter, ArrowLeft or a, optionally after Control+")
        return v


class Scroll(ActionModel):
    coordinate: Coordinate | None = None
    delta_x: Delta = 0
    delta_y: Delta = 0

    @model_validator(mode="after")
    def _moves(self) -> Scroll:
        if self.delta_x == 0 and self.delta_y == 0:
            raise ValueError("delta_x or delta_y must be non-zero")
        return self


class Extract(ActionModel):
    kind: Literal["a11y", "dom", "console"]


class Screenshot(ActionModel):
    full_page: StrictBool = False


class SetViewport(ActionModel):
    width: Annotated[StrictInt, Field(ge=320, le=7680)]
    height: Annotated[StrictInt, Field(ge=240, le=4320)]


class History(ActionModel):
    direction: Literal["back", "forward"]


class SwitchPage(ActionModel):
    page: Annotated[StrictStr, Field(min_length=1, max_length=128)]  # an id ``pages`` listed


class WaitFor(ActionModel):
    selector: Selector
    timeout: Annotated[StrictFloat, Field(ge=0.1, le=30)] = 5.0  # seconds, 0.1 to 30


BROWSER_USE = VerbTable.of(
    "browser_use",
    Surface.browser,
    "the microvm backend (QEMU microVMs with a browser image)",
    Verb("navigate", Navigate),
    Verb("reload", Reload),
    Verb("stop_loading", NoParams),
    Verb("click", Click),
    Verb("fill", Fill),
    Verb("type", TypeText),
    Verb("key", Key),
    Verb("scroll", Scroll),
    Verb("mouse_move", Point),
    Verb("drag", Drag),
    Verb("left_mouse_down", MaybePoint),
    Verb("left_mouse_up", MaybePoint),
    Verb("extract", Extract, observation=True),
    Verb("screenshot", Screenshot, observation=True),
    Verb("set_viewport", SetViewport),
    Verb("history", History),
    Verb("pages", NoParams, observation=True),
    Verb("switch_page", SwitchPage),
    Verb("wait_for", WaitFor, observation=True),
    Verb("clipboard_read", NoParams, observation=True, crossing="rigToHost"),
    Verb("clipboard_write", ClipboardText, crossing="hostToRig"),
)
