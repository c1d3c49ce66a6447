"""Where a phone rig cannot run, ``rig.open`` refuses naming what is missing and how to provide it; a device that
cannot be reached or is driven by another rig fails that rig with the reason; simulator rigs refuse off macOS,
saying what they need. All through a real server and the RPC client."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.backends.mobile import host
from tests.integration.mobile_env import PhoneEnv, phone_server
from tests.support.ports import free_port


def fake_sdk(root: Path, emulator: str | None) -> Path:
    """An SDK folder whose emulator (when given) is a script with ``emulator``'s body."""
    (root / "emulator").mkdir(parents=True)
    if emulator is not None:
        exe = root / "emulator" / "emulator"
        exe.write_text(f"#!/bin/sh\n{emulator}\n")
        exe.chmod(0o755)
    return root


async def open_refused(env: PhoneEnv) -> str:
    e = await env.fails("rig.open", space_id=env.space, surface="mobile")
    assert e.code == "unavailable", e
    assert await env.call("rig_list") == []  # nothing was provisioned
    return e.message


async def test_open_names_what_the_host_lacks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANDROID_SDK_ROOT", raising=False)
    monkeypatch.delenv("ANDROID_HOME", raising=False)
    async with phone_server(monkeypatch, configure=False) as env:
        said = await open_refused(env)
        for needed in (
            "no device or emulator is configured",
            "rigs.mobile.device",
            "ANDROID_SDK_ROOT",
            "rigs.mobile.avd",
        ):
            assert needed in said, said

        await env.setting("rigs.mobile.avd", "Pixel_7")
        said = await open_refused(env)
        assert "Pixel_7" in said and "sets no ANDROID_SDK_ROOT" in said, said

        monkeypatch.setenv("ANDROID_SDK_ROOT", str(fake_sdk(tmp_path / "bare", None)))
        said = await open_refused(env)
        assert "has no emulator" in said and "sdkmanager" in said and "rigs.mobile.device" in said, said

        monkeypatch.setenv(
            "ANDROID_SDK_ROOT", str(fake_sdk(tmp_path / "nokvm", 'echo "KVM is not installed on this machine"; exit 1'))
        )
        said = await open_refused(env)
        if os.path.exists("/dev/kvm"):
            assert "no usable accelerator (KVM is not installed on this machine)" in said, said
        else:
            assert "no /dev/kvm" in said, said
        assert "rigs.mobile.device" in said

        if os.path.exists("/dev/kvm"):  # a check that hangs is no accelerator, said within its deadline
            monkeypatch.setattr(host, "ACCEL_CHECK_TIMEOUT_S", 1.0)
            monkeypatch.setenv("ANDROID_SDK_ROOT", str(fake_sdk(tmp_path / "hangs", "exec sleep 600")))
            said = await open_refused(env)
            assert "accelerator check did not finish within 1 s" in said, said

        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        said = await open_refused(env)
        assert "adb is not installed" in said and "Debian's package adb" in said, said


async def test_settings_are_checked_when_written(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch, configure=False) as env:
        for key, bad in (
            ("rigs.mobile.device", "-H evil"),
            ("rigs.mobile.device", "a b"),
            ("rigs.mobile.device", 5554),
            ("rigs.mobile.avd", "../avd"),
            ("rigs.mobile.avd", "x" * 129),
        ):
            with pytest.raises(InvalidArgs) as e:
                await env.setting(key, bad)
            assert e.value.field == key and key in e.value.message
        await env.setting("rigs.mobile.avd", "x" * 128)  # at the limit
        await env.setting("rigs.mobile.avd", None)  # cleared
        await env.setting("rigs.mobile.device", "[::1]:5555")


async def test_an_unreachable_device_fails_the_rig_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch, configure=False) as env:
        await env.setting("rigs.mobile.device", f"127.0.0.1:{free_port()}")
        e = await env.fails("rig.open", space_id=env.space, surface="mobile")
        assert e.code == "unavailable" and "adb could not connect" in e.message, e.message
        [row] = await env.call("rig_list", includeClosed=True)
        assert row["status"] == "failed" and "adb could not connect" in row["statusDetail"], row


async def test_one_rig_drives_a_device_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch) as env:
        first = await env.open_phone()
        other = await env.new_space("second")
        e = await env.fails("rig.open", space_id=other, surface="mobile")
        assert e.code == "unavailable" and f"driven by rig {first}" in e.message, e.message
        await env.call("rig_close", rigId=first)
        second = await env.open_phone(other)
        assert (await env.status(second))["status"] == "ready"
        await env.act(second, action="tap", coordinate=[3, 4])
        assert env.phone.events == [("tap", "3", "4")]


async def test_simulator_rigs_refuse_off_macos_saying_what_they_need(monkeypatch: pytest.MonkeyPatch) -> None:
    if platform.system() == "Darwin":
        pytest.skip("this host is macOS")
    async with phone_server(monkeypatch, configure=False) as env:
        e = await env.fails("rig.open", space_id=env.space, surface="simulator")
        assert e.code == "unavailable", e
        for needed in (
            "run only on a macOS server",
            "Xcode",
            "runtime",
            "automation bridge",
            "Linux",
            "surface mobile",
        ):
            assert needed in e.message, e.message
        e = await env.fails("sim_use", rigId="r-1", action={"action": "home"})
        assert e.code == "unavailable", e
        assert e.message.startswith("sim_use home: simulator rigs (the mobile-simulator backend) run only on a macOS")
        e = await env.fails("sim_use", rigId="r-1", action={"action": "spawn", "argv": "ls -l"})
        assert e.code == "invalid_args" and e.message.startswith("action.argv")  # a malformed action names its field
        assert await env.call("rig_list", includeClosed=True) == []
