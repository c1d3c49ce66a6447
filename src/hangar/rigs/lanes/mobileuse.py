"""``mobile_use`` on a phone rig: each parsed verb (``actions.device``) carried out over adb on the rig's phone
(``backends.mobile.PhoneRig``), answered and written to the rig's action log.

Rules held here:
- nothing runs through a host shell: adb gets argv lists, and what the device's shell reads is quoted word by word
  (``backends.mobile.words``), so a ``shell`` argument with spaces, quotes or ``;`` arrives as one argument;
- ``type`` goes through ``input text`` escaped for it (spaces as ``%s``; newlines and tabs as their keys); text
  it cannot type is refused naming ``action.text``;
- key aliases become Android keycodes; ``KEYCODE_*`` names pass as they are;
- ``install_apk`` reads only a real file inside the rig's worktree or ``<dataDir>/rigs/apks`` (``apk``);
- a screenshot is the device's PNG, with its size and the display's;
- what the device hands back (the UI hierarchy, shell output) comes fenced as untrusted data;
- the action log keeps what was done, never what was typed or the shell's arguments (length and SHA-256 only).
"""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from hangar.core.principal import Principal
from hangar.errors import HangarError, Refused, Unavailable
from hangar.rigs import hooks
from hangar.rigs.actions import base as act
from hangar.rigs.actions import device as verbs
from hangar.rigs.actions.base import ParsedAction
from hangar.rigs.backends.mobile import PhoneRig, apk
from hangar.rigs.backends.mobile.adb import Ran
from hangar.rigs.backends.mobile.words import shell_line, typing_commands
from hangar.rigs.engines.pixels import image_size
from hangar.rigs.errors import ControlHeld
from hangar.rigs.lanes.fence import fence
from hangar.rigs.lifecycle.manager import RigManager

VERB_TIMEOUT_S = 330.0  # one verb's bound (an install of a large package is the longest)
MAX_OUTPUT_CHARS = 1 << 20  # per stream of `shell`: the rest is cut and flagged
# The spec's key aliases as Android keycodes (android.view.KeyEvent).
KEYCODES: dict[str, int] = {
    "home": 3,
    "back": 4,
    "volume_up": 24,
    "volume_down": 25,
    "power": 26,
    "tab": 61,
    "enter": 66,
    "backspace": 67,  # KEYCODE_DEL deletes backwards
    "menu": 82,
    "search": 84,
    "escape": 111,
    "delete": 112,  # KEYCODE_FORWARD_DEL
    "recents": 187,  # KEYCODE_APP_SWITCH
}
assert set(KEYCODES) == set(verbs.MOBILE_KEY_ALIASES), "every alias has a keycode"
_COMPONENT = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*/[A-Za-z0-9_.$]+$")

Result = dict[str, Any]
Details = dict[str, Any]


def _ok(ran: Ran, what: str) -> Ran:
    if ran.code != 0:
        raise Unavailable(f"{what}: the device answered with exit code {ran.code}: {ran.said()}")
    return ran


def _success(ran: Ran, what: str) -> None:
    """``pm`` (and ``adb install``, after its progress lines) says ``Success`` when it did it, whatever the exit
    code; anything else is the device declining, in its own words."""
    if ran.code != 0 or not any(line.startswith("Success") for line in ran.text().splitlines()):
        failed = [line for line in (ran.text() + "\n" + ran.stderr.decode("utf-8", "replace")).splitlines() if line]
        said = next((line for line in failed if "Fail" in line or "rror" in line), ran.said())
        raise Refused(f"{what}: the device did not do it: {said[:200]}")


async def _tap(rig: PhoneRig, p: act.Point) -> tuple[Result, Details]:
    x, y = p.coordinate
    _ok(await rig.adb.shell([["input", "tap", str(x), str(y)]]), "tap")
    return {"tapped": [x, y]}, {"coordinate": [x, y]}


