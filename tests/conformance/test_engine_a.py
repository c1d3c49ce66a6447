"""Engine A (Chromium over the DevTools protocol) against the ``EngineSession`` contract, every method, with
Debian's Chromium really launched on this host (``host_engine``). One browser serves the module; each test
starts from the basic page at the boot viewport. Pages report what happened into their own DOM, which the
tests read back through ``extract("dom")`` and ``wait_for``."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import re
import ssl
import time
from pathlib import Path

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hangar.errors import InvalidArgs, NotFound
from hangar.rigs.engines.chromium.page import jpeg_size
from hangar.rigs.engines.chromium.session import CdpSession
from hangar.rigs.engines.clipboard_image import NO_CLIPBOARD_API
from hangar.rigs.engines.hostlaunch import host_engine
from hangar.rigs.engines.session import EngineSession
from tests.conformance import clipboard_images, display_cases, popup_cases
from tests.conformance.engine_fixtures import engine_fixture, pages_fixture, start_page_fixture
from tests.support.images import solid_png
from tests.support.pages import PageServer, outward_address

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

GUARD_S = 20.0  # a bound against hangs only; nothing asserts on time


pages = pages_fixture()
browser = engine_fixture("engine-a")
s = start_page_fixture("/basic.html")


async def dom(session: EngineSession) -> str:
    return (await session.extract("dom")).content


async def attribute(session: EngineSession, selector: str, name: str) -> str | None:
    """An attribute of the first element matching ``selector``, read from the DOM extract."""
    found = re.search(rf"<[^>]*\bid=\"{selector.lstrip('#')}\"[^>]*>", await dom(session))
    assert found is not None, f"{selector} is not in the page"
    value = re.search(rf'\b{name}="([^"]*)"', found.group(0))
    return value.group(1) if value else None


# -- navigation ---------------------------------------------------------------------------------------------


async def test_boots_on_the_home_page_at_the_boot_display(browser: EngineSession) -> None:
    # Runs first in the module: the session has not navigated anywhere yet.
    page = await browser.current()
    assert page.url.startswith("file://") and page.url.endswith("/home.html")
    assert page.title == "Hangar browser rig"
    assert await browser.viewport() == (1280, 800)


async def test_a_fresh_session_is_on_the_loaded_launch_page_and_navigates_at_once(pages: PageServer) -> None:
    """The session opens once the launch page has loaded, so a navigation sent straight away is not ended early
    by the launch page's own end of loading (and the page is not read mid-swap)."""
    for _ in range(3):
        async with host_engine("engine-a") as fresh:
            assert (await fresh.current()).title == "Hangar browser rig"
            page = await fresh.navigate(pages.url("/basic.html"))
            assert (page.title, page.status) == ("Basic page", 200)


async def test_navigate_reports_url_title_and_status(s: EngineSession, pages: PageServer) -> None:
    page = await s.navigate(pages.url("/basic.html"))
    assert (page.url, page.title, page.status) == (pages.url("/basic.html"), "Basic page", 200)
    missing = await s.navigate(pages.url("/status/404"))
    assert (missing.status, missing.title) == (404, "status 404")
    gone = await s.navigate(pages.url("/no-such-page.html"))
    assert gone.status == 404
    assert await s.current() == type(page)(pages.url("/no-such-page.html"), gone.title)


async def test_navigate_within_the_document(s: EngineSession, pages: PageServer) -> None:
    page = await s.navigate(pages.url("/basic.html#next"))
    assert page.url == pages.url("/basic.html#next") and page.title == "Basic page"


async def test_navigate_to_a_closed_port_lands_on_the_error_page(s: EngineSession) -> None:
    page = await s.navigate("http://127.0.0.1:1/")
    assert page.url == "http://127.0.0.1:1/" and page.status is None


async def test_reload_soft_and_hard(s: EngineSession) -> None:
    x, y = await s.locate("#counter")
    await s.click(x, y)
    assert ">1</button>" in await dom(s)
    page = await s.reload(hard=False)
    assert page.status == 200 and ">0</button>" in await dom(s)
    await s.click(x, y)
    page = await s.reload(hard=True)
    assert page.status == 200 and ">0</button>" in await dom(s)
    assert type(s).hard_reload is True


