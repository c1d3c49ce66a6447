"""W3C input action sequences, the same JSON for BiDi ``input.performActions`` and classic ``POST /actions``.

Each builder returns a list of input sources (https://w3c.github.io/webdriver/#actions). Source ids are fixed so
the engine's input state (the pointer's position, keys held down) carries over from one call to the next: the
live view sends a key going down and, later, the same key going up. Coordinates are viewport CSS pixels.
"""

from __future__ import annotations

from typing import Any

from hangar.rigs.engines.keys import key_spec, parse_chord
from hangar.rigs.engines.session import MouseButton

Source = dict[str, Any]

MOUSE = "hangar-mouse"
KEYBOARD = "hangar-keyboard"
WHEEL = "hangar-wheel"

_BUTTONS: dict[str, int] = {"left": 0, "middle": 1, "right": 2}
DRAG_STEPS = 12  # moves between press and release: drag-and-drop code wants to see the pointer travel
DRAG_STEP_MS = 16


def _pointer(actions: list[dict[str, Any]]) -> Source:
    return {"type": "pointer", "id": MOUSE, "parameters": {"pointerType": "mouse"}, "actions": actions}


def _move(x: int, y: int, duration_ms: int = 0) -> dict[str, Any]:
    return {"type": "pointerMove", "x": int(x), "y": int(y), "duration": duration_ms, "origin": "viewport"}


def button_index(button: MouseButton) -> int:
    return _BUTTONS[button]


def move(x: int, y: int) -> list[Source]:
    return [_pointer([_move(x, y)])]


def press(down: bool, button: MouseButton, at: tuple[int, int] | None) -> list[Source]:
    """A button going down or up, at ``at`` (moving there first) or where the pointer is."""
    actions = [_move(*at)] if at is not None else []
    actions.append({"type": "pointerDown" if down else "pointerUp", "button": button_index(button)})
    return [_pointer(actions)]


def click(x: int, y: int, button: MouseButton) -> list[Source]:
    index = button_index(button)
    return [_pointer([_move(x, y), {"type": "pointerDown", "button": index}, {"type": "pointerUp", "button": index}])]


def drag(start: tuple[int, int], end: tuple[int, int], steps: int = DRAG_STEPS) -> list[Source]:
    """Press at ``start``, travel to ``end`` in ``steps`` moves, release there."""
    (x0, y0), (x1, y1) = start, end
    actions: list[dict[str, Any]] = [_move(x0, y0), {"type": "pointerDown", "button": 0}]
    for i in range(1, steps + 1):
        actions.append(_move(round(x0 + (x1 - x0) * i / steps), round(y0 + (y1 - y0) * i / steps), DRAG_STEP_MS))
    actions.append({"type": "pointerUp", "button": 0})
    return [_pointer(actions)]


def wheel(x: int, y: int, delta_x: int, delta_y: int) -> list[Source]:
    action = {"type": "scroll", "x": int(x), "y": int(y), "deltaX": int(delta_x), "deltaY": int(delta_y)}
    return [{"type": "wheel", "id": WHEEL, "actions": [{**action, "duration": 0, "origin": "viewport"}]}]


def _keys(actions: list[dict[str, Any]]) -> Source:
    return {"type": "key", "id": KEYBOARD, "actions": actions}


def chord(combo: str) -> list[Source]:
    """``Control+a``: the modifiers go down, the key goes down and up, the modifiers come up in reverse."""
    parsed = parse_chord(combo)
    held = [m.webdriver for m in parsed.modifiers]
    actions = [{"type": "keyDown", "value": v} for v in held]
    actions += [{"type": "keyDown", "value": parsed.key.webdriver}, {"type": "keyUp", "value": parsed.key.webdriver}]
    actions += [{"type": "keyUp", "value": v} for v in reversed(held)]
    return [_keys(actions)]


def key_event(down: bool, key: str) -> list[Source]:
    return [_keys([{"type": "keyDown" if down else "keyUp", "value": key_spec(key).webdriver}])]


_TYPED_SPECIALS = {"\n": "\ue007", "\t": "\ue004"}


def typing(text: str) -> list[Source]:
    """Each character of ``text`` pressed and released; a newline is Enter and a tab is Tab."""
    actions: list[dict[str, Any]] = []
    for char in text:
        if char == "\r":
            continue  # "\r\n" types one Enter
        value = _TYPED_SPECIALS.get(char, char)
        actions += [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}]
    return [_keys(actions)] if actions else []