async def _swipe(rig: PhoneRig, p: verbs.Swipe) -> tuple[Result, Details]:
    (x1, y1), (x2, y2) = p.start_coordinate, p.coordinate
    argv = ["input", "swipe", *(str(v) for v in (x1, y1, x2, y2, p.duration_ms))]
    _ok(await rig.adb.shell([argv]), "swipe")
    moved = {"start": [x1, y1], "end": [x2, y2], "durationMs": p.duration_ms}
    return {"swiped": moved}, moved


async def _type(rig: PhoneRig, p: verbs.TypeText) -> tuple[Result, Details]:
    _ok(await rig.adb.shell(typing_commands(p.text)), "type")
    return {"typed": len(p.text)}, {"text": hooks.sensitive(p.text)}


async def _key(rig: PhoneRig, p: verbs.MobileKey) -> tuple[Result, Details]:
    code = str(KEYCODES[p.key]) if p.key in KEYCODES else p.key
    _ok(await rig.adb.shell([["input", "keyevent", code]]), "key")
    return {"key": p.key, "keycode": code}, {"key": p.key}


async def _screenshot(rig: PhoneRig, _p: act.NoParams) -> tuple[Result, Details]:
    data = _ok(await rig.adb.exec_out(["screencap", "-p"]), "screenshot").stdout
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Unavailable("screenshot: the device's screencap gave no PNG")
    width, height = image_size(data)
    image = {"mime": "image/png", "base64": base64.b64encode(data).decode(), "width": width, "height": height}
    return {"image": image, "display": {"width": width, "height": height}}, {
        "width": width,
        "height": height,
        "bytes": len(data),
    }


async def _ui_dump(rig: PhoneRig, _p: act.NoParams) -> tuple[Result, Details]:
    where = f"/data/local/tmp/hangar-ui-{secrets.token_hex(6)}.xml"
    ran = await rig.adb.shell([["uiautomator", "dump", where], ["cat", where], ["rm", "-f", where]])
    text = ran.text()
    start = min((i for i in (text.find("<?xml"), text.find("<hierarchy")) if i >= 0), default=-1)
    if start < 0:
        raise Unavailable(f"ui_dump: uiautomator gave no hierarchy: {ran.said()}")
    xml = text[start:]
    return {"kind": "uiautomator", "content": fence(xml, "ui hierarchy"), "untrusted": True}, {"chars": len(xml)}


async def _install(rig: PhoneRig, p: verbs.InstallApk) -> tuple[Result, Details]:
    staged = await asyncio.to_thread(apk.stage, p.path, rig.spec.worktree, rig.apks_dir, rig.staging_dir)
    try:
        ran = await rig.adb.install(str(staged.path))
    finally:
        await asyncio.to_thread(staged.path.unlink, True)
    _success(ran, "install_apk")
    about = {"path": staged.source, "bytes": staged.size, "sha256": staged.sha256}
    return {"installed": about}, about


async def _start_app(rig: PhoneRig, p: verbs.AndroidApp) -> tuple[Result, Details]:
    resolve = ["cmd", "package", "resolve-activity", "--brief"]
    launcher = ["-a", "android.intent.action.MAIN", "-c", "android.intent.category.LAUNCHER", p.package]
    found = (await rig.adb.shell([[*resolve, *launcher]])).text().strip().splitlines()
    component = found[-1].strip() if found else ""
    if not _COMPONENT.match(component) or not component.startswith(p.package + "/"):
        raise Refused(f"start_app: {p.package} has no launcher activity on the device (is it installed?)")
    _ok(await rig.adb.shell([["am", "start", "-n", component]]), "start_app")
    return {"started": component}, {"package": p.package, "component": component}


async def _stop_app(rig: PhoneRig, p: verbs.AndroidApp) -> tuple[Result, Details]:
    _ok(await rig.adb.shell([["am", "force-stop", p.package]]), "stop_app")
    return {"stopped": p.package}, {"package": p.package}