async def test_history_back_and_forward(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/echo?step=2"))
    back = await s.history("back")
    assert back.url == pages.url("/basic.html") and back.title == "Basic page"
    forward = await s.history("forward")
    assert forward.url == pages.url("/echo?step=2") and "step=2" in await dom(s)
    assert (await s.history("forward")).url == forward.url  # nothing ahead: the page stays


async def test_stop_loading_ends_a_navigation_that_never_answers(s: EngineSession, pages: PageServer) -> None:
    asked = asyncio.Event()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.set()
        await reader.read()  # holds the request open without ever answering
        writer.close()

    server = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        going = asyncio.create_task(s.navigate(f"http://127.0.0.1:{port}/never"))
        await asyncio.wait_for(asked.wait(), GUARD_S)
        await s.stop_loading()
        page = await asyncio.wait_for(going, GUARD_S)  # well before the 30 s page-load timeout
        assert page.url == pages.url("/basic.html")
    finally:
        server.close()


# -- pointer and keyboard -----------------------------------------------------------------------------------


async def test_locate_and_click_change_the_counter(s: EngineSession) -> None:
    x, y = await s.locate("#counter")
    await s.click(x, y)
    await s.click(x, y)
    assert ">2</button>" in await dom(s)
    await s.mouse_move(x, y)
    await s.mouse_button(True, None, None)
    await s.mouse_button(False, None, None)
    assert ">3</button>" in await dom(s)
    with pytest.raises(NotFound, match="#nothing-here"):
        await s.locate("#nothing-here")
    with pytest.raises(InvalidArgs, match="selector"):
        await s.locate("#[")


async def test_locate_scrolls_the_element_into_view(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-scroll.html"))
    _, y = await s.locate("#bottom")
    assert 0 <= y <= 800
    assert await s.wait_for("body[data-y]", 5)  # scroll events are dispatched with the next frame
    body = re.search(r'<body data-y="(\d+)"', await dom(s))
    assert body is not None and int(body.group(1)) > 3000


async def test_scroll_moves_the_page(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-scroll.html"))
    await s.scroll(400, 400, 0, 600)
    assert await s.wait_for("body[data-y]", 5)
    body = re.search(r'<body data-y="(\d+)"', await dom(s))
    assert body is not None and int(body.group(1)) > 0


async def test_fill_fires_input_and_change(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-form.html"))
    await s.fill("#q", "first")
    await s.fill("#q", "hello world")
    html = await dom(s)
    assert 'data-value="hello world"' in html
    assert "<li>input:q</li>" in html and "<li>change:q</li>" in html
    await s.fill("#pick", "two")
    assert 'id="pick" name="pick" data-value="two"' in await dom(s)
    await s.fill("#q", "")
    assert await attribute(s, "#q", "data-value") == ""
    with pytest.raises(NotFound, match="#missing"):
        await s.fill("#missing", "x")
    with pytest.raises(InvalidArgs, match="not a form field"):
        await s.fill("#go", "x")


async def test_focus_type_and_enter_submits(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-form.html"))
    await s.focus("#q")
    assert "<li>focus:q</li>" in await dom(s)
    await s.type_text("cats")
    await s.key("Enter")
    assert await s.wait_for("pre#q", 10)  # the echo page the form submits to
    page = await s.current()
    assert page.url.startswith(pages.url("/echo?q=cats"))


async def test_control_a_selects_and_typing_replaces(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-form.html"))
    await s.focus("#q")
    for letter in "abc":
        await s.key(letter)
    assert await attribute(s, "#q", "data-value") == "abc"
    await s.key("Control+a")
    await s.key("x")
    assert await attribute(s, "#q", "data-value") == "x"
    await s.key("Shift+b")
    await s.key("Backspace")
    await s.key("Backspace")
    assert "<li>keydown:q:B</li>" in await dom(s)
    assert await attribute(s, "#q", "data-value") == ""


async def test_key_events_one_at_a_time_hold_modifiers(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-form.html"))
    await s.focus("#q")
    await s.type_text("hello")
    await s.key_event(True, "Control")
    await s.key_event(True, "a")
    await s.key_event(False, "a")
    await s.key_event(False, "Control")
    await s.key_event(True, "z")
    await s.key_event(False, "z")
    assert await attribute(s, "#q", "data-value") == "z"


async def test_drag_moves_an_element_and_drops(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-drag.html"))
    await s.drag((50, 230), (250, 280))
    assert await attribute(s, "#box", "data-at") == "220,250"
    await s.drag((60, 40), (400, 80))
    assert await attribute(s, "#target", "data-dropped") == "payload-1"
    # The pointer works normally again after a drop.
    await s.navigate(pages.url("/basic.html"))
    x, y = await s.locate("#counter")
    await s.click(x, y)
    assert ">1</button>" in await dom(s)


# -- observing ----------------------------------------------------------------------------------------------


async def test_extract_a11y_and_dom(s: EngineSession) -> None:
    tree = await s.extract("a11y")
    assert tree.kind == "a11y" and not tree.approximation
    assert 'button "0"' in tree.content
    assert 'heading "Basic page"' in tree.content
    assert 'textbox "Name"' in tree.content
    html = await s.extract("dom")
    assert '<button id="counter"' in html.content and html.content.startswith("<html")


async def test_extract_console_has_logs_exceptions_and_dialogs(s: EngineSession, pages: PageServer) -> None:
    await s.navigate(pages.url("/a-console.html"))
    x, y = await s.locate("#log")
    await s.click(x, y)
    x, y = await s.locate("#alert")
    await s.click(x, y)  # an alert would block the page; the session accepts it
    assert await attribute(s, "#alert", "data-after") == "yes"
    console = (await s.extract("console")).content
    assert "[log] hello from a-console 42" in console
    assert "[exception] Error: boom from a-console" in console
    assert "[warning] clicked" in console
    assert "[dialog alert] an alert" in console


async def test_screenshot_is_a_jpeg_scaled_to_fit(s: EngineSession, pages: PageServer) -> None:
    still = await s.screenshot(False, 1280, 800)
    assert still.mime == "image/jpeg" and still.data[:2] == b"\xff\xd8"
    assert (still.width, still.height) == (1280, 800) == jpeg_size(still.data)
    small = await s.screenshot(False, 640, 640)
    assert (small.width, small.height) == (640, 400) == jpeg_size(small.data)
    big = await s.screenshot(False, 2560, 1600)
    assert (big.width, big.height) == (1280, 800)  # never scaled up
    await s.navigate(pages.url("/a-scroll.html"))
    full = await s.screenshot(True, 2560, 16000)
    # The document is as wide as the viewport less its scrollbar, and taller than the viewport.
    assert 1200 < full.width <= 1280 and full.height > 4000 and jpeg_size(full.data) == (full.width, full.height)
    fitted = await s.screenshot(True, 1280, 800)
    assert fitted.height == 800 and fitted.width < 300


async def test_a_viewport_still_is_the_display_it_states_scroll_bars_included(
    s: EngineSession, pages: PageServer
) -> None:
    await display_cases.check_stills_match_the_display(s, pages)


async def test_set_viewport_changes_the_page_and_the_stills(s: EngineSession) -> None:
    await s.set_viewport(800, 600)
    assert await s.viewport() == (800, 600)
    still = await s.screenshot(False, 1280, 800)
    assert (still.width, still.height) == (800, 600)


async def test_wait_for_true_and_false(s: EngineSession, pages: PageServer) -> None:
    assert await s.wait_for("#counter", 1) is True
    assert await s.wait_for("#never", 0.3) is False
    await s.navigate(pages.url("/a-late.html"))
    assert await s.wait_for("#late", 10) is True


async def test_clipboard_round_trip_on_a_secure_page(s: EngineSession) -> None:
    assert await s.clipboard_write("copied ✓ text") is True
    assert await s.clipboard_read() == "copied ✓ text"


async def test_clipboard_absent_on_an_insecure_page(s: EngineSession, pages: PageServer) -> None:
    page = await s.navigate(pages.url("/basic.html", host=outward_address()))
    assert page.status == 200
    assert await s.clipboard_read() is None
    assert await s.clipboard_write("x") is False
    assert await s.clipboard_write_image("image/png", solid_png(8, 8, (0, 0, 255))) is False
    assert s.clipboard_image_note == NO_CLIPBOARD_API
    assert await s.clipboard_read_image() is None and s.clipboard_image_note == NO_CLIPBOARD_API


async def test_clipboard_images_round_trip_on_a_secure_page(s: EngineSession) -> None:
    await clipboard_images.round_trip(s)


async def test_clipboard_image_the_page_cannot_decode_is_refused(s: EngineSession) -> None:
    await clipboard_images.undecodable_is_refused(s)


async def test_a_pasted_image_reaches_the_page(s: EngineSession, pages: PageServer) -> None:
    """The image on the clipboard is what the page gets when a person pastes (Ctrl+V fires the paste event with
    the image as a file)."""
    await s.navigate(pages.url("/clip-paste.html"))
    assert await s.clipboard_write_image("image/png", solid_png(33, 21, (0, 200, 0))) is True
    x, y = await s.locate("#target")
    await s.click(x, y)
    await s.key("Control+v")
    assert await s.wait_for('#target[data-pasted="image/png 33x21"]', GUARD_S)


# -- files and the live view --------------------------------------------------------------------------------


async def test_drop_files_fires_a_drop_with_the_names(s: EngineSession, pages: PageServer, tmp_path: Path) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.png"
    first.write_text("one")
    second.write_bytes(b"\x89PNG")
    await s.navigate(pages.url("/a-drag.html"))
    assert type(s).real_drop is True
    await s.drop_files([str(first), str(second)], 100, 380)
    assert await attribute(s, "#files", "data-names") == "one.txt,two.png"


async def test_set_input_files_through_the_input_or_its_label(
    s: EngineSession, pages: PageServer, tmp_path: Path
) -> None:
    upload = tmp_path / "report.txt"
    upload.write_text("12345")
    await s.navigate(pages.url("/a-drag.html"))
    x, y = await s.locate("#upload-label")
    assert await s.set_input_files(x, y, [str(upload)]) is True
    assert "report.txt:5" in await dom(s)
    x, y = await s.locate("#upload")
    assert await s.set_input_files(x, y, [str(upload), str(upload)]) is True
    assert "report.txt:5,report.txt:5" in await dom(s)
    assert await s.set_input_files(5, 700, [str(upload)]) is False


async def test_frames_arrive_after_a_page_change(s: EngineSession) -> None:
    x, y = await s.locate("#counter")
    frames = s.frames(640, 640)
    try:
        first = await asyncio.wait_for(anext(frames), GUARD_S)
        assert (first.width, first.height) == (640, 400) == jpeg_size(first.data)
        assert first.captured_at <= time.monotonic()
        await s.click(x, y)
        changed = await asyncio.wait_for(anext(frames), GUARD_S)
        while changed.data == first.data:  # repaints of the old state may trail; the new one must come
            changed = await asyncio.wait_for(anext(frames), GUARD_S)
        assert changed.captured_at >= first.captured_at
        await s.set_viewport(800, 600)
        resized = await asyncio.wait_for(anext(frames), GUARD_S)
        while (resized.width, resized.height) != (640, 480):  # frames painted before the change may trail
            resized = await asyncio.wait_for(anext(frames), GUARD_S)
    finally:
        await frames.aclose()  # type: ignore[attr-defined]
    # Closing stopped the capture: a new one can start.
    again = s.frames(320, 320)
    try:
        assert (await asyncio.wait_for(anext(again), GUARD_S)).width == 320
    finally:
        await again.aclose()  # type: ignore[attr-defined]


# -- a trusted CA -------------------------------------------------------------------------------------------


# -- pages that open and close pages ------------------------------------------------------------------------


async def _close_others(session: EngineSession) -> None:
    assert isinstance(session, CdpSession)
    current = session._pages.known()[-1]
    targets = await session._conn.call("Target.getTargets")
    for target in targets["targetInfos"]:
        if target["type"] == "page" and target["targetId"] != current:
            await session._conn.call("Target.closeTarget", {"targetId": target["targetId"]})


async def test_a_link_to_a_new_page_is_followed_and_back(s: EngineSession, pages: PageServer) -> None:
    await popup_cases.a_link_opens_a_page_the_session_follows(s, pages)


async def test_a_page_opened_by_script_is_followed_and_back(s: EngineSession, pages: PageServer) -> None:
    await popup_cases.a_script_opens_a_page_the_session_follows(s, pages)
    # The history is the new page's own: after a script opened one, going back stays on it (nothing before it).
    x, y = await s.locate("#script")
    await s.click(x, y)
    await s.follow_pages()
    assert (await s.history("back")).title == "Popup page"
    x, y = await s.locate("#close")
    await s.click(x, y)
    await s.follow_pages()
    assert (await s.current()).title == "Popup opener"


async def test_the_last_page_closing_opens_the_home_page(s: EngineSession, pages: PageServer) -> None:
    await popup_cases.the_last_page_closing_opens_the_home_page(s, pages, _close_others)


async def test_the_live_view_follows_the_new_page(s: EngineSession, pages: PageServer) -> None:
    await popup_cases.frames_follow_the_new_page(s, pages)


async def test_the_pages_are_listed_and_one_is_chosen(s: EngineSession, pages: PageServer) -> None:
    await popup_cases.the_pages_are_listed_and_one_is_chosen(s, pages, reads_others=True)


def _certificate_pair(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a leaf it signed for 127.0.0.1: (ca.pem, leaf.pem, leaf.key)."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1))

    def build(subject: str, issuer: x509.Name, public: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        return (
            x509.CertificateBuilder().subject_name(name).issuer_name(issuer).public_key(public)
            .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
        )  # fmt: skip

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "engine-a test CA")])
    ca = (
        build("engine-a test CA", ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        build("127.0.0.1", ca_name, leaf_key.public_key())
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


async def test_a_given_ca_is_trusted_and_only_then(s: EngineSession, tmp_path: Path) -> None:
    ca, leaf, key = _certificate_pair(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(leaf, key)

    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="<title>trusted</title>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    url = f"https://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/"  # type: ignore[union-attr]
    try:
        refused = await s.navigate(url)  # the module's browser was given no CA
        assert refused.status is None and refused.title != "trusted"
        async with host_engine("engine-a", ca_file=str(ca)) as trusting:
            page = await trusting.navigate(url)
            assert (page.status, page.title) == (200, "trusted")
    finally:
        await runner.cleanup()
