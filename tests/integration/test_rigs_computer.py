"""Computer rigs through the real server: ``rig.open`` with surface ``computer`` boots the desktop pack on a real
enclosure (Xvfb and Openbox inside it), and every ``computer_use`` verb is driven over the RPC client and read back
from inside the guest: ``xev`` (a window that prints every input event it receives, with root coordinates and key
names) records what the desktop was given, ``xclip`` reads the selections back, ``xrandr`` the mode.

Booting a desktop costs seconds, so the server and one rig live for the whole module; each test starts its own
recorder window. Where enclosures cannot run, everything skips with the backend's reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets

from hangar.rigs.actions.desktop import MAX_TYPE
from hangar.rigs.backends.base import Command
from hangar.rigs.backends.desktopboot import DISPLAY
from hangar.rigs.backends.engineboot import GUEST_HOME
from hangar.rigs.lanes.fence import unfence
from tests.integration.desktop_env import EVENT_BOUND_S, Recorder, drag_source, guest, pointer_state
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.desktopimage import plant_image
from tests.support.pages import PageServer, page_server
from tests.support.png import rgba_at
from tests.support.rpc import RpcClient, RpcError

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.packs("terminal", "desktop")]

SITE = "pages.computer-site.example"  # the name the gate maps to the page server, once granted


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pages() -> AsyncIterator[PageServer]:
    async with page_server() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(pages: PageServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RigsEnv]:
    await ready_pack("desktop")
    overrides = {f"{SITE}:80": ("127.0.0.1", pages.port)}
    async with rigs_server(tmp_path_factory.mktemp("rigs"), overrides=overrides) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rig(env: RigsEnv) -> str:
    return await env.ready(await env.call("rig.open", space_id=env.space, surface="computer"))


@pytest_asyncio.fixture(loop_scope="module")
async def rec(env: RigsEnv, rig: str) -> AsyncIterator[Recorder]:
    recorder = Recorder(env, rig)
    await recorder.start()
    try:
        yield recorder
    finally:
        await recorder.stop()


async def use(env: RigsEnv, rig: str, client: RpcClient | None = None, **action: Any) -> dict[str, Any]:
    reply = await (client or env.client).call("computer_use", workspace_id=env.ws, rigId=rig, action=action)
    assert isinstance(reply, dict)
    return reply


async def fails(env: RigsEnv, rig: str, client: RpcClient | None = None, **action: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await use(env, rig, client, **action)
    return caught.value


# --- opening ---------------------------------------------------------------------------------------------------


async def test_a_computer_rig_opens_on_the_enclosure_with_its_boot_display(env: RigsEnv, rig: str) -> None:
    row = await env.status(rig)
    assert (row["surface"], row["backend"], row["status"]) == ("computer", "enclosure", "ready")
    assert row["display"] == {"width": 1280, "height": 800}
    assert "current 1280 x 800" in await guest(env, rig, "xrandr --current")
    # The window manager runs inside the rig and manages its screen.
    assert "window id" in await guest(env, rig, "xprop -root _NET_SUPPORTING_WM_CHECK")


async def test_a_full_vm_without_an_imported_image_is_refused_and_an_unknown_backend_as_invalid(env: RigsEnv) -> None:
    # fullvm-kvm: the probe's reason where KVM is unusable, else no image; fullvm-tcg: no image imported here.
    for backend in ("fullvm-kvm", "fullvm-tcg"):
        with pytest.raises(RpcError) as caught:
            await env.call("rig.open", space_id=env.space, surface="computer", backend=backend)
        assert caught.value.code == "unavailable" and backend in caught.value.message
    assert "no desktop image is imported for fullvm-tcg" in caught.value.message
    with pytest.raises(RpcError) as caught:
        await env.call("rig.open", space_id=env.space, surface="computer", backend="fullvm-hvf-please")
    assert caught.value.code == "invalid_args" and "backend" in caught.value.message
    with pytest.raises(RpcError) as caught:  # a full VM is a desktop's backend only
        await env.call("rig.open", space_id=env.space, surface="terminal", backend="fullvm-kvm")
    assert caught.value.code == "invalid_args" and "backend" in caught.value.message


async def test_a_space_holds_one_desktop_an_open_asking_for_a_full_vm_instead_is_a_conflict(
    env: RigsEnv, rig: str
) -> None:
    plant_image(env.srv.ctx.datadir.root / "rigs", "img-tcg", "fullvm-tcg")
    for args in ({"backend": "fullvm-tcg"}, {"backend": "fullvm-tcg", "imageId": "img-tcg"}):
        with pytest.raises(RpcError) as caught:
            await env.call("rig.open", space_id=env.space, surface="computer", **args)
        assert caught.value.code == "conflict", caught.value
        assert caught.value.message.startswith("backend: this space's computer rig runs on enclosure, not fullvm-tcg")
    assert (await env.call("rig.open", space_id=env.space, surface="computer", backend="enclosure"))["rigId"] == rig
    assert (await env.call("rig.open", space_id=env.space, surface="computer"))["rigId"] == rig
    assert not list(env.srv.ctx.datadir.root.glob("rigs/run/*/overlay.qcow2"))  # no VM was started


async def test_the_desktop_denies_all_egress_until_a_caller_grants_hosts(env: RigsEnv, rig: str) -> None:
    fetch = f"curl -sS -o /dev/null -w '%{{http_code}}' --max-time 20 http://{SITE}/echo?x=1"
    handle = (await env.manager.get_live(env.ws, rig)).handle
    assert handle is not None
    denied = await handle.exec(fetch, timeout_s=60)
    assert denied.exit_code != 0 and denied.stdout != "200"
    await env.call("rig.grantHosts", rigId=rig, hosts=[SITE])
    assert await guest(env, rig, fetch) == "200"


async def test_a_computer_rig_is_not_a_terminal(env: RigsEnv, rig: str) -> None:
    with pytest.raises(RpcError) as caught:
        await env.call("rig.exec", rigId=rig, command="true")
    assert caught.value.code == "refused"
    with pytest.raises(RpcError) as caught:
        await env.client.call("browser_use", workspace_id=env.ws, rigId=rig, action={"action": "screenshot"})
    assert caught.value.code == "refused"


# --- observations ----------------------------------------------------------------------------------------------


async def test_screenshot_is_the_guest_screen_with_its_display_size(env: RigsEnv, rig: str, rec: Recorder) -> None:
    shot = await use(env, rig, action="screenshot")
    assert shot["display"] == {"width": 1280, "height": 800}
    image = shot["image"]
    assert (image["mime"], image["width"], image["height"]) == ("image/png", 1280, 800)
    png = base64.b64decode(image["base64"])
    # The recorder's window is white inside; the bare root window of Xvfb is black.
    assert rgba_at(png, 500, 400) == (255, 255, 255, 255)
    assert rgba_at(png, 1200, 780) == (0, 0, 0, 255)


async def test_mouse_move_and_cursor_position(env: RigsEnv, rig: str, rec: Recorder) -> None:
    moved = await use(env, rig, action="mouse_move", coordinate=[321, 234])
    assert moved["display"] == {"width": 1280, "height": 800}
    assert (await use(env, rig, action="cursor_position"))["coordinate"] == [321, 234]
    motion = await rec.until(1, "MotionNotify")
    assert motion[-1].root == (321, 234)
    assert "X=321\nY=234" in await guest(env, rig, "xdotool getmouselocation --shell")


@pytest.mark.parametrize(
    ("verb", "button", "count"),
    [("left_click", 1, 1), ("right_click", 3, 1), ("middle_click", 2, 1), ("double_click", 1, 2),
     ("triple_click", 1, 3)],
)  # fmt: skip
async def test_clicks_land_where_and_as_often_as_asked(
    env: RigsEnv, rig: str, rec: Recorder, verb: str, button: int, count: int
) -> None:
    reply = await use(env, rig, action=verb, coordinate=[400, 300])
    assert reply["at"] == [400, 300] and reply["clicks"] == count
    presses = await rec.until(count, "ButtonPress")
    releases = await rec.until(count, "ButtonRelease")
    assert [(e.button, e.root) for e in presses] == [(button, (400, 300))] * count
    assert [(e.button, e.root) for e in releases] == [(button, (400, 300))] * count


async def test_a_click_without_coordinate_lands_where_the_pointer_is(env: RigsEnv, rig: str, rec: Recorder) -> None:
    await use(env, rig, action="mouse_move", coordinate=[250, 260])
    assert (await use(env, rig, action="left_click"))["at"] == [250, 260]
    assert [e.root for e in await rec.until(1, "ButtonPress")] == [(250, 260)]


async def test_mouse_down_and_up_press_and_release_the_left_button(env: RigsEnv, rig: str, rec: Recorder) -> None:
    await use(env, rig, action="left_mouse_down", coordinate=[300, 200])
    pressed = await rec.until(1, "ButtonPress")
    assert not rec.events("ButtonRelease")  # held until asked
    await use(env, rig, action="left_mouse_up", coordinate=[350, 220])
    released = await rec.until(1, "ButtonRelease")
    assert (pressed[0].button, pressed[0].root) == (1, (300, 200))
    assert (released[0].button, released[0].root) == (1, (350, 220))


async def test_left_click_drag_moves_with_the_button_held(env: RigsEnv, rig: str, rec: Recorder) -> None:
    await use(env, rig, action="left_click_drag", start_coordinate=[200, 200], coordinate=[600, 500])
    (press,) = await rec.until(1, "ButtonPress")
    (release,) = await rec.until(1, "ButtonRelease")
    assert (press.root, release.root) == ((200, 200), (600, 500))
    held = [e for e in rec.events("MotionNotify") if "Button1Mask" in e.text or "state 0x100" in e.text]
    assert held and held[-1].root == (600, 500)


async def test_scroll_sends_wheel_clicks(env: RigsEnv, rig: str, rec: Recorder) -> None:
    reply = await use(env, rig, action="scroll", coordinate=[500, 400], scroll_direction="down", scroll_amount=4)
    assert (reply["scrolled"], reply["amount"]) == ("down", 4)
    presses = await rec.until(4, "ButtonPress")
    assert [(e.button, e.root) for e in presses] == [(5, (500, 400))] * 4
    await use(env, rig, action="scroll", scroll_direction="left", scroll_amount=1)
    assert (await rec.until(5, "ButtonPress"))[-1].button == 6


# --- keys and text ---------------------------------------------------------------------------------------------


async def test_key_presses_x11_combinations(env: RigsEnv, rig: str, rec: Recorder) -> None:
    await use(env, rig, action="key", text="ctrl+shift+t")
    await use(env, rig, action="key", text="Return")
    keys = [e.key for e in await rec.until(4, "KeyPress")]
    assert keys[:4] == ["Control_L", "Shift_L", "T", "Return"]


async def test_hold_key_holds_for_its_duration(env: RigsEnv, rig: str, rec: Recorder) -> None:
    reply = await use(env, rig, action="hold_key", text="a", duration=0.5)
    assert reply == {"key": "a", "held": 0.5}
    (press,) = await rec.until(1, "KeyPress")
    (release,) = await rec.until(1, "KeyRelease")
    assert press.key == release.key == "a"
    assert release.time - press.time >= 450  # the X server's own clock, in milliseconds
    assert (await use(env, rig, action="hold_key", text="b", duration=0))["held"] == 0  # the bound's low end


async def test_type_types_the_text(env: RigsEnv, rig: str, rec: Recorder) -> None:
    text = "Hello, World! 42 ~"
    assert (await use(env, rig, action="type", text=text))["typed"] == len(text)
    presses = await rec.until(len(text), "KeyPress")
    assert "".join(e.chars for e in presses) == text


async def test_type_takes_its_limit_and_refuses_one_past(env: RigsEnv, rig: str, rec: Recorder) -> None:
    over = await fails(env, rig, action="type", text="x" * (MAX_TYPE + 1))
    assert over.code == "invalid_args" and "action.text" in over.message
    assert (await use(env, rig, action="type", text="y" * MAX_TYPE))["typed"] == MAX_TYPE
    presses = await rec.until(MAX_TYPE, "KeyPress")
    assert "".join(e.chars for e in presses) == "y" * MAX_TYPE


async def test_wait_waits_and_is_bounded(env: RigsEnv, rig: str) -> None:
    assert (await use(env, rig, action="wait", duration=0.2))["waited"] == 0.2
    assert (await use(env, rig, action="wait", duration=0))["waited"] == 0
    for verb in ("wait", "hold_key"):
        e = (
            await fails(env, rig, action=verb, text="a", duration=60.5)
            if verb == "hold_key"
            else await fails(env, rig, action=verb, duration=60.5)
        )
        assert e.code == "invalid_args" and "action.duration" in e.message
        e = await fails(env, rig, **({"text": "a"} if verb == "hold_key" else {}), action=verb, duration=-0.1)
        assert e.code == "invalid_args" and "action.duration" in e.message


# --- bad input -------------------------------------------------------------------------------------------------


async def test_a_point_off_the_display_is_refused_naming_its_field(env: RigsEnv, rig: str, rec: Recorder) -> None:
    for action in (
        {"action": "left_click", "coordinate": [1280, 10]},
        {"action": "mouse_move", "coordinate": [10, 800]},
        {"action": "left_click_drag", "start_coordinate": [10, 10], "coordinate": [5000, 10]},
    ):
        e = await fails(env, rig, **action)
        assert e.code == "invalid_args" and "action.coordinate" in e.message and "1280x800" in e.message
    e = await fails(env, rig, action="left_click_drag", start_coordinate=[1300, 10], coordinate=[10, 10])
    assert e.code == "invalid_args" and "action.start_coordinate" in e.message
    await use(env, rig, action="mouse_move", coordinate=[1279, 799])  # the last pixel is on the display
    assert (await use(env, rig, action="cursor_position"))["coordinate"] == [1279, 799]
    assert not rec.events("ButtonPress")  # nothing was pressed by a refused verb


async def test_an_unknown_key_is_refused_and_nothing_is_pressed(env: RigsEnv, rig: str, rec: Recorder) -> None:
    for text in ("ctrl+NoSuchKey", "Retrun"):
        e = await fails(env, rig, action="key", text=text)
        assert e.code == "invalid_args" and "action.text" in e.message
    e = await fails(env, rig, action="hold_key", text="shift+Bogus_Key", duration=1)
    assert e.code == "invalid_args" and "Bogus_Key" in e.message
    e = await fails(env, rig, action="key", text="ctrl+a;rm -rf ~")  # not an X11 spelling at all
    assert e.code == "invalid_args" and "action.text" in e.message
    await use(env, rig, action="key", text="KP_Enter")  # a known name after them
    keys = [e.key for e in await rec.until(1, "KeyPress")]
    assert keys == ["KP_Enter"]


# --- display ---------------------------------------------------------------------------------------------------


async def test_set_display_changes_the_mode_and_what_is_on_it(env: RigsEnv, rig: str) -> None:
    try:
        assert (await use(env, rig, action="set_display", width=1024, height=768))["display"] == {
            "width": 1024,
            "height": 768,
        }
        assert "current 1024 x 768" in await guest(env, rig, "xrandr --current")
        shot = await use(env, rig, action="screenshot")
        assert shot["display"] == {"width": 1024, "height": 768}
        assert (shot["image"]["width"], shot["image"]["height"]) == (1024, 768)
        e = await fails(env, rig, action="left_click", coordinate=[1100, 10])
        assert e.code == "invalid_args" and "1024x768" in e.message
        # The largest mode: the still is cut to the agent bound, the display says the real size.
        await use(env, rig, action="set_display", width=2560, height=1600)
        big = await use(env, rig, action="screenshot")
        assert big["display"] == {"width": 2560, "height": 1600}
        assert (big["image"]["width"], big["image"]["height"]) == (1280, 800)
        await use(env, rig, action="mouse_move", coordinate=[2559, 1599])
        for width, height in ((2561, 1600), (319, 240), (320, 239)):
            e = await fails(env, rig, action="set_display", width=width, height=height)
            assert e.code == "invalid_args"
        await use(env, rig, action="set_display", width=320, height=240)  # the smallest
    finally:
        await use(env, rig, action="set_display", width=1280, height=800)


# --- clipboard -------------------------------------------------------------------------------------------------


async def test_clipboard_write_owns_the_clipboard_and_read_fences_it(env: RigsEnv, rig: str) -> None:
    text = "clip from the agent: héllo\nsecond line"
    assert (await use(env, rig, action="clipboard_write", text=text))["written"] == len(text)
    assert await guest(env, rig, "xclip -o -selection clipboard") == text
    e = await fails(env, rig, action="clipboard_read")  # copying out of a rig asks the person first
    assert e.code == "consent_required"
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    read = await use(env, rig, action="clipboard_read")
    assert read["untrusted"] is True and read["selection"] == "clipboard"
    assert read["text"] != text and unfence(read["text"]) == text
    log = await env.call("rig.actionLog", rigId=rig)
    assert "héllo" not in str(log)  # never the content


async def test_clipboard_read_reads_primary_and_an_empty_selection(env: RigsEnv, rig: str) -> None:
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    await guest(env, rig, "printf 'selected words' | xclip -selection primary -in >/dev/null 2>&1")
    read = await use(env, rig, action="clipboard_read", selection="primary")
    assert unfence(read["text"]) == "selected words"
    # No drag is live: the drag selection is empty, which is a normal answer.
    assert unfence((await use(env, rig, action="clipboard_read", selection="xdnd"))["text"]) == ""
    e = await fails(env, rig, action="clipboard_read", selection="secondary")
    assert e.code == "invalid_args" and "action.selection" in e.message


async def test_clipboard_write_takes_text_only(env: RigsEnv, rig: str) -> None:
    e = await fails(env, rig, action="clipboard_write", text="x", image="aGk=")
    assert e.code == "invalid_args"
    e = await fails(env, rig, action="clipboard_write", text=42)
    assert e.code == "invalid_args" and "action.text" in e.message


async def test_clipboard_read_xdnd_reads_a_live_drag_payload(env: RigsEnv, rig: str) -> None:
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    payload = "file:///home/rig/report.pdf\r\nfile:///home/rig/notes.txt\r\n"
    source = await drag_source(env, rig, payload)
    try:
        read = await use(env, rig, action="clipboard_read", selection="xdnd")
        assert read["selection"] == "xdnd" and unfence(read["text"]) == payload
    finally:
        source.cancel()
        await asyncio.gather(source, return_exceptions=True)


# --- clipboard lane ------------------------------------------------------------------------------------------


async def clip(env: RigsEnv, rig: str, token: str | None = None, *, body: bytes | None = None,
               ctype: str = "text/plain") -> httpx.Response:  # fmt: skip
    lane = await env.call("rig.fileLaneUrl", rigId=rig)
    path = f"/rig/clipboard/{rig}?sig={lane['sig']}"
    headers = {"Authorization": f"Bearer {token or env.srv.owner_token}"}
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=EVENT_BOUND_S) as http:
        if body is None:
            return await http.get(path, headers=headers)
        return await http.post(path, headers={**headers, "Content-Type": ctype}, content=body)


async def test_the_clipboard_lane_pastes_text_images_and_files_onto_the_desktop(env: RigsEnv, rig: str) -> None:
    pasted = await clip(env, rig, body=b"pasted from a person", ctype="text/plain")
    assert pasted.status_code == 200 and pasted.json()["applied"] is True
    assert await guest(env, rig, "xclip -o -selection clipboard") == "pasted from a person"
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    copied = await clip(env, rig)
    assert copied.status_code == 200
    assert (copied.json()["text"], copied.json()["engine"]) == ("pasted from a person", None)
    png = base64.b64decode((await use(env, rig, action="screenshot"))["image"]["base64"])
    assert (await clip(env, rig, body=png, ctype="image/png")).json()["applied"] is True
    handle = (await env.manager.get_live(env.ws, rig)).handle
    assert handle is not None
    out = bytearray()

    async def collect(chunk: bytes) -> None:
        out.extend(chunk)

    argv = ("xclip", "-o", "-selection", "clipboard", "-target", "image/png")
    await handle.run(Command(argv, GUEST_HOME, {"DISPLAY": DISPLAY}), collect)
    assert bytes(out) == png  # the image itself, offered as image/png
    files = {"files": ["/home/rig/Drops/report one.pdf", "/home/rig/Drops/b.txt"]}
    body = json.dumps(files).encode()
    assert (await clip(env, rig, body=body, ctype="application/json")).json()["files"] == files["files"]
    uris = await guest(env, rig, "xclip -o -selection clipboard -target text/uri-list")
    assert uris == "file:///home/rig/Drops/report%20one.pdf\r\nfile:///home/rig/Drops/b.txt\r\n"
    refused = await clip(env, rig, body=json.dumps({"files": ["relative/path"]}).encode(), ctype="application/json")
    assert refused.status_code == 400 and "files[0]" in refused.text
    log = await env.call("rig.actionLog", rigId=rig)
    assert "pasted from a person" not in str(log)  # kinds, sizes and paths; never content


async def test_a_drop_lands_in_drops_and_reaches_the_desktop_on_its_clipboard(env: RigsEnv, rig: str) -> None:
    lane = await env.call("rig.fileLaneUrl", rigId=rig)
    names = ["report one.txt", "report one.txt"]  # the second collides: it lands as 2-name
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=EVENT_BOUND_S) as http:
        reply = await http.post(
            lane["path"],
            headers={"Authorization": f"Bearer {env.srv.owner_token}"},
            files=[("files", (n, f"content {i}".encode())) for i, n in enumerate(names)],
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["delivery"], body["directory"]) == ("clipboard", "/home/rig/Drops")
    paths = [f["path"] for f in body["files"]]
    assert paths == ["/home/rig/Drops/report one.txt", "/home/rig/Drops/2-report one.txt"]
    assert await guest(env, rig, "cat '/home/rig/Drops/2-report one.txt'") == "content 1"
    uris = await guest(env, rig, "xclip -o -selection clipboard -target text/uri-list")
    assert uris == "file:///home/rig/Drops/report%20one.txt\r\nfile:///home/rig/Drops/2-report%20one.txt\r\n"
    await guest(env, rig, "rm -rf /home/rig/Drops")


# --- live view -------------------------------------------------------------------------------------------------


async def live_view(env: RigsEnv, rig: str, client: RpcClient | None = None) -> str:
    reply = await (client or env.client).call("rig.liveViewUrl", workspace_id=env.ws, rigId=rig)
    return env.ws_origin + reply["path"] + "&w=640&h=400"


async def next_text(view: websockets.ClientConnection, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(EVENT_BOUND_S):
        while True:
            frame = await view.recv()
            if isinstance(frame, str) and (notice := dict(json.loads(frame)))["type"] == kind:
                return notice
            if (
                isinstance(frame, str)
                and kind != "error"
                and notice["type"] == "error"
                and notice["code"] != "invalid_args"
            ):
                raise AssertionError(f"the live view failed: {notice}")


async def next_frame(view: websockets.ClientConnection) -> tuple[int, int, bytes]:
    async with asyncio.timeout(EVENT_BOUND_S):
        while True:
            frame = await view.recv()
            if isinstance(frame, bytes):
                _seq, width, height, _ms = struct.unpack(">IHHd", frame[:16])
                return width, height, frame[16:]


async def test_the_live_view_shows_the_desktop_and_takes_the_controllers_input(
    env: RigsEnv, rig: str, rec: Recorder
) -> None:
    headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
    async with websockets.connect(await live_view(env, rig), additional_headers=headers) as view:
        hello = await next_text(view, "hello")
        assert (hello["surface"], hello["engine"]) == ("computer", None)
        assert await next_text(view, "viewport") == {"type": "viewport", "width": 1280, "height": 800}
        width, height, jpeg = await next_frame(view)
        assert (width, height) == (640, 400) and jpeg[:3] == b"\xff\xd8\xff"  # fit in the view asked for
        # Without control, input is ignored and said so.
        await view.send(json.dumps({"type": "mouse", "action": "down", "x": 300, "y": 300}))
        assert (await next_text(view, "readonly"))["message"]
        await env.call("rig.takeControl", rigId=rig)
        try:
            for action in ("down", "up"):
                await view.send(json.dumps({"type": "mouse", "action": action, "x": 310, "y": 320}))
            await view.send(json.dumps({"type": "key", "action": "down", "key": "Enter"}))
            await view.send(json.dumps({"type": "key", "action": "up", "key": "Enter"}))
            await view.send(json.dumps({"type": "text", "text": "ok!"}))
            await view.send(json.dumps({"type": "wheel", "x": 400, "y": 300, "deltaY": 250}))
            await view.send(json.dumps({"type": "mouse", "action": "move", "x": 1280, "y": 5}))  # off the display
            err = await next_text(view, "error")
            assert err["code"] == "invalid_args" and "1280x800" in err["message"]
            presses = await rec.until(3, "ButtonPress")
            assert [(e.button, e.root) for e in presses] == [(1, (310, 320)), (5, (400, 300)), (5, (400, 300))]
            keys = await rec.until(4, "KeyPress")
            assert keys[0].key == "Return" and "".join(e.chars for e in keys[1:]) == "ok!"
            # A resize is a mode change; the view says the new display size.
            await view.send(json.dumps({"type": "resize", "width": 1024, "height": 768}))
            assert await next_text(view, "viewport") == {"type": "viewport", "width": 1024, "height": 768}
        finally:
            await env.call("rig.releaseControl", rigId=rig)
            await use(env, rig, action="set_display", width=1280, height=800)
    async with asyncio.timeout(EVENT_BOUND_S):  # the lane writes its row as it ends, after the client left
        while not (closed := [r for r in await env.call("rig.actionLog", rigId=rig) if r["verb"] == "liveview.close"]):
            await asyncio.sleep(0.05)
    closed = closed[-1]
    assert closed["details"]["ignored"] == 1 and closed["details"]["inputs"]["mouse"] == 2  # the refused move is not
    assert closed["details"]["text"]["length"] == 3  # typed text as a length and hash, never content


async def test_dragging_out_offers_a_new_drag_payload_once_and_never_a_stale_one(env: RigsEnv, rig: str) -> None:
    await env.client.call("rig.clipboardGrant", direction="rigToHost", always=True)
    headers = {"Authorization": f"Bearer {env.srv.owner_token}"}

    async def press_drag_release(view: websockets.ClientConnection, start: asyncio.Task[Any] | None) -> None:
        await view.send(json.dumps({"type": "mouse", "action": "down", "x": 100, "y": 100}))
        await asyncio.sleep(0.3)  # the press's snapshot is taken before a source may start
        if start is not None:
            await start
        for x in (150, 200, 250):
            await view.send(json.dumps({"type": "mouse", "action": "move", "x": x, "y": 100}))
            await asyncio.sleep(0.3)
        await view.send(json.dumps({"type": "mouse", "action": "up", "x": 250, "y": 100}))

    await env.call("rig.takeControl", rigId=rig)
    sources: list[asyncio.Task[Any]] = []
    try:
        async with websockets.connect(await live_view(env, rig), additional_headers=headers) as view:
            await next_text(view, "hello")
            # A payload the drag selection already held when the press began is stale: never offered.
            sources.append(await drag_source(env, rig, "stale-payload"))
            await press_drag_release(view, None)
            # A drag that starts after the press: its payload is offered, once.
            fresh = "file:///home/rig/Drops/out%20one.txt\r\n"

            async def start_fresh() -> None:
                sources[0].cancel()
                sources.append(await drag_source(env, rig, fresh))

            await press_drag_release(view, asyncio.ensure_future(start_fresh()))
            offered = await next_text(view, "dragOut")
            assert offered == {"type": "dragOut", "text": fresh, "uris": ["file:///home/rig/Drops/out%20one.txt"]}
    finally:
        for source in sources:
            source.cancel()
        await asyncio.gather(*sources, return_exceptions=True)
        await env.call("rig.releaseControl", rigId=rig)


async def said_since(view: websockets.ClientConnection, quiet_s: float = 1.0) -> list[Any]:
    """The view's text frames (its notices and errors) until it has been quiet for ``quiet_s``."""
    said: list[Any] = []
    with contextlib.suppress(TimeoutError, websockets.ConnectionClosed):
        while True:
            frame = await asyncio.wait_for(view.recv(), quiet_s)
            if isinstance(frame, str):
                said.append(json.loads(frame))
    return said


