"""The live view, clipboard and file lanes of browser rigs through the real server, on real enclosures with each
engine launched from its pack, against pages a test server serves through the rig's egress gate.

The server and one rig per engine live for the whole module (booting costs seconds); each test navigates to a
fresh page. The secure-context rule is met with the rig's own home page (a ``file:`` document, secure) and a page
through the gate under a plain-http name (not secure). Where enclosures cannot run, everything skips with the
backend's reason.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets

from hangar.core.clock import FakeClock
from hangar.identity import DeviceScope, IdentityService
from hangar.rigs.lanes import access as lane_access
from hangar.rigs.lanes.fence import unfence
from hangar.rigs.lanes.signing import LaneSigner
from tests.conformance.engine_fixtures import pages_fixture
from tests.integration.rigs_browser_env import BrowserRigs, site_env_fixture, use
from tests.integration.rigs_env import RigsEnv
from tests.integration.test_connection_limits import Conn
from tests.support.chat import until
from tests.support.images import decoded_size, mean_colour, near, solid_jpeg, solid_png
from tests.support.pages import PageServer
from tests.support.rpc import RpcClient, RpcError

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.packs("terminal", "engine-a", "engine-b", "engine-c"),
]

SITE = "pages.lanes-site.example"
COUNTER = f"http://{SITE}/lv-counter.html"
JPEG = b"\xff\xd8\xff"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
GUARD_S = 30.0  # a bound against hangs only
CLOCK = FakeClock()


pages = pages_fixture()
# The page server stands in for the product site too, which a browser rig reaches at its own loopback origin
# (``LOOPBACK``): a secure context, where the page has a clipboard.
env = site_env_fixture(SITE, site_on_pages=True, clock=CLOCK)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rigs(env: RigsEnv) -> BrowserRigs:
    return BrowserRigs(env, SITE)


async def found(env: RigsEnv, rig: str, selector: str, timeout: float = 10.0) -> bool:
    return bool((await use(env, rig, action="wait_for", selector=selector, timeout=timeout))["found"])


async def fresh(env: RigsEnv, rig: str) -> None:
    """The counter page, loaded anew, at the boot viewport, with nobody in control."""
    if (await env.status(rig))["controller"] is not None:
        await env.call("rig.releaseControl", rigId=rig)
    await use(env, rig, action="set_viewport", width=1280, height=800)
    await use(env, rig, action="navigate", url=COUNTER)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- the live view ------------------------------------------------------------------------------------------


async def live_url(env: RigsEnv, rig: str, client: RpcClient | None = None, query: str = "") -> str:
    reply = await (client or env.client).call("rig.liveViewUrl", workspace_id=env.ws, rigId=rig)
    assert reply["url"].startswith("ws") and reply["path"].startswith(f"/rig/live/{rig}?sig=")
    return env.ws_origin + reply["path"] + query


async def next_text(view: websockets.ClientConnection, kind: str | None = None) -> dict[str, Any]:
    while True:
        frame = await asyncio.wait_for(view.recv(), GUARD_S)
        if isinstance(frame, str):
            notice = dict(json.loads(frame))
            if kind is None or notice.get("type") == kind:
                return notice


async def next_frame(view: websockets.ClientConnection) -> tuple[int, int, int, float, bytes]:
    while True:
        frame = await asyncio.wait_for(view.recv(), GUARD_S)
        if isinstance(frame, bytes):
            seq, width, height, ms = struct.unpack(">IHHd", frame[:16])
            return seq, width, height, ms, frame[16:]


async def click_live(view: websockets.ClientConnection, x: int, y: int) -> None:
    for action in ("down", "up"):
        await view.send(json.dumps({"type": "mouse", "action": action, "x": x, "y": y}))


async def settled(view: websockets.ClientConnection) -> None:
    """Wait until the lane has handled everything sent before: input is handled in order, and a key it does not
    know is answered with an error (whoever holds control), so its answer comes after the rest was applied."""
    await view.send(json.dumps({"type": "key", "action": "down", "key": "NoSuchKey"}))
    await next_text(view, "error")


async def frame_after(view: websockets.ClientConnection, seq: int) -> None:
    """Read frames until one later than ``seq`` (polled frames skip unchanged stills: a later one shows a change)."""
    while True:
        later, *_ = await next_frame(view)
        if later > seq:
            return


async def type_live(env: RigsEnv, rig: str, view: websockets.ClientConnection) -> None:
    """Focus the counter page's field with a click, type into it and press Enter: the page records the entry."""
    await click_live(view, 200, 270)
    await view.send(json.dumps({"type": "text", "text": "typed live"}))
    for action in ("down", "up"):
        await view.send(json.dumps({"type": "key", "action": action, "key": "Enter"}))
    assert await found(env, rig, '#typed[data-entered="typed live"]')


