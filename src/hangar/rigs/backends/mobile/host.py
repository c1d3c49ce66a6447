"""What a phone rig runs on, decided at each open from the server settings (read afresh: another process may
change them) and the host: a device or emulator already running that adb reaches (``rigs.mobile.device``: its
serial, or ``host:port`` for adb over TCP), else an emulator the vendor SDK boots for the rig
(``rigs.mobile.avd``: an AVD name; the SDK is ``ANDROID_SDK_ROOT`` in the server's environment, and the emulator
needs a usable accelerator, which its own ``-accel-check`` says, within a deadline).

``why_not`` names what is missing and how to provide it, in one message, for ``rig.open``'s ``unavailable``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.core.settings import SettingSpec
from hangar.errors import InvalidArgs, Unavailable
from hangar.rigs.backends.mobile.adb import adb_path, run_program

DEVICE_SETTING = "rigs.mobile.device"
AVD_SETTING = "rigs.mobile.avd"
ACCEL_CHECK_TIMEOUT_S = 20.0  # the emulator's accelerator check; a hung check counts as no accelerator
_SERIAL = re.compile(r"^[A-Za-z0-9\[][A-Za-z0-9._:\[\]-]{0,127}$")  # never "-": adb would read an option
_AVD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

HOW_DEVICE = (
    f"set the server setting {DEVICE_SETTING} to the serial (or host:port) of a running device or emulator adb "
    "reaches (hangar admin setting rigs.mobile.device '\"emulator-5554\"')"
)
HOW_EMULATOR = (
    "install the Android SDK's emulator and a system image, create an AVD, start the server with "
    f"ANDROID_SDK_ROOT naming the SDK and set {AVD_SETTING} to the AVD's name"
)


def _checked(key: str, rx: re.Pattern[str], what: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is None:
            return None  # cleared
        if not isinstance(value, str) or not rx.match(value):
            raise InvalidArgs(f"{key} must be {what} (or null to clear it)", field=key)
        return value

    return check


DEVICE_SPEC = SettingSpec(
    DEVICE_SETTING,
    "The device or emulator phone rigs drive: its adb serial, or host:port for adb over TCP.",
    _checked(DEVICE_SETTING, _SERIAL, "an adb serial or host:port (letters, digits, . _ : - [ ])"),
)
AVD_SPEC = SettingSpec(
    AVD_SETTING,
    "The Android virtual device the vendor SDK's emulator boots for each phone rig (ANDROID_SDK_ROOT).",
    _checked(AVD_SETTING, _AVD, "an AVD name (letters, digits, . _ -)"),
)


@dataclass(frozen=True)
class Target:
    """Where a new phone rig runs: a running ``device`` (its serial), or an emulator of ``avd`` from ``emulator``."""

    device: str | None = None
    avd: str | None = None
    emulator: Path | None = None


def sdk_root() -> Path | None:
    value = os.environ.get("ANDROID_SDK_ROOT") or os.environ.get("ANDROID_HOME")
    return Path(value) if value else None


async def _accelerator(emulator: Path) -> str | None:
    """None when the emulator reports a usable accelerator; else what it said (or that it hung)."""
    if not await asyncio.to_thread(os.path.exists, "/dev/kvm"):
        return "this host has no /dev/kvm (the emulator needs KVM: enable virtualisation, load the kvm module)"
    try:
        ran = await run_program(
            str(emulator), ["-accel-check"], timeout_s=ACCEL_CHECK_TIMEOUT_S, what="the emulator's accelerator check"
        )
    except Unavailable as exc:
        return exc.message  # a check that hangs counts as no accelerator
    if ran.code == 0:
        return None
    said = (ran.stdout + ran.stderr).decode("utf-8", "replace").strip().splitlines()
    return f"the emulator has no usable accelerator ({said[-1][:200] if said else f'exit {ran.code}'})"


async def choose(get_setting: Callable[[str], Any]) -> Target | str:
    """The target of a new phone rig, or one message naming what is missing and how to provide it."""
    if adb_path() is None:
        return "adb is not installed on this host: install Debian's package adb (make apt-run-deps does)"
    device = await get_setting(DEVICE_SETTING)
    if isinstance(device, str) and device:
        return Target(device=device)
    avd = await get_setting(AVD_SETTING)
    sdk = sdk_root()
    if not isinstance(avd, str) or not avd:
        sdk_said = f"the Android SDK at {sdk}" if sdk else "no Android SDK (ANDROID_SDK_ROOT is not set)"
        return f"no device or emulator is configured ({sdk_said}, no {AVD_SETTING}): {HOW_DEVICE}; or {HOW_EMULATOR}"
    if sdk is None:
        return f"{AVD_SETTING} names {avd!r} but the server's environment sets no ANDROID_SDK_ROOT: {HOW_EMULATOR}"
    emulator = sdk / "emulator" / "emulator"
    if not await asyncio.to_thread(os.access, emulator, os.X_OK):
        return (
            f"the Android SDK at {sdk} has no emulator ({emulator}): install it with the SDK's sdkmanager "
            f'("emulator" and a system image), or {HOW_DEVICE}'
        )
    missing = await _accelerator(emulator)
    if missing is not None:
        return f"{missing}; {HOW_DEVICE}"
    return Target(avd=avd, emulator=emulator)
