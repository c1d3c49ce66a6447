"""Phone rigs (surface ``mobile``, backend ``mobile-emulator``) through a real server, the RPC client and Debian's
adb, against the test phone speaking adbd's wire protocol: every ``mobile_use`` verb, with what the phone was told
read back from its records."""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from pathlib import Path

import pytest

from hangar.rigs.backends.mobile import words
from hangar.rigs.lanes.fence import unfence
from tests.integration.mobile_env import PhoneEnv, phone_server
from tests.integration.test_workspace_repos import make_repo
from tests.peers.adb_device import SCREEN, phone_apk

APP = "com.example.app"


def typed(env: PhoneEnv) -> str:
    """What reached the phone's focused field: ``input text`` runs and the Enter and Tab keys."""
    keys = {"KEYCODE_ENTER": "\n", "KEYCODE_TAB": "\t"}
    out = []
    for event in env.phone.events:
        if event[0] == "text":
            out.append(event[1])
        elif event[0] == "key" and event[1] in keys:
            out.append(keys[event[1]])
    return "".join(out)


async def installed(env: PhoneEnv, rig: str, name: str = "app.apk") -> str:
    env.apks.mkdir(parents=True, exist_ok=True)
    data = phone_apk(APP)
    (env.apks / name).write_bytes(data)
    result = await env.act(rig, action="install_apk", path=str(env.apks / name))
    assert result["installed"]["sha256"] == hashlib.sha256(data).hexdigest(), result
    return hashlib.sha256(data).hexdigest()


async def test_a_phone_rig_opens_on_the_configured_device_and_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        row = await env.status(rig)
        assert (row["surface"], row["backend"], row["status"]) == ("mobile", "mobile-emulator", "ready"), row
        assert env.phone.connections >= 1  # adb connect reached the phone
        disks = env.srv.data_dir / "disks"
        assert not disks.exists() or rig not in str(list(disks.rglob("*")))  # no disk is made for a phone's home
        # One conversation reuses its phone rig.
        again = await env.call("rig.open", space_id=env.space, surface="mobile")
        assert again["rigId"] == rig
        # A phone rig has no host shell and no egress gate to grant through.
        e = await env.fails("rig.exec", rigId=rig, command="id")
        assert e.code == "refused" and "terminal" in e.message
        e = await env.fails("rig.grantHosts", rigId=rig, hosts=["example.test"])
        assert e.code == "refused" and "not enforced" in e.message
        await env.call("rig_close", rigId=rig)
        assert (await env.status(rig))["status"] == "closed"


