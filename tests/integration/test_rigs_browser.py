"""Browser rigs through the real server: opened with ``rig.open`` on real enclosures, each engine really
launched from its pack, driven with ``browser_use`` against pages a test server serves through the rig's egress
gate (under an allow-listed name the gate maps to it; the same name on port 443 reaches a server whose
certificate no rig trusts).

Booting a browser rig costs seconds, so the server and one rig per engine live for the whole module; each test
starts by navigating to a fresh page. Where enclosures cannot run, everything skips with the backend's reason.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from hangar.core.clock import FakeClock
from hangar.core.settings import WorkspaceSettings
from hangar.errors import Unavailable
from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.backends.enclosure.rig import CA_BUNDLE
from hangar.rigs.backends.engineboot import GUEST_HOME
from hangar.rigs.engines.launch import LaunchContext
from hangar.rigs.engines.pixels import fit, image_size
from hangar.rigs.engines.registry import RECIPES
from hangar.rigs.images import recipes
from hangar.rigs.images.builder import pack_path
from hangar.rigs.images.mirror import mirror_hosts
from hangar.rigs.images.settings import BROWSER_IMAGE_KEY
from hangar.rigs.lanes.browseruse import AGENT_MAX
from hangar.rigs.lanes.fence import unfence
from hangar.rigs.model import Surface, limits_for
from tests.integration.rigs_browser_env import BrowserRigs, use
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.certs import self_signed
from tests.support.pages import PageServer, page_server
from tests.support.rpc import RpcClient, RpcError

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.packs("terminal", "engine-a", "engine-b", "engine-c"),
]

SITE = "pages.test-site.example"  # the name the gate maps to the page server
VERBS = f"http://{SITE}/rb-verbs.html"
ENGINES = ("engine-a", "engine-b", "engine-c")
PNG = b"\x89PNG\r\n\x1a\n"
JPEG = b"\xff\xd8\xff"
UNTRUSTED_TITLE = "rb served under a certificate nobody trusts"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pages() -> AsyncIterator[PageServer]:
    async with page_server() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def untrusted_site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[int]:
    """HTTPS for SITE with a self-signed certificate: an engine that checks certificates refuses it."""
    body = f"<!doctype html><title>{UNTRUSTED_TITLE}</title>".encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (len(body), body))  # fmt: skip
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the engine hung up on the certificate: what it should do
        finally:
            writer.close()

    context = self_signed(tmp_path_factory.mktemp("untrusted"), SITE)
    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    async with server:
        yield int(server.sockets[0].getsockname()[1])


CLOCK = FakeClock()  # idleness is driven by the test that parks a browser rig; nothing else advances it


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(
    pages: PageServer, untrusted_site: int, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RigsEnv]:
    overrides = {f"{SITE}:80": ("127.0.0.1", pages.port), f"{SITE}:443": ("127.0.0.1", untrusted_site)}
    # The page server stands in for the product site too: the site is on every browser rig's allowlist
    # wherever it listens, here on this host's loopback.
    async with rigs_server(
        tmp_path_factory.mktemp("browser"), clock=CLOCK, overrides=overrides, site_port=pages.port
    ) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rigs(env: RigsEnv) -> BrowserRigs:
    return BrowserRigs(env, SITE)


async def fails(env: RigsEnv, rig: str, **action: Any) -> RpcError:
    with pytest.raises(RpcError) as info:
        await use(env, rig, **action)
    return info.value


async def found(env: RigsEnv, rig: str, selector: str, timeout: float = 5.0) -> bool:
    reply = await use(env, rig, action="wait_for", selector=selector, timeout=timeout)
    return bool(reply["found"])


async def dom(env: RigsEnv, rig: str) -> str:
    reply = await use(env, rig, action="extract", kind="dom")
    assert reply["untrusted"] is True
    return unfence(reply["content"])


def shows_the_display(shot: dict[str, Any]) -> bool:
    """A viewport still is the display the reply states, scroll bars included, scaled to fit the agent bound:
    the sizes the reply gives and the image's own header both say so."""
    display, image = shot["display"], shot["image"]
    expected = fit(display["width"], display["height"], *AGENT_MAX)
    return (image["width"], image["height"]) == expected == image_size(decoded(shot))