async def test_frames_arrive_and_input_needs_control(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get()
    await fresh(env, rig)
    headers = auth(env.srv.owner_token)
    async with websockets.connect(await live_url(env, rig, query="&w=640&h=640"), additional_headers=headers) as v:
        hello = await next_text(v, "hello")
        assert hello["engine"] == "engine-a" and hello["controller"] is None
        # The page's size comes before the first frame: input coordinates are in its CSS pixels. (The page list,
        # read apart from the frames, may come at any point.)
        notice = await asyncio.wait_for(v.recv(), GUARD_S)
        while isinstance(notice, str) and json.loads(notice)["type"] == "pages":
            notice = await asyncio.wait_for(v.recv(), GUARD_S)
        assert isinstance(notice, str) and json.loads(notice) == {"type": "viewport", "width": 1280, "height": 800}
        seq, width, height, ms, jpeg = await next_frame(v)
        assert jpeg.startswith(JPEG) and (width, height) == (640, 400) and ms > 0
        live = env.manager.live_rigs()
        assert any(r.id == rig and r.lanes >= 1 for r in live)  # the view pins the rig
        CLOCK.advance(16 * 60)  # past a browser rig's 15-minute idle window: the open view keeps it from parking
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "ready"

        # Without control, input is answered with a notice and ignored: the counter stays at 0.
        await click_live(v, 200, 150)
        notice = await next_text(v, "readonly")
        assert "take control" in notice["message"]
        assert not await found(env, rig, '#count[data-count="1"]', timeout=0.5)

        # With control, the same click counts, and a new frame follows the page's change.
        await env.call("rig.takeControl", rigId=rig)
        control = await next_text(v, "control")
        assert control["controller"] == control["you"]
        await click_live(v, 200, 150)
        assert await found(env, rig, '#count[data-count="1"]')
        await frame_after(v, seq)
        # Keys and text reach the focused field; a malformed message is answered, not fatal.
        await type_live(env, rig, v)
        await v.send(json.dumps({"type": "key", "action": "down", "key": "NoSuchKey"}))
        err = await next_text(v, "error")
        assert err["code"] == "invalid_args" and "NoSuchKey" in err["message"]
        await v.send(json.dumps({"type": "resize", "width": 1024, "height": 700}))
        size = await next_text(v, "viewport")
        assert (size["width"], size["height"]) == (1024, 700)
        await env.call("rig.releaseControl", rigId=rig)
        assert (await next_text(v, "control"))["controller"] is None

    # Take-over and hand-back emitted their events; the lane's audit keeps counts, not what was typed.
    changes = [e["change"] for e in await env.events("rigs.controlChanged") if e["rigId"] == rig]
    assert changes[-2:] == ["takeover", "handback"]
    log = await env.call("rig.actionLog", rigId=rig)
    closed = next(e for e in reversed(log) if e["verb"] == "liveview.close")
    assert closed["details"]["inputs"] == {"key": 2, "mouse": 4, "resize": 1, "text": 1}
    assert closed["details"]["ignored"] == 2 and closed["details"]["text"]["length"] == len("typed live")
    assert "typed live" not in json.dumps([e for e in log if e["verb"].startswith("liveview.")])
    # The view's close is logged before the manager lets go of its lane: wait for that, however the tasks interleave.
    await until(lambda: all(r.lanes == 0 for r in env.manager.live_rigs() if r.id == rig))


@pytest.mark.parametrize("engine", ["engine-b", "engine-c"])
async def test_the_other_engines_frames_follow_the_page_and_take_input(
    env: RigsEnv, rigs: BrowserRigs, engine: str
) -> None:
    """Engines B and C have no screencast: their frames are polled stills (C's made JPEG by the host's ffmpeg),
    sized to the view, and a new one follows a change the person makes with control."""
    rig = await rigs.get(engine)
    await fresh(env, rig)
    headers = auth(env.srv.owner_token)
    async with websockets.connect(await live_url(env, rig, query="&w=640&h=640"), additional_headers=headers) as v:
        hello = await next_text(v, "hello")
        assert hello["engine"] == engine and hello["controller"] is None
        size = await next_text(v, "viewport")
        assert (size["width"], size["height"]) == (1280, 800)
        seq, width, height, ms, jpeg = await next_frame(v)
        assert jpeg.startswith(JPEG) and width <= 640 and height <= 400 and width >= 620 and ms > 0
        await env.call("rig.takeControl", rigId=rig)
        await next_text(v, "control")
        await click_live(v, 200, 150)
        assert await found(env, rig, '#count[data-count="1"]')
        await frame_after(v, seq)
        await type_live(env, rig, v)
        await env.call("rig.releaseControl", rigId=rig)
        assert (await next_text(v, "control"))["controller"] is None


async def test_the_live_view_has_its_own_target_and_ends_with_membership(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get()
    signer = LaneSigner(env.srv.ctx.secrets, env.srv.ctx.clock)
    files_sig, _ = signer.mint("files", env.ws, rig, env.srv.owner_id)
    url = f"{env.ws_origin}/rig/live/{rig}?sig={files_sig}"
    async with websockets.connect(url, additional_headers=auth(env.srv.owner_token)) as v:
        err = await next_text(v, "error")
        assert err["code"] == "forbidden" and "another lane" in err["message"]
        await asyncio.wait_for(v.wait_closed(), GUARD_S)
        assert v.close_code == 4403
    # A terminal rig has no live view.
    terminal = await env.open()
    async with websockets.connect(await live_url(env, terminal), additional_headers=auth(env.srv.owner_token)) as v:
        err = await next_text(v, "error")
        assert err["code"] == "refused" and "browser rigs" in err["message"]
    # A member watches (first-frame credential) until their membership ends.
    member = await env.srv.new_user_token(env.ws, "member", name="watcher")
    async with RpcClient(env.srv.ws_url, member) as m:
        url = await live_url(env, rig, client=m)
        me = (await m.call("users.me"))["id"]
    async with websockets.connect(url) as v:
        await v.send(json.dumps({"type": "auth", "token": member}))
        await next_text(v, "hello")
        await next_frame(v)
        await env.call("members.remove", user_id=me)
        err = await next_text(v, "error")
        assert err["code"] == "forbidden" and "membership" in err["message"]
        await asyncio.wait_for(v.wait_closed(), GUARD_S)


async def test_a_read_only_credential_never_drives_the_live_view(env: RigsEnv, rigs: BrowserRigs) -> None:
    """An OAuth grant marked read only watches, but its input is refused even while its person holds control
    through another credential: input is a change, authorized per credential."""
    rig = await rigs.get()
    await fresh(env, rig)
    identity = env.srv.ctx.service(IdentityService)
    scope = DeviceScope(read_only=True, client_id="reader-client")
    reader = await identity.issue_device(env.srv.owner_id, "Reader (OAuth)", scope=scope)
    async with RpcClient(env.srv.ws_url, reader) as r:
        url = await live_url(env, rig, client=r)
        with pytest.raises(RpcError) as refused:
            await r.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        assert refused.value.code == "forbidden" and "read-only" in refused.value.message
    await env.call("rig.takeControl", rigId=rig)  # the same person, through their whole credential
    try:
        async with websockets.connect(url, additional_headers=auth(reader)) as v:
            hello = await next_text(v, "hello")
            assert hello["controller"] == hello["you"] == env.srv.owner_id
            await next_frame(v)
            inputs = [
                {"type": "mouse", "action": "down", "x": 200, "y": 150},
                {"type": "mouse", "action": "up", "x": 200, "y": 150},
                {"type": "key", "action": "down", "key": "Enter"},
                {"type": "wheel", "x": 10, "y": 10, "deltaY": 100},
                {"type": "text", "text": "typed through a read-only grant"},
                {"type": "resize", "width": 800, "height": 600},
            ]
            for event in inputs:
                await v.send(json.dumps(event))
                err = await next_text(v, "error")
                assert err["code"] == "forbidden" and "read-only" in err["message"], err
            await v.send(json.dumps({"type": "view", "width": 320, "height": 200}))  # not input: still allowed
            await next_frame(v)
            assert not await found(env, rig, '#count[data-count="1"]', timeout=0.5)
        # The person's whole credential drives the same view, outside read-only mode (set while it is open, too).
        async with websockets.connect(await live_url(env, rig), additional_headers=auth(env.srv.owner_token)) as v:
            await next_text(v, "hello")
            await next_frame(v)
            await env.call("guardrails.set", space_id=env.space, readOnly=True)
            try:
                await click_live(v, 200, 150)
                for _press_and_release in range(2):
                    err = await next_text(v, "error")
                    assert err["code"] == "refused" and "this space is in read-only mode" in err["message"], err
            finally:
                await env.call("guardrails.set", space_id=env.space, readOnly=False)
            assert not await found(env, rig, '#count[data-count="1"]', timeout=0.5)
            await click_live(v, 200, 150)
            assert await found(env, rig, '#count[data-count="1"]')
    finally:
        await env.call("rig.releaseControl", rigId=rig)
    log = await env.call("rig.actionLog", rigId=rig)
    closes = [e["details"] for e in log if e["verb"] == "liveview.close"]
    assert closes[-2]["inputs"] == {}  # the read-only view applied nothing


async def test_a_watchers_input_is_ignored_while_another_person_holds_control(env: RigsEnv, rigs: BrowserRigs) -> None:
    """Control is one person's: a watcher's mouse and keys are answered with a notice naming why and applied to
    nothing, while the same input from the person holding control reaches the page."""
    rig = await rigs.get()
    await fresh(env, rig)
    member = await env.srv.new_user_token(env.ws, "member", name="holder")
    async with RpcClient(env.srv.ws_url, member) as m:
        theirs = await live_url(env, rig, client=m)
        await m.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        try:
            headers = auth(env.srv.owner_token)
            async with websockets.connect(await live_url(env, rig), additional_headers=headers) as watcher:
                hello = await next_text(watcher, "hello")
                assert hello["controller"] not in (None, hello["you"])
                await next_frame(watcher)
                await click_live(watcher, 200, 150)
                await watcher.send(json.dumps({"type": "text", "text": "not mine to type"}))
                notice = await next_text(watcher, "readonly")
                assert (
                    notice["message"] == "another person holds control; your input is ignored until they hand it back"
                )
                await settled(watcher)
                assert not await found(env, rig, '#count[data-count="1"]', timeout=0.5)
            async with websockets.connect(theirs) as holder:
                await holder.send(json.dumps({"type": "auth", "token": member}))
                assert (await next_text(holder, "hello"))["controller"] == (await m.call("users.me"))["id"]
                await next_frame(holder)
                await click_live(holder, 200, 150)
                await settled(holder)
                assert await found(env, rig, '#count[data-count="1"]')
        finally:
            await m.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
    log = await env.call("rig.actionLog", rigId=rig)
    watched, held = [e["details"] for e in log if e["verb"] == "liveview.close"][-2:]
    assert watched["inputs"] == {} and watched["ignored"] == 3
    assert held["inputs"] == {"mouse": 2}


# -- the clipboard lane -------------------------------------------------------------------------------------


async def clip_path(env: RigsEnv, rig: str, client: RpcClient | None = None) -> str:
    lane = await (client or env.client).call("rig.fileLaneUrl", workspace_id=env.ws, rigId=rig)
    return f"/rig/clipboard/{rig}?sig={lane['sig']}"


async def clip(
    env: RigsEnv, path: str, token: str | None = None, *, body: bytes | None = None, ctype: str = "text/plain"
) -> httpx.Response:
    headers = auth(token or env.srv.owner_token)
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=GUARD_S) as http:
        if body is None:
            return await http.get(path, headers=headers)
        return await http.post(path, headers={**headers, "Content-Type": ctype}, content=body)


async def test_clipboard_kinds_consent_and_the_secure_context_rule(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get()
    await fresh(env, rig)
    await use(env, rig, action="history", direction="back")  # the rig's home page: a file: page, secure
    path = await clip_path(env, rig)

    r = await clip(env, path, body="pasted ✓ text".encode())
    assert r.status_code == 200, r.text
    assert r.json() == {
        "rigId": rig, "kind": "text", "applied": True, "reason": None, "note": None, "bytes": 15, "files": []
    }  # fmt: skip

    # Copying out asks until the person allows it; a ten-minute grant lets it through.
    r = await clip(env, path)
    assert r.status_code == 403 and r.json()["error"]["code"] == "consent_required"
    assert "ten minutes" in r.json()["error"]["message"]
    await env.client.call("rig.clipboardGrant", direction="rigToHost", minutes=10)
    r = await clip(env, path)
    assert r.status_code == 200
    assert r.json()["available"] is True and r.json()["text"] == "pasted ✓ text" and r.json()["files"] == []
    assert r.json()["image"] is None
    CLOCK.advance(10 * 60 + 1)
    assert (await clip(env, path)).status_code == 403  # the grant ran out
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    assert (await clip(env, path)).status_code == 200

    # An image: magic bytes checked, at most 16 MB; bytes that only start like a PNG are refused by the page.
    r = await clip(env, path, body=PNG, ctype="image/png")
    assert r.status_code == 200 and r.json()["applied"] is False
    assert "not pasted" in r.json()["reason"] and "refused" in r.json()["reason"]
    r = await clip(env, path, body=b"GIF89a" + bytes(10), ctype="image/png")
    assert r.status_code == 400 and r.json()["error"]["field"] == "image"
    r = await clip(env, path, body=b"\xff\xd8\xff" + bytes(16 * 1024 * 1024), ctype="image/jpeg")
    assert r.status_code == 413
    r = await clip(env, path, body=json.dumps({"files": ["/tmp/hangar-drops/a.txt"]}).encode(),
                   ctype="application/json")  # fmt: skip
    assert r.json()["applied"] is False and "no files" in r.json()["reason"]
    r = await clip(env, path, body=b"<x/>", ctype="application/xml")
    assert r.status_code == 400 and r.json()["error"]["field"] == "content-type"

    # A plain-http page is not a secure context: it has no clipboard, and both directions say so.
    await use(env, rig, action="navigate", url=COUNTER)
    r = await clip(env, path, body=b"nope")
    assert r.json()["applied"] is False and "secure context" in r.json()["reason"]
    r = await clip(env, path)
    assert r.json()["available"] is False and r.json()["text"] is None and "secure context" in r.json()["note"]

    # Audited as kinds, sizes and paths, never content.
    log = json.dumps(await env.call("rig.actionLog", rigId=rig))
    audit = json.dumps(await env.call("audit.list", target=f"rig:{rig}"))
    for where in (log, audit):
        assert "clipboard_write" in where and "clipboard_read" in where
        assert "pasted" not in where and "nope" not in where
    await env.client.call("rig.clipboardRevoke", direction="rigToHost")
    assert (await clip(env, path)).status_code == 403


async def test_pasting_is_refused_while_another_person_holds_control(env: RigsEnv, rigs: BrowserRigs) -> None:
    rig = await rigs.get()
    await fresh(env, rig)
    member = await env.srv.new_user_token(env.ws, "member", name="driver")
    async with RpcClient(env.srv.ws_url, member) as m:
        theirs = await clip_path(env, rig, client=m)
        await m.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        r = await clip(env, await clip_path(env, rig), body=b"mine")
        assert r.status_code == 403 and r.json()["error"]["code"] == "refused" and "control" in r.text
        await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
        assert (await clip(env, await clip_path(env, rig))).status_code == 200  # reading is an observation
        assert (await clip(env, theirs, member, body=b"theirs")).status_code == 200  # the holder pastes
        await m.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
    await env.client.call("rig.clipboardRevoke", direction="rigToHost")


async def test_a_paste_whole_inside_the_grace_is_pasted_and_a_stalled_one_gets_408_and_pastes_nothing(
    env: RigsEnv, rigs: BrowserRigs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clipboard lane reads a paste at the lanes' pace (``access.BODY_GRACE_S``, shortened here)."""
    grace = 3.0
    monkeypatch.setattr(lane_access, "BODY_GRACE_S", grace)
    rig = await rigs.get()
    await fresh(env, rig)
    await use(env, rig, action="history", direction="back")  # the rig's home page: a file: page, secure
    path = await clip_path(env, rig)
    head = (
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\n"
        f"authorization: Bearer {env.srv.owner_token}\r\ncontent-length: 30\r\n\r\n"
    ).encode()
    # In three pieces, the last a third of the grace before it: pasted.
    prompt = await Conn.open(env.srv.url, "127.0.0.1")
    prompt.send(head + b"paste that ")
    await asyncio.sleep(grace / 3)
    prompt.send(b"came in three ")
    await asyncio.sleep(grace / 3)
    prompt.send(b"parts")
    assert await prompt.status() == 200
    # Left unfinished: 408 once the grace passes, and the clipboard keeps the paste before.
    stalled = await Conn.open(env.srv.url, "127.0.0.1")
    stalled.send(head + b"never finished")
    assert await stalled.status() == 408
    for conn in (prompt, stalled):
        conn.close()
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    r = await clip(env, path)
    assert r.status_code == 200 and r.json()["text"] == "paste that came in three parts"
    await env.client.call("rig.clipboardRevoke", direction="rigToHost")


@pytest.mark.parametrize("engine", ["engine-a", "engine-b", "engine-c"])
async def test_images_cross_the_clipboard(env: RigsEnv, rigs: BrowserRigs, pages: PageServer, engine: str) -> None:
    """A pasted PNG is what the page gets on Ctrl+V and what a copy reads back; a JPEG is kept as PNG (the
    reply says so). Engine B's headless Firefox keeps no images: the paste answers why and the clipboard keeps
    its text."""
    rig = await rigs.get(engine)
    await fresh(env, rig)
    await use(env, rig, action="navigate", url=f"http://127.0.0.1:{pages.port}/clip-paste.html")
    path = await clip_path(env, rig)
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    try:
        assert (await clip(env, path, body=b"text before")).json()["applied"] is True
        png = solid_png(33, 21, (0, 200, 0))
        r = await clip(env, path, body=png, ctype="image/png")
        assert r.status_code == 200, r.text
        reply = r.json()
        assert (reply["kind"], reply["bytes"]) == ("image", len(png))
        if engine == "engine-b":
            assert reply["applied"] is False and "headless" in reply["reason"] and "drop the image" in reply["reason"]
            copied = (await clip(env, path)).json()
            assert copied["image"] is None and copied["text"] == "text before"
            return
        assert reply["applied"] is True and reply["reason"] is None and reply["note"] is None

        # The page's paste handler sees the picture (decoded to its size) when a paste happens there.
        await use(env, rig, action="click", selector="#target")
        await use(env, rig, action="key", key="Control+v")
        assert await found(env, rig, '#target[data-pasted="image/png 33x21"]')

        copied = (await clip(env, path)).json()
        image = copied["image"]
        assert copied["available"] is True and copied["text"] is None and copied["note"] is None
        assert (image["mime"], image["width"], image["height"]) == ("image/png", 33, 21)
        data = base64.b64decode(image["base64"])
        assert image["bytes"] == len(data) and decoded_size(data) == (33, 21) and near(mean_colour(data), (0, 200, 0))

        jpeg = solid_jpeg(40, 24, (20, 40, 200))
        reply = (await clip(env, path, body=jpeg, ctype="image/jpeg")).json()
        assert reply["applied"] is True and "converted to PNG" in reply["note"]
        image = (await clip(env, path)).json()["image"]
        assert (image["mime"], image["width"], image["height"]) == ("image/png", 40, 24)

        # Audited as kinds and sizes, never the picture.
        log = await env.call("rig.actionLog", rigId=rig)
        writes = [e["details"] for e in log if e["verb"] == "clipboard_write" and e["details"]["kind"] == "image"]
        assert writes[-2:] == [
            {"kind": "image", "bytes": len(png), "files": [], "applied": True, "mime": "image/png", "converted": False},
            {"kind": "image", "bytes": len(jpeg), "files": [], "applied": True, "mime": "image/jpeg",
             "converted": True},
        ]  # fmt: skip
        reads = [e["details"] for e in log if e["verb"] == "clipboard_read" and e["details"]["kind"] == "image"]
        assert reads[-1]["mime"] == "image/png" and reads[-1]["bytes"] > 0
        assert image["base64"][:64] not in json.dumps(log)
    finally:
        await env.client.call("rig.clipboardRevoke", direction="rigToHost")


async def test_the_clipboard_read_verb_asks_for_the_consent_the_lane_asks(env: RigsEnv, rigs: BrowserRigs) -> None:
    """``browser_use clipboard_read`` carries the rig's clipboard to its caller as the lane's GET does: the same
    per-person, per-direction consent, refused (and logged as refused) until that person grants it."""
    rig = await rigs.get()
    await fresh(env, rig)
    await use(env, rig, action="history", direction="back")  # the rig's home page: a file: page, secure
    await use(env, rig, action="clipboard_write", text="copied on the rig")  # pasting in is allowed by default
    with pytest.raises(RpcError) as refused:
        await use(env, rig, action="clipboard_read")
    assert refused.value.code == "consent_required" and "ten minutes" in refused.value.message
    # Another person's grant is theirs: it lets nothing out to this one.
    member = await env.srv.new_user_token(env.ws, "member", name="granter")
    async with RpcClient(env.srv.ws_url, member) as m:
        await m.call("rig.clipboardGrant", direction="rigToHost", always=True)
        assert unfence((await use(env, rig, m, action="clipboard_read"))["text"]) == "copied on the rig"
    with pytest.raises(RpcError) as refused:
        await use(env, rig, action="clipboard_read")
    assert refused.value.code == "consent_required"
    # The person's own ten-minute grant lets it through, until it runs out.
    await env.client.call("rig.clipboardGrant", direction="rigToHost", minutes=10)
    read = await use(env, rig, action="clipboard_read")
    assert read["untrusted"] is True and unfence(read["text"]) == "copied on the rig"
    CLOCK.advance(10 * 60 + 1)
    with pytest.raises(RpcError) as refused:
        await use(env, rig, action="clipboard_read")
    assert refused.value.code == "consent_required"
    log = [e for e in await env.call("rig.actionLog", rigId=rig) if e["verb"] == "clipboard_read"]
    assert [e["outcome"] for e in log[-5:]] == ["refused", "ok", "refused", "ok", "refused"]
    assert log[-2]["details"]["consent"] == "grant" and "copied on the rig" not in json.dumps(log)


# -- drops --------------------------------------------------------------------------------------------------


async def drop(env: RigsEnv, rig: str, names: list[str], point: tuple[int, int] | None) -> httpx.Response:
    lane = await env.call("rig.fileLaneUrl", rigId=rig)
    data = {"x": str(point[0]), "y": str(point[1])} if point else None
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=GUARD_S) as http:
        return await http.post(
            lane["path"],
            headers=auth(env.srv.owner_token),
            data=data,
            files=[("files", (n, f"content of {n}".encode())) for n in names],
        )


@pytest.mark.parametrize(
    ("engine", "delivery"), [("engine-a", "dropEvent"), ("engine-b", "fileInput"), ("engine-c", "fileInput")]
)
async def test_drops_land_in_tmp_and_reach_the_page(
    env: RigsEnv, rigs: BrowserRigs, engine: str, delivery: str
) -> None:
    rig = await rigs.get(engine)
    await fresh(env, rig)
    # Engine A: a real drop on the drop zone; B and C: the file input a label points at.
    point = (220, 420) if engine == "engine-a" else (460, 400)
    r = await drop(env, rig, ["report.txt", "report.txt"], point)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["delivery"] == delivery and body["directory"] == "/tmp/hangar-drops" and body["note"]
    paths = [f["path"] for f in body["files"]]
    assert paths[0].startswith("/tmp/hangar-drops/") and paths[1].endswith("2-report.txt")
    if delivery == "dropEvent":
        assert await found(env, rig, '#drop[data-event="drop"][data-files="report.txt,2-report.txt"]')
    else:
        assert await found(env, rig, '#pick[data-files="report.txt,2-report.txt"]')
    # Without a point the files land and nothing on the page is told.
    r = await drop(env, rig, ["report.txt"], None)
    assert r.json()["delivery"] == "landed" and r.json()["files"][0]["path"].endswith("3-report.txt")