async def test_a_view_that_leaves_mid_press_releases_what_it_held(env: RigsEnv, rig: str) -> None:
    """A person's view that ends with the left button and a key still down leaves neither held: the desktop is
    back to no button pressed (a held button keeps the pointer grabbed, and the agent's clicks would go astray)."""
    headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
    await env.call("rig.takeControl", rigId=rig)
    try:
        async with websockets.connect(await live_view(env, rig), additional_headers=headers) as view:
            await next_text(view, "hello")
            await view.send(json.dumps({"type": "mouse", "action": "down", "x": 640, "y": 500}))
            await view.send(json.dumps({"type": "key", "action": "down", "key": "Shift"}))
            state = ""
            try:
                async with asyncio.timeout(EVENT_BOUND_S):  # both applied before the view leaves
                    while not {"shift", "button1"} <= set((state := await pointer_state(env, rig)).split()):
                        await asyncio.sleep(0.1)
            except TimeoutError:
                said = await said_since(view)
                raise AssertionError(f"the desktop holds {state!r}; the view said {said}") from None
    finally:
        await env.call("rig.releaseControl", rigId=rig)
    async with asyncio.timeout(EVENT_BOUND_S):
        while (state := await pointer_state(env, rig)) != "":
            await asyncio.sleep(0.1)
    assert state == ""