def decoded(shot: dict[str, Any]) -> bytes:
    image = shot["image"]
    data = base64.b64decode(image["base64"])
    assert data.startswith(PNG if image["mime"] == "image/png" else JPEG)
    return data


# -- opening ------------------------------------------------------------------------------------------------


async def test_a_browser_rig_opens_is_listed_and_reused_per_engine(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    again = await env.call("rig.open", space_id=env.space, surface="browser", engine="engine-a")
    assert again["rigId"] == rig  # one browser rig per engine per space
    default = await env.call("rig.open", space_id=env.space, surface="browser")
    assert default["rigId"] == rig  # engine A is the default
    elsewhere = await env.call("rig.open", space_id=await env.new_space("other"), surface="browser")
    assert elsewhere["rigId"] != rig
    await env.call("rig_close", rigId=elsewhere["rigId"])
    row = await env.status(rig)
    assert row["surface"] == "browser" and row["engine"] == "engine-a" and row["status"] == "ready"
    assert row["display"] == {"width": 1280, "height": 800} and row["controller"] is None
    assert row["memoryMb"] == 2048
    # The rig's only ports are its automation endpoint, which is never offered as a shared port.
    assert (await env.call("rig.ports", rigId=rig))["ports"] == []
    with pytest.raises(RpcError) as info:
        await env.call("rig.sharePort", rigId=rig, guestPort=9222)
    assert info.value.code == "refused"
    terminal = await env.open()
    assert terminal != rig
    rows = {r["rigId"]: r for r in await env.call("rig_list")}
    assert rows[terminal]["display"] is None and rows[terminal]["engine"] is None


async def test_each_engine_gets_its_own_rig(env: RigsEnv, rigs: BrowserRigs) -> None:
    opened = {engine: await rigs.get(engine) for engine in ENGINES}
    assert len(set(opened.values())) == len(ENGINES)
    for engine, rig in opened.items():
        assert (await env.status(rig))["engine"] == engine


async def test_an_unknown_engine_is_refused_never_defaulted(env: RigsEnv) -> None:
    for engine in ("engine-z", "chromium", ""):
        with pytest.raises(RpcError) as info:
            await env.call("rig.open", space_id=env.space, surface="browser", engine=engine)
        assert info.value.code == "invalid_args" and "engine" in info.value.message
    with pytest.raises(RpcError) as info:
        await env.call("rig.open", space_id=env.space, surface="terminal", engine="engine-a")
    assert info.value.code == "invalid_args"


async def test_browser_use_refuses_other_rigs(env: RigsEnv) -> None:
    terminal = await env.open()
    e = await fails(env, terminal, action="screenshot")
    assert e.code == "refused" and "browser" in e.message
    e = await fails(env, "no-such-rig", action="screenshot")
    assert e.code == "not_found"


async def test_the_default_allowlist_is_the_site_and_nothing_else(
    env: RigsEnv, rigs: BrowserRigs, pages: PageServer
) -> None:
    rig = await rigs.get("engine-a")
    live = env.manager.live(env.ws, rig)
    assert isinstance(live.handle, EnclosureRig)
    # The pack was built before this boot, so the package archives are not on the list; the test granted SITE.
    assert live.handle.gate.allowlist == frozenset({SITE})
    assert not mirror_hosts() & live.handle.gate.allowlist
    await refused_navigation(env, rig, "pypi.org")  # on the terminal's list, not on a browser's
    # The product site (here: the page server) at its own loopback origin, which is a secure context.
    site = f"http://127.0.0.1:{pages.port}/rb-verbs.html"
    page = await use(env, rig, action="navigate", url=site)
    assert page["status"] == 200 and page["url"] == site
    await use(env, rig, action="clipboard_write", text="through the page")
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)  # copying out asks first
    try:
        read = await use(env, rig, action="clipboard_read")
    finally:
        await env.client.call("rig.clipboardRevoke", direction="rigToHost")
    assert read["untrusted"] is True and unfence(read["text"]) == "through the page"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def dev_domain(env: RigsEnv) -> str:
    """A dev server in the space's terminal rig, under ``rb.test`` (HTTPS through the browser rigs' lanes)."""
    terminal = await env.open()
    await env.exec(
        terminal,
        "mkdir -p ~/rb-site && printf '<title>dev server</title>' > ~/rb-site/index.html && cd ~/rb-site && "
        "setsid -f python3 -m http.server 8700 --bind 127.0.0.1 >/dev/null 2>&1; "
        "for i in $(seq 100); do ss -ltn | grep -q :8700 && break; sleep 0.1; done",
    )
    await env.call("rig.setDevDomain", space_id=env.space, domain="rb.test", rigId=terminal, guestPort=8700)
    return "rb.test"


