"""Conformance cases shared by engines B and C (the W3C WebDriver engines), run against an engine launched on
this host. A test module subclasses ``W3CEngineCases`` and provides module-scoped ``session`` (a connected
``EngineSession``) and ``pages`` (a ``PageServer`` for ``tests/support/pages``) fixtures.

Pages mirror what happened to them into ``data-*`` attributes of ``<body>``; the cases read them back with
``wait_for`` on an attribute selector (whose own false case is tested) or from the extracted DOM.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs, NotFound, Unavailable
from hangar.rigs.engines.clipboard_image import NO_CLIPBOARD_API
from hangar.rigs.engines.session import EngineSession, Frame
from tests.conformance import display_cases, popup_cases
from tests.support.images import decoded_size, mean_colour, solid_png
from tests.support.pages import PageServer, outward_address

SETTLE_S = 5.0  # how long a case waits for a page to show the effect of an input (a bound, not a timing)


async def shows(session: EngineSession, selector: str) -> bool:
    return await session.wait_for(selector, SETTLE_S)


async def body_data(session: EngineSession, name: str) -> str | None:
    """The ``data-<name>`` attribute of ``<body>`` as the extracted DOM shows it."""
    dom = (await session.extract("dom")).content
    match = re.search(rf'<body[^>]*\sdata-{name}="([^"]*)"', dom)
    return match.group(1) if match else None


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[tuple[int, asyncio.Event, asyncio.Event]]:
    """A server that reads a request and never answers: ``asked`` is set once a request arrived, ``closed``
    once the browser dropped that connection."""
    asked, closed = asyncio.Event(), asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.set()
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):
                pass
        closed.set()
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1]), asked, closed
    finally:
        server.close()


class W3CEngineCases:
    async def close_others(self, session: EngineSession) -> None:
        """Close every page but the current one through the engine's protocol (each engine's module)."""
        raise NotImplementedError

    # -- pages that open and close pages ------------------------------------------------------------------

    async def test_a_link_to_a_new_page_is_followed_and_back(self, session: EngineSession, pages: PageServer) -> None:
        await popup_cases.a_link_opens_a_page_the_session_follows(session, pages)

    async def test_a_page_opened_by_script_is_followed_and_back(
        self, session: EngineSession, pages: PageServer
    ) -> None:
        await popup_cases.a_script_opens_a_page_the_session_follows(session, pages)

    async def test_the_last_page_closing_opens_the_home_page(self, session: EngineSession, pages: PageServer) -> None:
        await popup_cases.the_last_page_closing_opens_the_home_page(session, pages, self.close_others)

    async def test_the_live_view_follows_the_new_page(self, session: EngineSession, pages: PageServer) -> None:
        await popup_cases.frames_follow_the_new_page(session, pages)

    async def test_the_pages_are_listed_and_one_is_chosen(self, session: EngineSession, pages: PageServer) -> None:
        # Engine B reads every page through BiDi; engine C (classic WebDriver) reads only the window it is on.
        reads_others = session.engine == "engine-b"
        await popup_cases.the_pages_are_listed_and_one_is_chosen(session, pages, reads_others)

    async def test_a_real_drop_is_refused_naming_the_file_input_way(self, session: EngineSession) -> None:
        with pytest.raises(Unavailable) as err:
            await session.drop_files(["/tmp/hangar-drops/a.txt"], 10, 10)
        assert f"{session.engine} cannot take a real file drop" in err.value.message

    # -- navigation ---------------------------------------------------------------------------------------

    async def test_navigate_reports_url_and_title(self, session: EngineSession, pages: PageServer) -> None:
        page = await session.navigate(pages.url("/bc-form.html"))
        assert page.url == pages.url("/bc-form.html")
        assert page.title == "BC form"
        current = await session.current()
        assert (current.url, current.title, current.status) == (page.url, "BC form", None)

    async def test_history_back_and_forward(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        await session.navigate(pages.url("/echo?step=two"))
        back = await session.history("back")
        assert (back.url, back.title) == (pages.url("/bc-form.html"), "BC form")
        forward = await session.history("forward")
        assert (forward.url, forward.title) == (pages.url("/echo?step=two"), "echo")

    async def test_reload_and_hard_reload_load_the_page_again(self, session: EngineSession, pages: PageServer) -> None:
        assert type(session).hard_reload is False
        await session.navigate(pages.url("/bc-loads.html"))
        first = int(await body_data(session, "loads") or 0)
        assert first >= 1
        page = await session.reload(hard=True)  # performed as a normal reload, without an error
        assert page.title == "BC loads"
        assert await body_data(session, "loads") == str(first + 1)
        await session.reload(hard=False)
        assert await body_data(session, "loads") == str(first + 2)

    async def test_stop_loading_cancels_a_pending_navigation(self, session: EngineSession, pages: PageServer) -> None:
        async with silent_server() as (port, asked, closed):
            await session.navigate(pages.url(f"/bc-stall.html?port={port}"))
            x, y = await session.locate("#go")
            await session.click(x, y)
            await asyncio.wait_for(asked.wait(), 10)
            assert not closed.is_set()
            await session.stop_loading()
            await asyncio.wait_for(closed.wait(), 10)  # the browser gave up the request
        assert (await session.current()).title == "BC stall"

    # -- pointer and keyboard -----------------------------------------------------------------------------

    async def test_click_by_coordinate_counts(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        x, y = await session.locate("#counter")
        await session.click(x, y)
        await session.click(x, y)
        assert await shows(session, "#counter:is(:not(:empty))")
        assert re.search(r'<button id="counter" type="button">2</button>', (await session.extract("dom")).content)

    async def test_right_click_and_locate_missing(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        x, y = await session.locate("#counter")
        await session.click(x, y, button="right")
        assert await shows(session, 'body[data-right-clicks="1"]')
        with pytest.raises(NotFound):
            await session.locate("#no-such-element")
        with pytest.raises(InvalidArgs):
            await session.locate("##not a selector")

    async def test_mouse_move_and_buttons(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        hx, hy = await session.locate("#hover")
        await session.mouse_move(hx, hy)
        assert await shows(session, 'body[data-hovered="yes"]')
        px, py = await session.locate("#press")
        await session.mouse_button(True, px, py)
        assert await shows(session, f'body[data-down="{px},{py}"]')
        await session.mouse_button(False, None, None)  # released where the pointer is
        assert await shows(session, f'body[data-up="{px},{py}"]')

    async def test_fill_fires_input_and_change(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        await session.fill("#name", "Ada Lovelace")
        assert await shows(session, 'body[data-value="Ada Lovelace"][data-inputs][data-changes]')
        with pytest.raises(NotFound):
            await session.fill("#missing", "x")
        with pytest.raises(InvalidArgs):
            await session.fill("#agree", "x")

    async def test_type_keys_enter_and_select_all(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        await session.focus("#name")
        await session.type_text("hello")
        assert await shows(session, 'body[data-value="hello"]')
        await session.key("Control+a")
        await session.type_text("bye")  # replaces the selection
        assert await shows(session, 'body[data-value="bye"]')
        assert await shows(session, 'body[data-keys*="a^"]')  # the page saw Control held with a
        await session.key("Enter")
        assert await shows(session, 'body[data-submits="1"]')
        await session.key_event(True, "Shift")
        await session.key_event(True, "x")
        await session.key_event(False, "x")
        await session.key_event(False, "Shift")
        assert await shows(session, 'body[data-value="byeX"]')

    async def test_long_text_is_typed_whole(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        await session.focus("#name")
        await session.type_text("x" * 1000)
        assert await shows(session, 'body[data-len="1000"]')

    async def test_scroll_with_the_wheel(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-scroll.html"))
        await session.scroll(700, 600, 0, 900)
        assert await shows(session, 'body[data-scrolled="yes"]')

    async def test_drag_moves_the_pointer_in_steps(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-scroll.html"))
        await session.drag((60, 60), (300, 250))
        assert await shows(session, 'body[data-drag-start="60,60"][data-drag-moves="many"][data-drag-end="300,250"]')

    async def test_html_drag_starts_and_the_session_stays_usable(
        self, session: EngineSession, pages: PageServer
    ) -> None:
        # Synthesized input starts an HTML drag (dragstart fires) but neither engine delivers the drop;
        # what matters is that the half-done drag leaves the pointer usable.
        await session.navigate(pages.url("/bc-scroll.html"))
        await session.drag(await session.locate("#card"), await session.locate("#bin"))
        assert await shows(session, 'body[data-dnd-start="yes"]')
        await session.drag((60, 60), (300, 250))
        assert await shows(session, 'body[data-drag-end="300,250"]')

    # -- observing ----------------------------------------------------------------------------------------

    async def test_extract_a11y_is_a_flagged_approximation(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        await session.fill("#name", "Grace")
        extracted = await session.extract("a11y")
        assert extracted.kind == "a11y" and extracted.approximation is True
        tree = extracted.content
        assert tree.startswith('document "BC form"')
        assert 'navigation "Site"' in tree and 'link "Next page"' in tree
        assert 'heading "Engine form" [level=1]' in tree
        assert 'img "Hangar logo"' in tree
        assert 'button "0"' in tree
        assert 'textbox "Name" value="Grace" [focused]' in tree
        assert 'checkbox "I agree" [checked]' in tree
        assert 'combobox "Size" value="large"' in tree
        assert "script" not in tree.lower()

    async def test_extract_dom(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        extracted = await session.extract("dom")
        assert extracted.kind == "dom" and extracted.approximation is False
        assert extracted.content.startswith("<html") and "<h1>Engine form</h1>" in extracted.content

    async def test_screenshot_viewport_scaled_and_full_page(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-scroll.html"))
        width, height = await session.viewport()
        still = await session.screenshot(False, 4000, 4000)
        assert (still.width, still.height) == (width, height) == decoded_size(still.data)
        small = await session.screenshot(False, width // 2, height)
        assert (small.width, small.height) == decoded_size(small.data)
        assert small.width == width // 2 and abs(small.height - height // 2) <= 1  # aspect kept
        full = await session.screenshot(True, 4000, 20000)
        assert decoded_size(full.data) == (full.width, full.height)
        assert full.height >= 4000 > height  # the whole 4000 px document
        capped = await session.screenshot(True, 1280, 800)
        assert capped.height == 800 and capped.width < width  # fitted into the agent cap, never stretched

    async def test_a_viewport_still_is_the_display_it_states_scroll_bars_included(
        self, session: EngineSession, pages: PageServer
    ) -> None:
        await display_cases.check_stills_match_the_display(session, pages)

    async def test_set_viewport(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))
        before = await session.viewport()
        try:
            await session.set_viewport(800, 600)
            assert await session.viewport() == (800, 600)
            still = await session.screenshot(False, 4000, 4000)
            assert decoded_size(still.data) == (800, 600)
        finally:
            await session.set_viewport(*before)
        assert await session.viewport() == before

    async def test_wait_for_true_and_false(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-late.html"))
        assert await session.wait_for("#late", 10) is True
        assert await session.wait_for("#never", 0.3) is False
        with pytest.raises(InvalidArgs):
            await session.wait_for("[[[", 1)

    async def test_clipboard_round_trip_in_a_secure_context(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html"))  # loopback: a secure context
        text = f"hangar clipboard {uuid.uuid4().hex} \u00e9"
        assert await session.clipboard_write(text) is True
        assert await session.clipboard_read() == text

    async def test_clipboard_absent_on_plain_http(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-form.html", host=outward_address()))
        assert await session.clipboard_read() is None
        assert await session.clipboard_write("nope") is False
        assert await session.clipboard_write_image("image/png", solid_png(8, 8, (0, 0, 255))) is False
        assert session.clipboard_image_note  # why not (engine B's reason comes first: no images at all)
        assert await session.clipboard_read_image() is None
        assert session.clipboard_image_note == NO_CLIPBOARD_API

    async def test_set_input_files(self, session: EngineSession, pages: PageServer, tmp_path: Path) -> None:
        first, second = tmp_path / "one.txt", tmp_path / "two.txt"
        first.write_text("12345")
        second.write_text("abc")
        await session.navigate(pages.url("/bc-form.html"))
        x, y = await session.locate("#upload-zone")
        assert await session.set_input_files(x, y, [str(first), str(second)]) is True
        assert await shows(session, 'body[data-files="one.txt:5,two.txt:3"]')
        ex, ey = await session.locate("#empty-spot")
        assert await session.set_input_files(ex, ey, [str(first)]) is False

    async def test_frames_arrive_after_a_change(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-paint.html"))
        frames = session.frames(1280, 800)
        try:
            first = await asyncio.wait_for(anext(frames), 10)
            assert decoded_size(first.data) == (first.width, first.height)
            x, y = await session.locate("#box")
            await session.click(x, y)

            async def red_frame() -> Frame:
                async for frame in frames:
                    red, green, blue = mean_colour(frame.data)
                    if red > 150 and green < 80 and blue < 80:
                        return frame
                raise AssertionError("the frames ended")

            changed = await asyncio.wait_for(red_frame(), 10)
            assert changed.captured_at > first.captured_at
            assert decoded_size(changed.data) == (changed.width, changed.height)
        finally:
            await frames.aclose()  # type: ignore[attr-defined]
