"""Conformance cases for pages that open and close pages, shared by the three engines: the session follows a page
opened by a ``target="_blank"`` link or by ``window.open`` (it becomes current: its URL and title, its pixels, its
DOM), comes back to the opener when that page closes itself, and opens the home page when the last page closes.

Each engine's module calls these with its session, the page server, and ``close_others``: a coroutine closing
every page but the current one through the engine's own protocol (no page may close a page it did not open, so
the last-page case needs the engine to close the opener).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from hangar.errors import NotFound
from hangar.rigs.engines.session import EngineSession, PageChange
from tests.support.images import mean_colour, near
from tests.support.pages import PageServer

CloseOthers = Callable[[EngineSession], Awaitable[None]]
GREEN = (0x33, 0xAA, 0x66)  # popup_page.html's background
WHITE = (255, 255, 255)  # popup_opener.html's
SETTLE_S = 5.0  # a bound for a page to show an effect, not a timing


async def _changes_after(session: EngineSession, selector: str) -> list[PageChange]:
    """Click the element, then settle pages as the verb layer does after a verb; the changes it made."""
    x, y = await session.locate(selector)
    await session.click(x, y)
    return await _settled_changes(session)


async def _settled_changes(session: EngineSession) -> list[PageChange]:
    """The changes once a page opened or closed by the last click showed: a page closing itself or a window
    opening is the engine's to carry out after the click returned, and engine C, without events, only sees it in
    its window list once done; the verb layer's next follow catches it likewise."""
    deadline = asyncio.get_running_loop().time() + SETTLE_S
    while True:
        await session.follow_pages()
        changes = session.take_page_changes()
        if changes or asyncio.get_running_loop().time() > deadline:
            return changes
        await asyncio.sleep(0.05)


async def _colour(session: EngineSession) -> tuple[int, int, int]:
    return mean_colour((await session.screenshot(False, 640, 400)).data)


async def _on_opener(session: EngineSession, pages: PageServer) -> None:
    await session.follow_pages()
    session.take_page_changes()  # whatever an earlier case left
    await session.navigate(pages.url("/popup_opener.html"))
    assert near(await _colour(session), WHITE, 30)


async def a_link_opens_a_page_the_session_follows(session: EngineSession, pages: PageServer) -> None:
    await _on_opener(session, pages)
    popup = pages.url("/popup_page.html?via=link")
    assert await _changes_after(session, "#link") == [PageChange("opened", popup, "Popup page")]
    current = await session.current()
    assert (current.url, current.title) == (popup, "Popup page")
    assert near(await _colour(session), GREEN, 30)  # the still is of the new page
    dom = (await session.extract("dom")).content
    assert "Popup content" in dom and 'data-via="link"' in dom and "Opener page" not in dom
    assert await session.wait_for("#close", SETTLE_S)  # the pointer and the page scripts act there too
    # The new page closes itself: back on the opener, as it was.
    opener = pages.url("/popup_opener.html")
    assert await _changes_after(session, "#close") == [PageChange("closed", opener, "Popup opener")]
    assert (await session.current()).url == opener
    assert near(await _colour(session), WHITE, 30)
    assert "Opener page" in (await session.extract("dom")).content


async def a_script_opens_a_page_the_session_follows(session: EngineSession, pages: PageServer) -> None:
    await _on_opener(session, pages)
    popup = pages.url("/popup_page.html?via=script")
    assert await _changes_after(session, "#script") == [PageChange("opened", popup, "Popup page")]
    assert 'data-via="script"' in (await session.extract("dom")).content
    assert [c.kind for c in await _changes_after(session, "#close")] == ["closed"]
    # The same opener document, not a reload: it still records that it opened the page.
    assert await session.wait_for('body[data-opened="script"]', SETTLE_S)


async def the_last_page_closing_opens_the_home_page(
    session: EngineSession, pages: PageServer, close_others: CloseOthers
) -> None:
    await _on_opener(session, pages)
    assert [c.kind for c in await _changes_after(session, "#script")] == ["opened"]
    await close_others(session)  # the opener goes; the popup is the last page
    await session.follow_pages()
    assert session.take_page_changes() == []  # a page that was not current closing changes nothing
    changes = await _changes_after(session, "#close")
    assert [(c.kind, c.title) for c in changes] == [("home", "Hangar browser rig")]
    assert changes[0].url.startswith("file://") and changes[0].url.endswith("/home.html")
    assert (await session.current()).title == "Hangar browser rig"
    assert await session.viewport() == (1280, 800)  # the new page has the session's viewport
    page = await session.navigate(pages.url("/popup_opener.html"))  # and the session goes on as before
    assert page.title == "Popup opener"


async def frames_follow_the_new_page(session: EngineSession, pages: PageServer) -> None:
    """The live view's one frame iterator moves to the new page, and back when it closes."""
    await _on_opener(session, pages)
    frames = session.frames(640, 400)

    async def frame_near(colour: tuple[int, int, int]) -> None:
        async for frame in frames:
            if near(mean_colour(frame.data), colour, 30):
                return
        raise AssertionError("the frames ended")

    try:
        await asyncio.wait_for(frame_near(WHITE), 10)
        assert [c.kind for c in await _changes_after(session, "#link")] == ["opened"]
        await asyncio.wait_for(frame_near(GREEN), 10)
        assert [c.kind for c in await _changes_after(session, "#close")] == ["closed"]
        await asyncio.wait_for(frame_near(WHITE), 10)
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


async def the_pages_are_listed_and_one_is_chosen(session: EngineSession, pages: PageServer, reads_others: bool) -> None:
    """The session lists the pages it follows (the current one marked) and moves to another on request, which is
    reported as a change; a page it does not know is refused. ``reads_others``: the engine reads a page it is not
    on (engine C lists it as it was when last current)."""
    await _on_opener(session, pages)
    opener, popup = pages.url("/popup_opener.html"), pages.url("/popup_page.html?via=script")
    assert [c.kind for c in await _changes_after(session, "#script")] == ["opened"]
    listed = await session.pages()
    assert [(p.url, p.title, p.current) for p in listed[-2:]] == [
        (opener, "Popup opener", False),
        (popup, "Popup page", True),
    ]
    assert listed[-1].seen and listed[-2].seen is reads_others
    back = listed[-2].id
    page = await session.switch_page(back)
    assert (page.url, page.title) == (opener, "Popup opener")
    assert session.take_page_changes() == [PageChange("switched", opener, "Popup opener")]
    assert (await session.current()).url == opener
    assert near(await _colour(session), WHITE, 30)  # the stills are of the page chosen
    assert "Opener page" in (await session.extract("dom")).content
    listed = await session.pages()
    assert [(p.id, p.current) for p in listed[-2:]] == [(listed[-2].id, False), (back, True)]
    assert listed[-2].url == popup  # the page left is listed where it was
    try:
        await session.switch_page("no-such-page")
    except NotFound:
        pass
    else:
        raise AssertionError("a page the session does not know was chosen")
    # Back to the new page, which closes itself: the session is on the opener again.
    await session.switch_page(listed[-2].id)
    assert [c.kind for c in session.take_page_changes()] == ["switched"]
    assert [c.kind for c in await _changes_after(session, "#close")] == ["closed"]
    assert (await session.current()).url == opener