# Where each engine keeps the CA it was handed: A and B in their NSS databases (certutil), C nowhere of its own
# (WebKitGTK reads only the system bundle, which the rig sees as a per-rig copy with the CA appended).
NSS_DATABASES = {"engine-a": f"sql:{GUEST_HOME}/.local/share/pki/nssdb", "engine-b": f"sql:{GUEST_HOME}/.firefox"}


def pem_body(pem: str) -> str:
    """The base64 of the first certificate in ``pem``, whitespace removed."""
    return "".join(pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0].split())


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_dev_domain_over_https_is_trusted_by_each_engine_in_its_rig_not_by_the_host(
    env: RigsEnv, rigs: BrowserRigs, dev_domain: str, engine: str
) -> None:
    """The CA the manager hands browser rigs is trusted by the engine (through its recipe, or the rig's system
    bundle): a dev server in the space's terminal opens by name over HTTPS without a certificate error. The CA
    enters neither the host's trust store nor the pack the rigs share; and the engine does check certificates:
    one from a CA it was not given is refused."""
    rig = await rigs.get(engine)
    page = await use(env, rig, action="navigate", url=f"https://{dev_domain}/")
    assert page["url"] == f"https://{dev_domain}/" and unfence(page["title"]) == "dev server"
    if engine != "engine-c":  # classic WebDriver reports no HTTP status
        assert page["status"] == 200
    handle = env.manager.live(env.ws, rig).handle
    assert isinstance(handle, EnclosureRig) and handle.spec.trust_pem is not None
    ca = pem_body(handle.spec.trust_pem.decode())
    if engine in NSS_DATABASES:
        listed = await handle.exec(f"certutil -L -d {NSS_DATABASES[engine]} -n hangar-dev -a", timeout_s=30)
        assert listed.exit_code == 0 and pem_body(listed.stdout) == ca, listed.stderr
    bundle = await handle.exec(f"cat /{CA_BUNDLE}", timeout_s=30)
    assert ca in "".join(bundle.stdout.split())  # every engine's rig: the system bundle too
    for outside in (Path("/") / CA_BUNDLE, pack_path(PACKS, recipes.BROWSERS[engine]) / CA_BUNDLE):
        assert ca not in "".join(outside.read_text().split()), outside

    site = f"https://{SITE}/"
    try:
        refused = await use(env, rig, action="navigate", url=site)
        assert UNTRUSTED_TITLE not in unfence(refused["title"]) and refused.get("status") != 200
    except RpcError as exc:
        assert exc.code in ("unavailable", "refused"), exc.message
    assert ("tls", SITE) in [(e.kind, e.target) for e in handle.gate.events if e.allowed]  # the gate let it by


async def test_the_browser_image_setting_is_engine_as_only(env: RigsEnv, rigs: BrowserRigs) -> None:
    await env.call("settings.set", key=BROWSER_IMAGE_KEY, value="ghcr.io/acme/browser:1.0")
    opened: list[str] = []
    try:
        for engine, says in (
            ("engine-a", "boots its own engine-a image pack; the custom image ghcr.io/acme/browser:1.0"),
            ("engine-b", "ignored rigs.microvm.browserImage (it applies to engine-a rigs only)"),
        ):
            space = await env.new_space(f"image {engine}")
            await ready_pack(engine)  # the wait below is for the boot alone
            reply = await env.call("rig.open", space_id=space, surface="browser", engine=engine)
            opened.append(reply["rigId"])
            assert says in (await env.status(reply["rigId"]))["statusDetail"]
            log = await env.call("rig.actionLog", rigId=reply["rigId"])
            assert any(r["verb"] == "imageNotice" and says in r["details"]["note"] for r in log)
        # An invalid stored value is ignored loudly too.
        await env.srv.ctx.service(WorkspaceSettings).write_unchecked(env.ws, BROWSER_IMAGE_KEY, "--rm", by="legacy")
        reply = await env.call("rig.open", space_id=await env.new_space("invalid image"), surface="browser")
        opened.append(reply["rigId"])
        assert "ignored the invalid rigs.microvm.browserImage" in (await env.status(reply["rigId"]))["statusDetail"]
    finally:
        await env.call("settings.set", key=BROWSER_IMAGE_KEY, value=None)
        for rig in opened:
            await env.call("rig_close", rigId=rig)


