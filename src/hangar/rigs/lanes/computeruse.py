"""``computer_use`` on a computer rig: each parsed verb (``actions.desktop``) carried out on the rig's X11 desktop
(``capabilities.Desktop``), answered with the display size it happened on, and written to the rig's action log.

Rules held here:
- coordinates are guest pixels in the current mode: a point off the display is refused naming its field before
  anything moves, and every screenshot (and every pointer verb) states the display size;
- key names are X11 spellings the desktop knows, checked before anything is pressed;
- agent stills fit within 1280x800 (the spec's agent-lane bound);
- ``hold_key`` and ``wait`` last 0 to 60 s (the verb table bounds them);
- what a selection holds comes back fenced as untrusted data; the action log keeps counts and sizes, never what
  was typed or what a selection held (length and SHA-256 only);
- a mutating verb is refused while a person holds control (observations stay allowed), and so is a clipboard
  verb its caller's clipboard consent does not allow; both refusals are logged too.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

from hangar.core.principal import Principal
from hangar.rigs import hooks
from hangar.rigs.actions import base as act
from hangar.rigs.actions import desktop as verbs
from hangar.rigs.actions.base import ParsedAction
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.backends.capabilities import Desktop
from hangar.rigs.lanes.fence import fence
from hangar.rigs.lanes.useverb import use_verb
from hangar.rigs.lifecycle.manager import RigManager

AGENT_MAX = (1280, 800)  # the spec's bound on agent-lane stills; the person's live view has its own
VERB_TIMEOUT_S = 60.0  # one verb's bound beyond its own length (a hold, a wait, long typing)
BUTTONS = {"left": 1, "middle": 2, "right": 3}
WHEEL = {"up": 4, "down": 5, "left": 6, "right": 7}  # X11's wheel buttons

Result = dict[str, Any]
Details = dict[str, Any]


async def _display(d: Desktop) -> Result:
    width, height = await d.size()
    return {"width": width, "height": height}


async def _at(d: Desktop, coordinate: list[int] | None, field: str) -> list[str]:
    """The move to ``coordinate`` (checked against the display), or nothing when the verb acts where the pointer
    is."""
    if coordinate is None:
        return []
    x, y = coordinate
    await d.check_point(x, y, field)
    return [f"mousemove {x} {y}"]


async def _screenshot(d: Desktop, _p: act.NoParams) -> tuple[Result, Details]:
    still = await d.screenshot(*AGENT_MAX)
    image = {"mime": "image/png", "base64": base64.b64encode(still.png).decode(), "width": still.width,
             "height": still.height}  # fmt: skip
    display = {"width": still.display_width, "height": still.display_height}
    return {"image": image, "display": display}, {"width": still.width, "height": still.height,
                                                  "bytes": len(still.png)}  # fmt: skip


async def _cursor(d: Desktop, _p: act.NoParams) -> tuple[Result, Details]:
    x, y = await d.cursor()
    return {"coordinate": [x, y], "display": await _display(d)}, {"coordinate": [x, y]}


async def _move(d: Desktop, p: act.Point) -> tuple[Result, Details]:
    await d.pointer(await _at(d, p.coordinate, "action.coordinate"))
    return {"moved": p.coordinate, "display": await _display(d)}, {"coordinate": p.coordinate}


def _click(button: str, count: int) -> Callable[[Desktop, act.MaybePoint], Awaitable[tuple[Result, Details]]]:
    async def click(d: Desktop, p: act.MaybePoint) -> tuple[Result, Details]:
        steps = await _at(d, p.coordinate, "action.coordinate")
        await d.pointer([*steps, f"click --repeat {count} {BUTTONS[button]}"])
        at = p.coordinate if p.coordinate is not None else list(await d.cursor())
        result = {"button": button, "clicks": count, "at": at, "display": await _display(d)}
        return result, {"coordinate": at, "clicks": count}

    return click


def _press(down: bool) -> Callable[[Desktop, act.MaybePoint], Awaitable[tuple[Result, Details]]]:
    async def press(d: Desktop, p: act.MaybePoint) -> tuple[Result, Details]:
        steps = await _at(d, p.coordinate, "action.coordinate")
        await d.pointer([*steps, f"{'mousedown' if down else 'mouseup'} 1"])
        at = p.coordinate if p.coordinate is not None else list(await d.cursor())
        return {"button": "left", "down": down, "at": at, "display": await _display(d)}, {"coordinate": at}

    return press


async def _drag(d: Desktop, p: act.Drag) -> tuple[Result, Details]:
    start = await _at(d, p.start_coordinate, "action.start_coordinate")
    end = await _at(d, p.coordinate, "action.coordinate")
    (sx, sy), (ex, ey) = p.start_coordinate, p.coordinate
    # A pause and a motion halfway: toolkits start a drag on motion with the button held, not on a jump.
    steps = [*start, "mousedown 1", "sleep 0.05", f"mousemove {(sx + ex) // 2} {(sy + ey) // 2}", "sleep 0.05",
             *end, "sleep 0.05", "mouseup 1"]  # fmt: skip
    await d.pointer(steps)
    result = {"dragged": [p.start_coordinate, p.coordinate], "display": await _display(d)}
    return result, {"start": p.start_coordinate, "end": p.coordinate}


async def _scroll(d: Desktop, p: verbs.Scroll) -> tuple[Result, Details]:
    steps = await _at(d, p.coordinate, "action.coordinate")
    await d.pointer([*steps, f"click --repeat {p.scroll_amount} {WHEEL[p.scroll_direction]}"])
    result = {"scrolled": p.scroll_direction, "amount": p.scroll_amount, "display": await _display(d)}
    return result, {"coordinate": p.coordinate, "direction": p.scroll_direction, "amount": p.scroll_amount}


async def _key(d: Desktop, p: verbs.Key) -> tuple[Result, Details]:
    await d.key(p.text, None, "action.text")
    return {"key": p.text}, {"key": p.text}


async def _hold_key(d: Desktop, p: verbs.HoldKey) -> tuple[Result, Details]:
    await d.key(p.text, p.duration, "action.text")
    return {"key": p.text, "held": p.duration}, {"key": p.text, "duration": p.duration}


async def _type(d: Desktop, p: verbs.TypeText) -> tuple[Result, Details]:
    await d.type_text(p.text)
    return {"typed": len(p.text)}, {"text": hooks.sensitive(p.text)}


async def _wait(d: Desktop, p: verbs.Wait) -> tuple[Result, Details]:
    await asyncio.sleep(p.duration)
    return {"waited": p.duration}, {"duration": p.duration}


async def _set_display(d: Desktop, p: verbs.SetDisplay) -> tuple[Result, Details]:
    width, height = await d.set_size(p.width, p.height)
    return {"display": {"width": width, "height": height}}, {"width": p.width, "height": p.height}


async def _clipboard_read(d: Desktop, p: verbs.ClipboardRead) -> tuple[Result, Details]:
    text = await d.read_selection(p.selection)
    result = {"selection": p.selection, "text": fence(text, "clipboard text"), "untrusted": True}
    return result, {"selection": p.selection, "text": hooks.sensitive(text)}


async def _clipboard_write(d: Desktop, p: act.ClipboardText) -> tuple[Result, Details]:
    await d.write_clipboard(p.text.encode())
    return {"written": len(p.text)}, {"text": hooks.sensitive(p.text)}


Handler = Callable[[Desktop, Any], Awaitable[tuple[Result, Details]]]

HANDLERS: dict[str, Handler] = {
    "screenshot": _screenshot,
    "cursor_position": _cursor,
    "mouse_move": _move,
    "left_click": _click("left", 1),
    "right_click": _click("right", 1),
    "middle_click": _click("middle", 1),
    "double_click": _click("left", 2),
    "triple_click": _click("left", 3),
    "left_mouse_down": _press(True),
    "left_mouse_up": _press(False),
    "left_click_drag": _drag,
    "scroll": _scroll,
    "key": _key,
    "hold_key": _hold_key,
    "type": _type,
    "wait": _wait,
    "set_display": _set_display,
    "clipboard_read": _clipboard_read,
    "clipboard_write": _clipboard_write,
}
assert set(HANDLERS) == set(verbs.COMPUTER_USE.verbs), "every computer verb has a handler"


def _bound(parsed: ParsedAction) -> float:
    params = parsed.params
    if isinstance(params, verbs.HoldKey | verbs.Wait):
        return params.duration + VERB_TIMEOUT_S
    if isinstance(params, verbs.TypeText):
        return VERB_TIMEOUT_S + len(params.text) / 50  # typing takes its time
    return VERB_TIMEOUT_S


async def use_computer(mgr: RigManager, ws: str, rig_id: str, parsed: ParsedAction, principal: Principal) -> Result:
    """Carry out one verb on the rig's desktop; the result, or the error it raised (logged with its outcome
    either way)."""

    async def run(handle: RigHandle) -> tuple[Result, Details]:
        return await HANDLERS[parsed.verb.name](handle.desktop(), parsed.params)

    return await use_verb(mgr, ws, rig_id, parsed, principal, tool="computer_use", run=run, bound_s=_bound(parsed),
                          answerer="the desktop", logged={})  # fmt: skip
