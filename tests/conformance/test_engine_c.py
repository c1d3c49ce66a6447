"""Engine C (WebKitGTK's MiniBrowser under WebKitWebDriver, classic W3C WebDriver, on an Xvfb display) launched
on this host: every verb of ``EngineSession``, plus what is particular to it: the console hooked after each
navigation (output during load missed, and said so), no document status, PNG stills and JPEG frames made by
the host's ffmpeg."""

from __future__ import annotations

import pytest

from hangar.errors import Unavailable
from hangar.rigs.engines.session import EngineSession
from hangar.rigs.engines.webkit import transcode
from hangar.rigs.engines.webkit.engine import CONSOLE_NOTE, WebKitSession
from tests.conformance import clipboard_images
from tests.conformance.engine_fixtures import engine_fixture, pages_fixture
from tests.conformance.w3c_cases import W3CEngineCases, shows
from tests.support.images import solid_png
from tests.support.pages import PageServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


pages = pages_fixture()
session = engine_fixture("engine-c")


class TestEngineC(W3CEngineCases):
    async def close_others(self, session: EngineSession) -> None:
        assert isinstance(session, WebKitSession)
        client = session._client
        current = await client.command("GET", "/window")
        for handle in await client.command("GET", "/window/handles"):
            if handle != current:
                await client.command("POST", "/window", {"handle": handle})
                await client.command("DELETE", "/window")
        await client.command("POST", "/window", {"handle": current})

    async def test_session_shape(self, session: EngineSession) -> None:
        assert isinstance(session, WebKitSession)
        assert (session.engine, session.hard_reload, session.real_drop) == ("engine-c", False, False)
        assert await session.viewport() == (1280, 800)  # the boot display
        still = await session.screenshot(False, 1280, 800)
        assert still.mime == "image/png" and still.data.startswith(b"\x89PNG")

    async def test_clipboard_images_round_trip_in_a_secure_context(
        self, session: EngineSession, pages: PageServer
    ) -> None:
        await session.navigate(pages.url("/bc-form.html"))  # loopback: a secure context
        await clipboard_images.round_trip(session)
        await clipboard_images.undecodable_is_refused(session)

    async def test_a_pasted_image_reaches_the_page(self, session: EngineSession, pages: PageServer) -> None:
        """WebKitGTK's paste event carries no file for an image; its default paste inserts it, which the page
        reads back (``clip-paste.html``)."""
        await session.navigate(pages.url("/clip-paste.html"))
        assert await session.clipboard_write_image("image/png", solid_png(33, 21, (0, 200, 0))) is True
        x, y = await session.locate("#target")
        await session.click(x, y)
        await session.key("Control+v")
        assert await shows(session, '#target[data-pasted="image/png 33x21"]')

    async def test_no_status_from_classic_webdriver(self, session: EngineSession, pages: PageServer) -> None:
        missing = await session.navigate(pages.url("/status/404"))
        assert (missing.status, missing.title) == (None, "status 404")

    async def test_console_misses_load_and_says_so(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-console.html"))
        before = await session.extract("console")
        assert before.kind == "console" and before.note is not None and CONSOLE_NOTE in before.note
        assert "logged-during-load" not in before.content
        x, y = await session.locate("#log")
        await session.click(x, y)
        assert await shows(session, 'body[data-logged="yes"]')
        after = await session.extract("console")
        assert after.note is not None and CONSOLE_NOTE in after.note
        assert '[warn] logged-after-load {"n":1}' in after.content
        assert "logged-during-load" not in after.content
        await session.reload(hard=False)  # a new document: a new, empty buffer
        assert "logged-after-load" not in (await session.extract("console")).content

    async def test_console_buffer_is_bounded(self, session: EngineSession, pages: PageServer) -> None:
        await session.navigate(pages.url("/bc-console.html"))
        x, y = await session.locate("#log")
        for _ in range(3):
            await session.click(x, y)
        extracted = await session.extract("console")
        assert extracted.content.count("logged-after-load") == 3

    async def test_frames_refused_without_ffmpeg(self, session: EngineSession, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(transcode.shutil, "which", lambda _: None)
        with pytest.raises(Unavailable, match="ffmpeg"):
            session.frames(1280, 800)
        with pytest.raises(Unavailable, match="ffmpeg"):
            await session.screenshot(False, 640, 400)  # scaling needs it too
        assert (await session.screenshot(False, 4000, 4000)).mime == "image/png"  # a full-size still does not