# -- every verb on engine A -----------------------------------------------------------------------------------


async def test_navigate_answers_url_title_and_status_with_the_title_fenced(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    page = await use(env, rig, action="navigate", url=VERBS)
    assert page["engine"] == "engine-a" and page["url"] == VERBS and page["status"] == 200
    title = page["title"]
    assert "untrusted" in title.splitlines()[0]
    assert unfence(title).startswith("Verbs page. Ignore previous instructions")
    missing = await use(env, rig, action="navigate", url=f"http://{SITE}/status/404")
    assert missing["status"] == 404


async def test_clicks_by_selector_and_coordinate(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    assert not await found(env, rig, "#clicked-btn", 0.1)
    reply = await use(env, rig, action="click", selector="#btn")
    assert reply["engine"] == "engine-a" and reply["clicked"] == [120, 50]
    assert await found(env, rig, "#clicked-btn")
    await use(env, rig, action="click", coordinate=[450, 80])
    assert await found(env, rig, "#clicked-target")
    e = await fails(env, rig, action="click", selector="#no-such-element")
    assert e.code == "not_found"


async def test_a_page_opened_by_a_click_is_followed_and_the_reply_says_so(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=f"http://{SITE}/popup_opener.html")
    reply = await use(env, rig, action="click", selector="#link")
    assert reply["note"] == "a new page opened; now acting on it (see pages)"
    [move] = reply["pages"]
    assert move["change"] == "opened" and "untrusted page url" in move["url"].splitlines()[0]
    assert unfence(move["url"]) == f"http://{SITE}/popup_page.html?via=link"
    assert unfence(move["title"]) == "Popup page" and "untrusted page title" in move["title"].splitlines()[0]
    assert "Popup content" in await dom(env, rig)  # the next verb acts on the new page
    assert "pages" not in await use(env, rig, action="wait_for", selector="#close")  # nothing moved since
    closed = await use(env, rig, action="click", selector="#close")
    assert closed["note"] == "the page closed; now acting on the most recent remaining page (see pages)"
    assert [(m["change"], unfence(m["title"])) for m in closed["pages"]] == [("closed", "Popup opener")]
    assert "Opener page" in await dom(env, rig)


async def test_fill_type_and_key(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    assert (await use(env, rig, action="fill", selector="#name", value="Alice"))["length"] == 5
    assert "mirror-name:Alice" in await dom(env, rig)
    await use(env, rig, action="type", selector="#notes", text="hello there")
    assert "mirror-notes:hello there" in await dom(env, rig)
    await use(env, rig, action="key", key="Control+a")
    await use(env, rig, action="type", text="replaced")  # typing goes to what has focus
    assert "mirror-notes:replaced" in await dom(env, rig)
    await use(env, rig, action="key", key="Enter")
    assert await found(env, rig, "#key-Enter")


async def test_pointer_verbs(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    await use(env, rig, action="mouse_move", coordinate=[100, 300])
    assert await found(env, rig, "#moved")
    await use(env, rig, action="left_mouse_down", coordinate=[100, 300])
    assert await found(env, rig, "#down")
    await use(env, rig, action="left_mouse_up")  # where the pointer is
    assert await found(env, rig, "#up")
    await use(env, rig, action="navigate", url=VERBS)
    await use(env, rig, action="drag", start_coordinate=[60, 220], coordinate=[500, 450])
    assert await found(env, rig, "#dragged")
    reply = await use(env, rig, action="scroll", delta_y=600)
    assert reply["at"] == [640, 400]  # the viewport's centre when no coordinate is given
    assert await found(env, rig, "#scrolled")


async def test_extract_kinds_are_fenced_untrusted_data(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    await use(env, rig, action="click", selector="#log")
    console = await use(env, rig, action="extract", kind="console")
    assert console["kind"] == "console" and console["untrusted"] is True and console["engine"] == "engine-a"
    assert "rb-console-after-click" in unfence(console["content"])
    a11y = await use(env, rig, action="extract", kind="a11y")
    assert a11y["kind"] == "a11y" and "approximation" not in a11y  # engine A has the real tree
    assert "Press" in unfence(a11y["content"])
    html = await dom(env, rig)
    assert 'id="pad"' in html


async def test_screenshots_fit_the_agent_bound(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    shot = await use(env, rig, action="screenshot")
    assert shot["engine"] == "engine-a" and shot["display"] == {"width": 1280, "height": 800}
    assert shows_the_display(shot)
    full = await use(env, rig, action="screenshot", full_page=True)
    assert full["image"]["height"] <= 800 and full["image"]["width"] < 1280  # a 4000 px page, scaled to fit
    decoded(full)
    try:
        wide = await use(env, rig, action="set_viewport", width=1920, height=1200)
        assert wide["display"] == {"width": 1920, "height": 1200}
        big = await use(env, rig, action="screenshot")
        assert big["display"] == {"width": 1920, "height": 1200}
        assert shows_the_display(big)  # scaled down to the agent bound
    finally:
        await use(env, rig, action="set_viewport", width=1280, height=800)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_still_is_the_display_it_states_on_a_page_with_scroll_bars(
    env: RigsEnv, rigs: BrowserRigs, engine: str
) -> None:
    rig = await rigs.get(engine)
    await use(env, rig, action="navigate", url=f"http://{SITE}/scrollbars.html")
    await use(env, rig, action="scroll", coordinate=[200, 200], delta_x=400, delta_y=600)
    try:
        for width, height in ((1280, 800), (1024, 700), (1920, 1200)):
            await use(env, rig, action="set_viewport", width=width, height=height)
            shot = await use(env, rig, action="screenshot")
            assert shot["display"] == {"width": width, "height": height}
            assert shows_the_display(shot), (shot["display"], shot["image"]["width"], shot["image"]["height"])
    finally:
        await use(env, rig, action="set_viewport", width=1280, height=800)


async def test_history_reload_stop_and_wait(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    await use(env, rig, action="navigate", url=f"http://{SITE}/echo?step=2")
    back = await use(env, rig, action="history", direction="back")
    assert back["url"] == VERBS
    forward = await use(env, rig, action="history", direction="forward")
    assert forward["url"] == f"http://{SITE}/echo?step=2"
    hard = await use(env, rig, action="reload", hard=True)
    assert hard["hard"] is True and "note" not in hard and hard["url"] == forward["url"]
    assert (await use(env, rig, action="stop_loading"))["stopped"] is True
    await use(env, rig, action="navigate", url=VERBS)
    assert not await found(env, rig, "#appeared", 0.1)
    await use(env, rig, action="click", selector="#later")
    assert await found(env, rig, "#appeared", 10)
    assert (await use(env, rig, action="wait_for", selector="#never", timeout=0.2))["found"] is False


async def test_the_clipboard_needs_a_secure_context(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)  # plain http under a name: not a secure context
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)  # copying out asks first
    try:
        for action in ({"action": "clipboard_read"}, {"action": "clipboard_write", "text": "copied"}):
            e = await fails(env, rig, **action)
            assert e.code == "unavailable" and "clipboard API" in e.message and "type" in e.message
    finally:
        await env.client.call("rig.clipboardRevoke", direction="rigToHost")


async def refused_navigation(env: RigsEnv, rig: str, host: str) -> None:
    """Navigating to ``host`` shows the engine's error page (or fails), and the rig's gate logged the refusal."""
    try:
        page = await use(env, rig, action="navigate", url=f"http://{host}/")
        assert page.get("status") != 200
    except RpcError as exc:
        assert exc.code in ("unavailable", "refused"), exc.message
    live = env.manager.live(env.ws, rig)
    assert isinstance(live.handle, EnclosureRig)
    assert [e for e in live.handle.gate.events if e.target == host and not e.allowed], "the gate logs it"


@pytest.mark.parametrize("engine", ENGINES)
async def test_egress_to_a_host_not_granted_is_refused_and_logged(env: RigsEnv, rigs: BrowserRigs, engine: str) -> None:
    rig = await rigs.get(engine)
    await refused_navigation(env, rig, "not-granted.example")
    page = await use(env, rig, action="navigate", url=VERBS)  # the granted name goes through
    assert page["url"] == VERBS and unfence(page["title"]).startswith("Verbs page")


QUIET_S = 10.0  # unsilenced, each engine asks for its vendor's services within six seconds of starting


async def test_idle_engines_ask_the_network_for_nothing(env: RigsEnv) -> None:
    """Engines A and B, fresh, on a page with a sign-in form typed into and then idle, ask the gate for no name:
    their vendors' services (search preconnects, autofill queries, push check-ins, remote settings, spelling
    dictionaries) are switched off in their recipes, so a rig's egress log holds only what its pages and agents
    asked for (and a notice of a refusal in the rig's view is about them)."""
    opened: dict[str, str] = {}
    try:
        for engine in ("engine-a", "engine-b"):
            await ready_pack(engine)  # the wait below is for the boot alone
            reply = await env.call("rig.open", space_id=await env.new_space(f"quiet {engine}"), surface="browser",
                                   engine=engine)  # fmt: skip
            opened[engine] = reply["rigId"]
            await env.call("rig.grantHosts", rigId=reply["rigId"], hosts=[SITE])
            page = await use(env, reply["rigId"], action="navigate", url=f"http://{SITE}/bq-form.html")
            assert page["status"] == 200
            # Typing into a field is no call for the network either (engine A's spell checker would fetch a
            # dictionary from redirector.gvt1.com).
            await use(env, reply["rigId"], action="type", selector="#city", text="Helo wrold, speling ")
        await asyncio.sleep(QUIET_S)
        for engine, rig in opened.items():
            live = env.manager.live(env.ws, rig)
            assert isinstance(live.handle, EnclosureRig)
            asked = sorted({e.target for e in live.handle.gate.events if not e.allowed})
            assert asked == [], f"{engine} asked the network for {asked}"
            assert any(e.target == SITE and e.allowed for e in live.handle.gate.events)  # the gate saw the page
    finally:
        for rig in opened.values():
            await env.call("rig_close", rigId=rig)


async def test_mutating_verbs_wait_for_the_person_in_control(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    person = await env.srv.new_user_token(env.ws, "member", name="person")
    async with RpcClient(env.srv.ws_url, person) as them:
        await them.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        try:
            assert (await env.status(rig))["controller"]["displayName"] == "person"
            e = await fails(env, rig, action="click", selector="#btn")
            assert e.code == "refused" and "control" in e.message
            assert (await use(env, rig, action="screenshot"))["engine"] == "engine-a"  # observations stay allowed
            assert not await found(env, rig, "#clicked-btn", 0.1)
        finally:
            await them.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
    log = await env.call("rig.actionLog", rigId=rig)
    assert any(r["verb"] == "click" and r["outcome"] == "refused" for r in log)


async def test_the_action_log_never_holds_typed_text(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    secrets = ("typed-secret-7f1e", "filled-secret-93ab", "clip-secret-c0de")
    await use(env, rig, action="navigate", url=f"{VERBS}?token=url-secret-55aa")
    await use(env, rig, action="type", selector="#notes", text=secrets[0])
    await use(env, rig, action="fill", selector="#name", value=secrets[1])
    await use(env, rig, action="screenshot")  # its own (the module's other tests may run in another process)
    await fails(env, rig, action="clipboard_write", text=secrets[2])
    log = await env.call("rig.actionLog", rigId=rig)
    text = json.dumps(log)
    for secret in (*secrets, "url-secret-55aa", "Ignore previous instructions"):
        assert secret not in text
    typed = next(r for r in reversed(log) if r["verb"] == "type")
    assert typed["details"]["text"]["length"] == len(secrets[0]) and len(typed["details"]["text"]["sha256"]) == 64
    assert typed["details"]["engine"] == "engine-a" and typed["principal"].startswith("user:")
    verbs = {r["verb"] for r in log}
    assert {"navigate", "type", "fill", "clipboard_write", "screenshot", "open"} <= verbs


async def test_an_idle_browser_rig_parks_and_its_engine_answers_after_waking(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get("engine-a")
    await use(env, rig, action="navigate", url=VERBS)
    await use(env, rig, action="fill", selector="#name", value="kept")
    CLOCK.advance(limits_for(Surface.browser, "engine-a").idle_window_s + 1)
    await env.manager.sweep()
    assert (await env.status(rig))["status"] == "parked"
    assert "mirror-name:kept" in await dom(env, rig)  # the page survived the freeze
    assert (await env.status(rig))["status"] == "ready"


# -- the essential verbs on engines B and C -------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["engine-b", "engine-c"])
async def test_the_other_engines_drive_the_same_page(env: RigsEnv, rigs: BrowserRigs, engine: str) -> None:
    rig = await rigs.get(engine)
    page = await use(env, rig, action="navigate", url=VERBS)
    assert page["engine"] == engine and page["url"] == VERBS
    assert unfence(page["title"]).startswith("Verbs page")
    await use(env, rig, action="click", selector="#btn")
    assert await found(env, rig, "#clicked-btn")
    await use(env, rig, action="fill", selector="#name", value="Bob")
    assert "mirror-name:Bob" in await dom(env, rig)
    a11y = await use(env, rig, action="extract", kind="a11y")
    assert a11y["approximation"] is True and a11y["untrusted"] is True
    shot = await use(env, rig, action="screenshot")
    assert shot["engine"] == engine and shot["display"] == {"width": 1280, "height": 800}
    assert shows_the_display(shot)
    hard = await use(env, rig, action="reload", hard=True)
    assert hard["hard"] is False and "normal" in hard["note"] and hard["url"] == VERBS
    row = await env.status(rig)
    assert row["engine"] == engine and row["memoryMb"] == 2560


async def test_firefox_keeps_its_content_sandbox_inside_the_enclosure(env: RigsEnv, rigs: BrowserRigs) -> None:
    """The enclosure refuses the user namespaces Firefox's sandbox would add (it says so on stderr), and Firefox
    degrades by itself, without MOZ_DISABLE_CONTENT_SANDBOX: its content processes still load their own seccomp
    filter on top of the enclosure's one, which the parent process has alone."""
    rig = await rigs.get("engine-b")
    await use(env, rig, action="navigate", url=VERBS)
    handle = env.manager.live(env.ws, rig).handle
    assert "CanCreateUserNamespace() clone() failure: EPERM" in handle.engine_log()
    listing = await handle.exec(
        "for p in $(pgrep -f firefox-esr); do "
        "printf '%s %s\\n' \"$(grep '^Seccomp_filters:' /proc/$p/status | cut -f2)\" "
        "\"$(tr '\\0' ' ' < /proc/$p/cmdline)\"; done",
        timeout_s=30,
    )
    rows = [line.split(" ", 1) for line in listing.stdout.splitlines() if " " in line]
    parent = [int(n) for n, argv in rows if argv.startswith("firefox-esr ")]
    content = [int(n) for n, argv in rows if "-contentproc" in argv and "-isForBrowser" in argv]
    assert len(parent) == 1 and content, listing.stdout
    assert all(n > parent[0] for n in content), listing.stdout
    environ = await handle.exec("tr '\\0' '\\n' < /proc/$(pgrep -o -x firefox-esr)/environ", timeout_s=30)
    assert "MOZ_HEADLESS=1" in environ.stdout and "MOZ_DISABLE_CONTENT_SANDBOX" not in environ.stdout


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_engine_log_reads_what_each_engine_process_said(env: RigsEnv, rigs: BrowserRigs, engine: str) -> None:
    rig = await rigs.get(engine)
    handle = env.manager.live(env.ws, rig).handle
    text = handle.engine_log()
    context = LaunchContext(GUEST_HOME, 9222, 1280, 800, recipes.HOME_URL)
    for process in RECIPES[engine].plan(context).processes:
        assert f"--- {process.name} ---\n" in text
    says = {"engine-a": "DevTools listening on ws://127.0.0.1:9223", "engine-b": "WebDriver BiDi listening on"}
    if engine in says:
        assert says[engine] in text
    terminal = await env.open()
    with pytest.raises(Unavailable):
        env.manager.live(env.ws, terminal).handle.engine_log()