async def _clear(rig: PhoneRig, p: verbs.AndroidApp) -> tuple[Result, Details]:
    _success(await rig.adb.shell([["pm", "clear", p.package]]), "clear_app_data")
    return {"cleared": p.package}, {"package": p.package}


async def _uninstall(rig: PhoneRig, p: verbs.AndroidApp) -> tuple[Result, Details]:
    _success(await rig.adb.shell([["pm", "uninstall", p.package]]), "uninstall_app")
    return {"uninstalled": p.package}, {"package": p.package}


async def _open_url(rig: PhoneRig, p: verbs.OpenUrl) -> tuple[Result, Details]:
    argv = ["am", "start", "-a", "android.intent.action.VIEW", "-d", p.url]
    _ok(await rig.adb.shell([argv]), "open_url")
    # The scheme and host say where the phone went; the full URL may carry tokens, so only its digest is kept.
    parts = urlsplit(p.url)
    return {"opened": p.url}, {"scheme": parts.scheme, "host": parts.hostname or "", "url": hooks.sensitive(p.url)}


def _clip(data: bytes) -> tuple[str, bool]:
    text = data.decode("utf-8", "replace")
    return (text[:MAX_OUTPUT_CHARS], True) if len(text) > MAX_OUTPUT_CHARS else (text, False)


async def _shell(rig: PhoneRig, p: verbs.Shell) -> tuple[Result, Details]:
    shell_line(p.argv)  # refused when too long, before anything reaches the phone
    ran = await rig.adb.shell([p.argv])
    stdout, cut_out = _clip(ran.stdout)
    stderr, cut_err = _clip(ran.stderr)
    result = {
        "exitCode": ran.code,
        "stdout": fence(stdout, "device output"),
        "stderr": fence(stderr, "device output"),
        "untrusted": True,
        "truncated": cut_out or cut_err or ran.truncated,
    }
    details = {"argv": hooks.sensitive("\0".join(p.argv)), "program": p.argv[0][:64], "exitCode": ran.code}
    return result, details


Handler = Callable[[PhoneRig, Any], Awaitable[tuple[Result, Details]]]
HANDLERS: dict[str, Handler] = {
    "tap": _tap,
    "swipe": _swipe,
    "type": _type,
    "key": _key,
    "screenshot": _screenshot,
    "ui_dump": _ui_dump,
    "install_apk": _install,
    "start_app": _start_app,
    "stop_app": _stop_app,
    "clear_app_data": _clear,
    "uninstall_app": _uninstall,
    "open_url": _open_url,
    "shell": _shell,
}
assert set(HANDLERS) == set(verbs.MOBILE_USE.verbs), "every mobile verb has a handler"


async def use_mobile(mgr: RigManager, ws: str, rig_id: str, parsed: ParsedAction, principal: Principal) -> Result:
    """Carry out one verb on the rig's phone; the result with the phone's ``serial``, or the error it raised
    (logged with its outcome either way)."""
    verb = parsed.verb.name
    what = f"mobile_use {verb}"
    details: Details = {}
    outcome = "error"
    try:
        async with mgr.acting(ws, rig_id, principal, mutating=not parsed.observation, what=what) as (_, handle):
            if not isinstance(handle, PhoneRig):
                raise Refused(f"rig {rig_id} is not a phone rig")
            try:
                async with asyncio.timeout(VERB_TIMEOUT_S):
                    result, details = await HANDLERS[verb](handle, parsed.params)
            except TimeoutError:
                raise Unavailable(f"{what}: the phone did not answer in time") from None
        outcome = "ok"
        return {**result, "serial": handle.serial}
    except ControlHeld:
        outcome = "refused"
        raise
    except HangarError as exc:
        outcome = "refused" if isinstance(exc, Refused) else "error"
        details = {**details, "error": exc.code}
        raise
    finally:
        if parsed.observation:
            await mgr.log_observation(ws, rig_id, principal, verb, details, outcome)
        else:
            await mgr.log_action(ws, rig_id, principal, verb, details, outcome)