async def test_taps_swipes_keys_and_typing_reach_the_phone(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        assert await env.act(rig, action="tap", coordinate=[10, 20]) == {"tapped": [10, 20], "serial": env.phone.serial}
        await env.act(rig, action="swipe", start_coordinate=[1, 2], coordinate=[300, 400], duration_ms=250)
        assert env.phone.events[:2] == [("tap", "10", "20"), ("swipe", "1", "2", "300", "400", "250")]

        # Aliases become keycodes; KEYCODE_* names pass as they are.
        for key, code in (("back", "4"), ("home", "3"), ("recents", "187"), ("delete", "112"), ("backspace", "67")):
            assert (await env.act(rig, action="key", key=key))["keycode"] == code
            assert env.phone.commands[-1] == ["input", "keyevent", code]
        await env.act(rig, action="key", key="KEYCODE_CAMERA")
        assert env.phone.commands[-1] == ["input", "keyevent", "KEYCODE_CAMERA"]

        # Text the device's shell would read, and `input text`'s own %s, arrive literally.
        env.phone.events.clear()
        text = 'a b  it\'s "q" $(id) `x` ; rm -rf / & 100%s off\\n|*?~#\nnext\tcol'
        assert (await env.act(rig, action="type", text=text))["typed"] == len(text)
        assert typed(env) == text
        assert env.phone.faults == []
        # A long text goes in several calls, all of it.
        env.phone.events.clear()
        long_text = "x'y " * 3000
        await env.act(rig, action="type", text=long_text)
        assert typed(env) == long_text and env.phone.faults == []

        # The action log keeps that something was typed, never what.
        log = await env.call("rig.actionLog", rigId=rig)
        types = [e for e in log if e["verb"] == "type"]
        assert types and all("it's" not in str(e["details"]) for e in types), types
        assert types[0]["details"]["text"]["length"] == len(text)


async def test_screenshot_and_ui_dump_come_back_from_the_phone(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        shot = await env.act(rig, action="screenshot")
        data = base64.b64decode(shot["image"]["base64"])
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and shot["image"]["mime"] == "image/png"
        assert struct.unpack(">II", data[16:24]) == SCREEN
        assert (shot["image"]["width"], shot["image"]["height"]) == SCREEN
        assert shot["display"] == {"width": SCREEN[0], "height": SCREEN[1]}
        assert env.phone.services[-1] == "exec:screencap -p"

        dump = await env.act(rig, action="ui_dump")
        assert dump["untrusted"] is True and "Hello phone" in unfence(dump["content"])
        assert unfence(dump["content"]).startswith("<?xml")
        assert env.phone.files == {}  # the dump file was removed from the phone


async def test_app_verbs_install_start_stop_clear_uninstall(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        sha = await installed(env, rig)
        assert env.phone.installed[APP].sha256 == sha
        assert await env.act(rig, action="start_app", package=APP) == {
            "started": f"{APP}/.MainActivity",
            "serial": env.phone.serial,
        }
        assert env.phone.started == [f"{APP}/.MainActivity"]
        await env.act(rig, action="stop_app", package=APP)
        assert env.phone.stopped == [APP]
        await env.act(rig, action="clear_app_data", package=APP)
        assert env.phone.installed[APP].data_cleared == 1
        url = "https://example.test/a?b=1&c='2' $(id)"
        await env.act(rig, action="open_url", url=url.replace(" ", "%20"))
        assert env.phone.events[-1] == ("view", url.replace(" ", "%20"))
        await env.act(rig, action="uninstall_app", package=APP)
        assert APP not in env.phone.installed
        # What the phone says it could not do is refused, naming the verb.
        for action in ("uninstall_app", "clear_app_data", "start_app"):
            e = await env.fails("mobile_use", rigId=rig, action={"action": action, "package": APP})
            assert e.code == "refused" and e.message.startswith(action), e.message
        assert env.phone.faults == []


async def test_shell_argv_arrives_word_for_word_and_never_through_a_host_shell(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = tmp_path / "host-marker"
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        argv = ["echo", "a b", "it's", 'say "hi"', f"x; touch {marker}", "$(id)", "`id`", "-n", "", "%s"]
        ran = await env.act(rig, action="shell", argv=argv)
        assert env.phone.commands[-1] == argv  # one literal argument each, as the device's shell read them
        assert env.phone.faults == []
        assert ran["exitCode"] == 0 and ran["untrusted"] is True
        assert unfence(ran["stdout"]) == " ".join(argv[1:]) + "\n"
        assert not marker.exists()
        # A command line of at most MAX_SHELL_LINE characters once quoted reaches the phone; one more is refused.
        room = words.MAX_SHELL_LINE - len("echo ")
        ran = await env.act(rig, action="shell", argv=["echo", "y" * room])
        assert ran["exitCode"] == 0 and env.phone.commands[-1] == ["echo", "y" * room]
        e = await env.fails("mobile_use", rigId=rig, action={"action": "shell", "argv": ["echo", "y" * (room + 1)]})
        assert e.code == "invalid_args" and e.message.startswith("action.argv"), e.message
        assert env.phone.commands[-1] == ["echo", "y" * room]  # nothing more reached it
        # A first word that looks like an adb option is still the device's program.
        ran = await env.act(rig, action="shell", argv=["-x"])
        assert env.phone.commands[-1] == ["-x"] and ran["exitCode"] == 127
        assert "not found" in unfence(ran["stderr"])
        log = await env.call("rig.actionLog", rigId=rig)
        assert "it's" not in str(log)  # the arguments are kept as a length and a digest only


async def test_bad_input_is_refused_naming_the_field(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        cases = [
            ({"action": "key", "key": "jump"}, "action.key"),
            ({"action": "key", "key": "KEYCODE_home"}, "action.key"),
            ({"action": "type", "text": "héllo"}, "action.text"),
            ({"action": "type", "text": "bell\a"}, "action.text"),
            ({"action": "tap", "coordinate": [1]}, "action.coordinate"),
            ({"action": "swipe", "start_coordinate": [0, 0], "coordinate": [1, 1], "duration_ms": 49}, "action"),
            ({"action": "swipe", "start_coordinate": [0, 0], "coordinate": [1, 1], "duration_ms": 5001}, "action"),
            ({"action": "shell", "argv": []}, "action.argv"),
            ({"action": "shell", "argv": "ls -l"}, "action.argv"),
            ({"action": "start_app", "package": "com.example;id"}, "action.package"),
            ({"action": "install_apk", "path": "app.zip"}, "action.path"),
            ({"action": "install_apk", "path": "-r.apk"}, "action.path"),
        ]
        for action, field in cases:
            e = await env.fails("mobile_use", rigId=rig, action=action)
            assert e.code == "invalid_args" and e.message.startswith(field), (action, e.message)
        # The swipe bounds themselves are accepted.
        for ms in (50, 5000):
            await env.act(rig, action="swipe", start_coordinate=[0, 0], coordinate=[1, 1], duration_ms=ms)
        assert [e for e in env.phone.events if e[0] == "swipe"][-2:] == [
            ("swipe", "0", "0", "1", "1", "50"),
            ("swipe", "0", "0", "1", "1", "5000"),
        ]

        # install_apk reads only real files inside the worktree or <dataDir>/rigs/apks.
        outside = tmp_path / "outside.apk"
        outside.write_bytes(phone_apk("com.evil.app"))
        e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": str(outside)})
        assert e.code == "invalid_args" and e.message.startswith("action.path") and "outside" in e.message
        e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": "build/app.apk"})
        assert e.code == "invalid_args" and "no worktree" in e.message  # this space has none
        env.apks.mkdir(parents=True, exist_ok=True)
        (env.apks / "link.apk").symlink_to(outside)
        (env.apks / "dir").symlink_to(tmp_path)
        for name in ("link.apk", "dir/outside.apk", "../apks/link.apk"):
            e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": f"{env.apks}/{name}"})
            assert e.code == "refused" and e.message.startswith("action.path"), (name, e.message)
        (env.apks / "folder.apk").mkdir()
        os.mkfifo(env.apks / "fifo.apk")
        for name in ("folder.apk", "fifo.apk"):
            e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": f"{env.apks}/{name}"})
            assert e.code == "refused" and "not a regular file" in e.message, e.message
        e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": f"{env.apks}/none.apk"})
        assert e.code == "not_found" and e.message.startswith("action.path")
        assert env.phone.installed == {}  # nothing reached the phone
        assert not any((env.srv.data_dir / "rigs" / "mobile" / "staging").iterdir())  # no copy left behind


async def test_package_install_guardrail_and_take_over(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        rig = await env.open_phone()
        await env.call("guardrails.set", askFirst=["packageInstall"])
        e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": f"{env.apks}/a.apk"})
        assert e.code == "refused" and "packageInstall" in e.message
        await env.call("guardrails.set", askFirst=[])
        await env.call("guardrails.set", space_id=env.space, readOnly=True)
        for action in ({"action": "install_apk", "path": f"{env.apks}/a.apk"}, {"action": "tap", "coordinate": [1, 1]}):
            e = await env.fails("mobile_use", rigId=rig, action=action)
            assert e.code == "refused" and "read-only" in e.message, e.message
        await env.call("guardrails.set", space_id=env.space, readOnly=False)
        assert env.phone.installed == {} and env.phone.events == []

        # A person holding control: others' mutating verbs are refused, observations stay allowed.
        member = await env.srv.new_user_token(env.ws, "admin", name="holder")
        from tests.support.rpc import RpcClient

        async with RpcClient(env.srv.ws_url, member) as holder:
            await holder.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
            e = await env.fails("mobile_use", rigId=rig, action={"action": "tap", "coordinate": [5, 5]})
            assert e.code == "refused" and "control" in e.message
            assert (await env.act(rig, action="screenshot"))["display"]["width"] == SCREEN[0]
            await holder.call(
                "mobile_use", workspace_id=env.ws, rigId=rig, action={"action": "tap", "coordinate": [6, 6]}
            )
        assert [e for e in env.phone.events if e[0] == "tap"] == [("tap", "6", "6")]


async def test_install_from_the_space_worktree_reads_no_symlink(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "src", "app")
    async with phone_server(monkeypatch) as env:
        await env.call("repos.register", path=str(repo))
        space = await env.call("spaces.create", title="with a worktree", repoIds=[repo.name])
        assert space["provisioning"]["state"] == "ready", space
        worktree = Path(space["folder"]) / "app"
        rig = await env.open_phone(str(space["id"]))
        # What a build inside the space leaves in its worktree (the guests write it; the server only reads it).
        (worktree / "build").mkdir()
        (worktree / "build" / "app.apk").write_bytes(phone_apk(APP))
        for path in ("build/app.apk", "/home/rig/worktree/build/app.apk", str(worktree / "build" / "app.apk")):
            result = await env.act(rig, action="install_apk", path=path)
            assert (
                result["installed"]["path"] == path and env.phone.installed[APP].sha256 == result["installed"]["sha256"]
            )
            del env.phone.installed[APP]
        # A symlink the guests planted, to a package elsewhere on the host or to the data directory's, is not read.
        env.apks.mkdir(parents=True, exist_ok=True)
        (env.apks / "ops.apk").write_bytes(phone_apk("com.example.ops"))
        (worktree / "build" / "planted.apk").symlink_to(env.apks / "ops.apk")
        (worktree / "linked").symlink_to(env.apks)
        for path in (
            "build/planted.apk",
            "linked/ops.apk",
            "../app/build/planted.apk",
            "build/../../../rigs/apks/ops.apk",
        ):
            e = await env.fails("mobile_use", rigId=rig, action={"action": "install_apk", "path": path})
            assert e.code == "refused" and e.message.startswith("action.path"), (path, e.message)
        assert env.phone.installed == {}