# --- take-over -------------------------------------------------------------------------------------------------


async def test_mutating_verbs_are_refused_while_a_person_holds_control(env: RigsEnv, rig: str, rec: Recorder) -> None:
    person = await env.srv.new_user_token(env.ws, "member", name="person")
    async with RpcClient(env.srv.ws_url, person) as them:
        await them.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        try:
            e = await fails(env, rig, action="left_click", coordinate=[100, 100])
            assert e.code == "refused" and "control" in e.message
            assert (await use(env, rig, action="screenshot"))["display"]["width"] == 1280  # observations stay
            await use(env, rig, them, action="left_click", coordinate=[100, 150])  # the person drives
        finally:
            await them.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
    assert [e.root for e in await rec.until(1, "ButtonPress")] == [(100, 150)]
    log = await env.call("rig.actionLog", rigId=rig)
    assert any(r["verb"] == "left_click" and r["outcome"] == "refused" for r in log)


async def test_the_action_log_never_holds_typed_or_clipboard_text(env: RigsEnv, rig: str, rec: Recorder) -> None:
    await use(env, rig, action="type", text="typed-secret-41d2")
    await use(env, rig, action="clipboard_write", text="clip-secret-9e0f")
    log = await env.call("rig.actionLog", rigId=rig)
    assert "typed-secret-41d2" not in str(log) and "clip-secret-9e0f" not in str(log)
    typed = [r for r in log if r["verb"] == "type"][-1]
    assert typed["details"]["text"]["length"] == len("typed-secret-41d2")


async def test_the_desktop_listens_on_no_port(env: RigsEnv, rig: str) -> None:
    # Neither X11 nor the VNC frames are on TCP: nothing of the desktop is forwarded to the host.
    assert (await env.call("rig.ports", rigId=rig))["ports"] == []
    assert "Listening for VNC connections on /tmp/" in (await env.manager.get_live(env.ws, rig)).handle.desktop().log()


async def test_closing_the_rig_ends_its_desktop(env: RigsEnv) -> None:
    space = await env.new_space("closing desktop")
    rig = await env.ready(await env.call("rig.open", space_id=space, surface="computer"))
    desktop = (await env.manager.get_live(env.ws, rig)).handle.desktop()
    await env.call("rig_close", rigId=rig)
    assert (await env.status(rig))["status"] == "closed"
    with pytest.raises(Exception, match="closed"):
        await desktop.screenshot(1280, 800)
    e = await fails(env, rig, action="screenshot")
    assert e.code in ("not_found", "refused", "unavailable")
