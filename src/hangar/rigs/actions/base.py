"""Total parsing of action payloads: every verb is a pydantic model; a bad payload becomes ``InvalidArgs``
whose message and ``field`` name the offending part (``action.coordinate.0``), never an exception.

A ``VerbTable`` is one tool's verbs (``computer_use``, ``browser_use``...). Each verb says whether it is an
observation: observations stay allowed while a person holds control; every other verb is mutating. A clipboard
verb also names its crossing, which the person's clipboard consent decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from hangar.errors import InvalidArgs
from hangar.rigs.model import Direction, Surface

MAX_PIXEL = 16383
MAX_TEXT = 65536

Pixel = Annotated[StrictInt, Field(ge=0, le=MAX_PIXEL)]
# Guest pixels (or screen points) as [x, y]; JSON arrays arrive as lists.
Coordinate = Annotated[list[Pixel], Field(min_length=2, max_length=2)]
Text = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TEXT)]
Selector = Annotated[StrictStr, Field(min_length=1, max_length=4096)]
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ActionModel(BaseModel):
    """Base of every verb's payload: unknown fields refused, no silent coercion of types."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParams(ActionModel):
    pass


class Point(ActionModel):
    coordinate: Coordinate


class MaybePoint(ActionModel):
    coordinate: Coordinate | None = None


class Drag(ActionModel):
    start_coordinate: Coordinate
    coordinate: Coordinate


class ClipboardText(ActionModel):
    text: Annotated[StrictStr, Field(max_length=MAX_TEXT)]  # text only: images and files use the file lane


def no_control_chars(value: str, what: str) -> str:
    if _CONTROL.search(value):
        raise ValueError(f"{what} must not contain control characters")
    return value


def argv_item(value: str) -> str:
    if "\x00" in value:
        raise ValueError("argv items must not contain NUL")
    return value


@dataclass(frozen=True)
class Verb:
    name: str
    model: type[ActionModel]
    observation: bool = False
    # A clipboard crossing between the rig and its caller: held to the person's clipboard consent
    # (``ClipboardGrants.require``), as the clipboard lane is.
    crossing: Direction | None = None


@dataclass(frozen=True)
class VerbTable:
    tool: str  # the op name: computer_use, browser_use, mobile_use, sim_use
    surface: Surface
    verbs: Mapping[str, Verb]
    needs: str  # the backend this surface needs, in words, for the `unavailable` answer

    @classmethod
    def of(cls, tool: str, surface: Surface, needs: str, *verbs: Verb) -> VerbTable:
        return cls(tool, surface, {v.name: v for v in verbs}, needs)


@dataclass(frozen=True)
class ParsedAction:
    verb: Verb
    params: ActionModel

    @property
    def observation(self) -> bool:
        return self.verb.observation


def _field_of(loc: tuple[int | str, ...]) -> str:
    return ".".join(["action", *(str(p) for p in loc)])


def parse_action(table: VerbTable, payload: Any) -> ParsedAction:
    """Parse ``{"action": "<verb>", ...}`` against ``table``; ``InvalidArgs`` names the field on any fault."""
    if not isinstance(payload, Mapping):
        raise InvalidArgs('action must be an object like {"action": "<verb>", ...}', field="action")
    names = ", ".join(table.verbs)
    verb_name = payload.get("action")
    if verb_name is None:
        raise InvalidArgs(f"action.action is required: one of {names}", field="action.action")
    if not isinstance(verb_name, str) or verb_name not in table.verbs:
        raise InvalidArgs(f"action.action must be one of {names}, not {verb_name!r}", field="action.action")
    verb = table.verbs[verb_name]
    fields = {k: v for k, v in payload.items() if k != "action"}
    try:
        params = verb.model.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = _field_of(tuple(err["loc"]))
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"{verb_name} takes no such field"
        raise InvalidArgs(f"{field}: {msg}", field=field) from None
    return ParsedAction(verb, params)
