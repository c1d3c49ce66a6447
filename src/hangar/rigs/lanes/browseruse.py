"""``browser_use`` on a browser rig: each parsed verb (``actions.browser``) carried out on the rig's engine
session, answered in the shapes of CONTRACTS section 6, and written to the rig's action log.

Rules held here, whatever the engine:
- every result carries ``engine``;
- what the page controls (extracted content, titles, clipboard text) comes back fenced as untrusted data;
- agent stills fit within 1280x800 (the person's live view is another lane, with its own bound);
- the action log keeps what was done, never what was typed, filled or put on the clipboard (length and
  SHA-256 only) and never what a page returned;
- a mutating verb is refused while a person holds control (observations stay allowed), and the refusal is
  logged too; so is a clipboard verb its caller's clipboard consent does not allow (``ClipboardGrants.require``,
  the clipboard lane's check);
- the session follows pages (``EngineSession.follow_pages`` before and after each verb): when a page opened a new
  one or the current page closed, the reply says so in ``note`` and lists the moves in ``pages``, each with the
  new current page's URL and title fenced (both are the page's to choose).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from hangar.core.principal import Principal
from hangar.errors import Unavailable
from hangar.rigs import hooks
from hangar.rigs.actions import base as act
from hangar.rigs.actions import browser as verbs
from hangar.rigs.actions.base import ParsedAction
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.engines.session import EngineSession, Page, PageChange
from hangar.rigs.lanes.fence import fence
from hangar.rigs.lanes.useverb import use_verb
from hangar.rigs.lifecycle.manager import RigManager

AGENT_MAX = (1280, 800)  # agent stills are scaled to fit this, keeping the aspect ratio
VERB_TIMEOUT_S = 60.0  # one verb's bound: an engine that stops answering must not hold the rig busy forever
NO_CLIPBOARD = (
    "{verb}: this page has no clipboard API (the clipboard needs a secure context: https or loopback); "
    "use `type` to enter text instead"
)

Result = dict[str, Any]
Details = dict[str, Any]


def _page(page: Page) -> Result:
    result: Result = {"url": page.url, "title": fence(page.title, "page title")}
    if page.status is not None:
        result["status"] = page.status
    return result


_MOVED = {
    "opened": "a new page opened; now acting on it",
    "closed": "the page closed; now acting on the most recent remaining page",
    "home": "the last page closed; a new page on the home page opened, now acting on it",
    "switched": "another page of the browser was chosen; now acting on it",
}


def _page_changes(result: Result, changes: list[PageChange]) -> Result:
    """The verb's result with the moves between pages: a trusted ``note`` naming what happened (the URL and title
    stay in the fenced ``pages`` entries), the last entry being the page now current."""
    if not changes:
        return result
    said = "; ".join(dict.fromkeys(_MOVED[c.kind] for c in changes)) + " (see pages)"
    moves = [
        {"change": c.kind, "url": fence(c.url, "page url"), "title": fence(c.title, "page title")} for c in changes
    ]
    note = f"{result['note']}; {said}" if "note" in result else said
    return {**result, "note": note, "pages": moves}


def _point(coordinate: list[int]) -> tuple[int, int]:
    return coordinate[0], coordinate[1]


def _url_details(url: str) -> Details:
    # The host says where the rig went; the full URL may carry tokens, so only its digest is kept.
    return {"host": urlsplit(url).hostname or "", "url": hooks.sensitive(url)}


async def _centre(session: EngineSession) -> tuple[int, int]:
    width, height = await session.viewport()
    return width // 2, height // 2


async def _navigate(s: EngineSession, p: verbs.Navigate) -> tuple[Result, Details]:
    page = await s.navigate(p.url)
    return _page(page), {**_url_details(p.url), "status": page.status}


async def _reload(s: EngineSession, p: verbs.Reload) -> tuple[Result, Details]:
    page = await s.reload(p.hard)
    result = _page(page)
    if p.hard:
        result["hard"] = s.hard_reload
        if not s.hard_reload:
            result["note"] = f"{s.engine} cannot bypass its cache: a hard reload was performed as a normal one"
    return result, {"hard": p.hard, "hardPerformed": p.hard and s.hard_reload}


async def _stop(s: EngineSession, _p: act.NoParams) -> tuple[Result, Details]:
    await s.stop_loading()
    return {"stopped": True}, {}


async def _click(s: EngineSession, p: verbs.Click) -> tuple[Result, Details]:
    if p.selector is not None:
        x, y = await s.locate(p.selector)
    else:
        assert p.coordinate is not None  # the model requires exactly one
        x, y = _point(p.coordinate)
    await s.click(x, y)
    return {"clicked": [x, y]}, {"selector": p.selector, "coordinate": [x, y]}


async def _fill(s: EngineSession, p: verbs.Fill) -> tuple[Result, Details]:
    await s.fill(p.selector, p.value)
    return {"filled": p.selector, "length": len(p.value)}, {"selector": p.selector, "value": hooks.sensitive(p.value)}


async def _type(s: EngineSession, p: verbs.TypeText) -> tuple[Result, Details]:
    if p.selector is not None:
        await s.focus(p.selector)
    await s.type_text(p.text)
    return {"typed": len(p.text)}, {"selector": p.selector, "text": hooks.sensitive(p.text)}


async def _key(s: EngineSession, p: verbs.Key) -> tuple[Result, Details]:
    await s.key(p.key)
    return {"key": p.key}, {"key": p.key}


async def _scroll(s: EngineSession, p: verbs.Scroll) -> tuple[Result, Details]:
    x, y = _point(p.coordinate) if p.coordinate is not None else await _centre(s)
    await s.scroll(x, y, p.delta_x, p.delta_y)
    return {"scrolled": [p.delta_x, p.delta_y], "at": [x, y]}, {"at": [x, y], "delta": [p.delta_x, p.delta_y]}


async def _move(s: EngineSession, p: act.Point) -> tuple[Result, Details]:
    x, y = _point(p.coordinate)
    await s.mouse_move(x, y)
    return {"moved": [x, y]}, {"coordinate": [x, y]}


async def _drag(s: EngineSession, p: act.Drag) -> tuple[Result, Details]:
    start, end = _point(p.start_coordinate), _point(p.coordinate)
    await s.drag(start, end)
    return {"dragged": [list(start), list(end)]}, {"start": list(start), "end": list(end)}


def _button(down: bool) -> Callable[[EngineSession, act.MaybePoint], Awaitable[tuple[Result, Details]]]:
    async def press(s: EngineSession, p: act.MaybePoint) -> tuple[Result, Details]:
        x, y = _point(p.coordinate) if p.coordinate is not None else (None, None)
        await s.mouse_button(down, x, y)
        at = [x, y] if x is not None else None
        return {"button": "left", "down": down, "at": at}, {"coordinate": at}

    return press


async def _extract(s: EngineSession, p: verbs.Extract) -> tuple[Result, Details]:
    got = await s.extract(p.kind)
    result: Result = {"kind": got.kind, "content": fence(got.content, "page content"), "untrusted": True}
    if got.approximation:
        result["approximation"] = True
    if got.note:
        result["note"] = got.note
    return result, {"kind": p.kind, "chars": len(got.content), "approximation": got.approximation}


async def _screenshot(s: EngineSession, p: verbs.Screenshot) -> tuple[Result, Details]:
    still = await s.screenshot(p.full_page, *AGENT_MAX)
    if still.width > AGENT_MAX[0] or still.height > AGENT_MAX[1]:
        raise Unavailable(f"{s.engine} returned a {still.width}x{still.height} still, beyond the agent bound")
    width, height = await s.viewport()
    image = {"mime": still.mime, "base64": base64.b64encode(still.data).decode(), "width": still.width,
             "height": still.height}  # fmt: skip
    result = {"image": image, "display": {"width": width, "height": height}}
    return result, {"fullPage": p.full_page, "width": still.width, "height": still.height, "bytes": len(still.data)}


async def _viewport(s: EngineSession, p: verbs.SetViewport) -> tuple[Result, Details]:
    await s.set_viewport(p.width, p.height)
    width, height = await s.viewport()
    return {"display": {"width": width, "height": height}}, {"width": p.width, "height": p.height}


async def _history(s: EngineSession, p: verbs.History) -> tuple[Result, Details]:
    return _page(await s.history(p.direction)), {"direction": p.direction}


async def _pages(s: EngineSession, _p: act.NoParams) -> tuple[Result, Details]:
    listed = await s.pages()
    rows = [
        {"page": p.id, "url": fence(p.url, "page url"), "title": fence(p.title, "page title"), "current": p.current}
        | ({} if p.seen else {"stale": True})
        for p in listed
    ]
    return {"pages": rows}, {"count": len(rows)}


async def _switch_page(s: EngineSession, p: verbs.SwitchPage) -> tuple[Result, Details]:
    return _page(await s.switch_page(p.page)), {"page": p.page}


async def _wait_for(s: EngineSession, p: verbs.WaitFor) -> tuple[Result, Details]:
    found = await s.wait_for(p.selector, p.timeout)
    return {"found": found, "selector": p.selector}, {"selector": p.selector, "timeout": p.timeout, "found": found}


async def _clipboard_read(s: EngineSession, _p: act.NoParams) -> tuple[Result, Details]:
    text = await s.clipboard_read()
    if text is None:
        raise Unavailable(NO_CLIPBOARD.format(verb="clipboard_read"))
    return {"text": fence(text, "clipboard text"), "untrusted": True}, {"text": hooks.sensitive(text)}


async def _clipboard_write(s: EngineSession, p: act.ClipboardText) -> tuple[Result, Details]:
    if not await s.clipboard_write(p.text):
        raise Unavailable(NO_CLIPBOARD.format(verb="clipboard_write"))
    return {"written": len(p.text)}, {"text": hooks.sensitive(p.text)}


Handler = Callable[[EngineSession, Any], Awaitable[tuple[Result, Details]]]

HANDLERS: dict[str, Handler] = {
    "navigate": _navigate,
    "reload": _reload,
    "stop_loading": _stop,
    "click": _click,
    "fill": _fill,
    "type": _type,
    "key": _key,
    "scroll": _scroll,
    "mouse_move": _move,
    "drag": _drag,
    "left_mouse_down": _button(True),
    "left_mouse_up": _button(False),
    "extract": _extract,
    "screenshot": _screenshot,
    "set_viewport": _viewport,
    "history": _history,
    "pages": _pages,
    "switch_page": _switch_page,
    "wait_for": _wait_for,
    "clipboard_read": _clipboard_read,
    "clipboard_write": _clipboard_write,
}
assert set(HANDLERS) == set(verbs.BROWSER_USE.verbs), "every browser verb has a handler"


async def _verb(session: EngineSession, verb: str, params: Any) -> tuple[Result, Details]:
    """One verb on the current page, with the pages settled before (a page opened or closed since the last verb)
    and after (one this verb opened or closed)."""
    await session.follow_pages()
    result, details = await HANDLERS[verb](session, params)
    await session.follow_pages()
    changes = session.take_page_changes()
    if changes:
        details = {**details, "pages": [c.kind for c in changes]}  # what happened, never the page's URL
    return _page_changes(result, changes), details


def _bound(parsed: ParsedAction) -> float:
    if isinstance(parsed.params, verbs.WaitFor):
        return parsed.params.timeout + VERB_TIMEOUT_S
    return VERB_TIMEOUT_S


async def use_browser(mgr: RigManager, ws: str, rig_id: str, parsed: ParsedAction, principal: Principal) -> Result:
    """Carry out one verb on the rig's engine; the result, with ``engine``, or the error it raised (logged with
    its outcome either way)."""
    live = await mgr.get_live(ws, rig_id)

    async def run(handle: RigHandle) -> tuple[Result, Details]:
        session = handle.browser()
        result, said = await _verb(session, parsed.verb.name, parsed.params)
        return {**result, "engine": session.engine}, said

    return await use_verb(mgr, ws, rig_id, parsed, principal, tool="browser_use", run=run, bound_s=_bound(parsed),
                          answerer=str(live.engine), logged={"engine": live.engine})  # fmt: skip
