"""``mobile_use`` (a mobile OS over a debug bridge) and ``sim_use`` (a platform simulator through an
automation bridge). Neither runs a host shell: ``shell`` and ``spawn`` take argv lists executed inside the
device. Install paths are confined to the rig worktree and the server data directory when they run; here
they are checked for shape (no NUL, not flag-like, the right suffix)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictInt, StrictStr, field_validator

from hangar.rigs.actions.base import ActionModel, Coordinate, NoParams, Point, Text, Verb, VerbTable, argv_item
from hangar.rigs.model import Surface

_ANDROID_PACKAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
_BUNDLE_ID = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
_KEYCODE = re.compile(r"^KEYCODE_[A-Z0-9_]+$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")

MOBILE_KEY_ALIASES: tuple[str, ...] = (
    "back",
    "home",
    "recents",
    "enter",
    "delete",
    "backspace",
    "tab",
    "escape",
    "search",
    "menu",
    "volume_up",
    "volume_down",
    "power",
)
SIM_NAMED_KEYS: tuple[str, ...] = ("enter", "backspace", "tab", "escape", "up", "down", "left", "right")

Argv = Annotated[list[Annotated[StrictStr, AfterValidator(argv_item)]], Field(min_length=1, max_length=256)]


def _install_path(suffix: str) -> AfterValidator:
    def check(v: str) -> str:
        if "\x00" in v:
            raise ValueError("must not contain NUL")
        if v.startswith("-"):
            raise ValueError("must be a path, not a flag")
        if not v.rstrip("/").endswith(suffix):
            raise ValueError(f"must name a {suffix} path")
        return v

    return AfterValidator(check)


def _pattern(rx: re.Pattern[str], what: str) -> AfterValidator:
    def check(v: str) -> str:
        if not rx.match(v):
            raise ValueError(f"must be {what}")
        return v

    return AfterValidator(check)


PathStr = Annotated[StrictStr, Field(min_length=1, max_length=4096)]
AndroidPackage = Annotated[StrictStr, _pattern(_ANDROID_PACKAGE, "an Android package name like com.example.app")]
BundleId = Annotated[StrictStr, _pattern(_BUNDLE_ID, "a bundle identifier like com.example.App")]
Url = Annotated[StrictStr, Field(max_length=8192), _pattern(_URL, "an absolute URL with a scheme")]


class Swipe(ActionModel):
    start_coordinate: Coordinate
    coordinate: Coordinate
    duration_ms: Annotated[StrictInt, Field(ge=50, le=5000)] = 300  # 50 to 5000 ms


class TypeText(ActionModel):
    text: Text


class MobileKey(ActionModel):
    key: StrictStr

    @field_validator("key")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in MOBILE_KEY_ALIASES and not _KEYCODE.match(v):
            raise ValueError(f"must be one of {', '.join(MOBILE_KEY_ALIASES)} or a KEYCODE_* name")
        return v


class SimKey(ActionModel):
    key: StrictStr
    modifiers: Annotated[list[Literal["command", "control", "option", "shift"]], Field(max_length=4)] = Field(
        default_factory=list
    )

    @field_validator("key")
    @classmethod
    def _known(cls, v: str) -> str:
        if v in SIM_NAMED_KEYS or (len(v) == 1 and v.isprintable()):
            return v
        raise ValueError(f"must be one of {', '.join(SIM_NAMED_KEYS)} or one printable character")

    @field_validator("modifiers")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("must not repeat a modifier")
        return v


class InstallApk(ActionModel):
    path: Annotated[PathStr, _install_path(".apk")]


class InstallApp(ActionModel):
    path: Annotated[PathStr, _install_path(".app")]


class AndroidApp(ActionModel):
    package: AndroidPackage


class SimApp(ActionModel):
    bundle_id: BundleId


class OpenUrl(ActionModel):
    url: Url


class Shell(ActionModel):
    argv: Argv


MOBILE_USE = VerbTable.of(
    "mobile_use",
    Surface.mobile,
    "the mobile-emulator backend (the emulator vendor's SDK and system images)",
    Verb("tap", Point),
    Verb("swipe", Swipe),
    Verb("type", TypeText),
    Verb("key", MobileKey),
    Verb("screenshot", NoParams, observation=True),
    Verb("ui_dump", NoParams, observation=True),
    Verb("install_apk", InstallApk),
    Verb("start_app", AndroidApp),
    Verb("stop_app", AndroidApp),
    Verb("clear_app_data", AndroidApp),
    Verb("uninstall_app", AndroidApp),
    Verb("open_url", OpenUrl),
    Verb("shell", Shell),
)

SIM_USE = VerbTable.of(
    "sim_use",
    Surface.simulator,
    "the mobile-simulator backend (a macOS server with the platform toolchain, a runtime and the pinned bridge)",
    Verb("tap", Point),
    Verb("swipe", Swipe),
    Verb("type", TypeText),
    Verb("key", SimKey),
    Verb("home", NoParams),
    Verb("lock", NoParams),
    Verb("unlock", NoParams),
    Verb("screenshot", NoParams, observation=True),
    Verb("ui_dump", NoParams, observation=True),
    Verb("install_app", InstallApp),
    Verb("start_app", SimApp),
    Verb("stop_app", SimApp),
    Verb("uninstall_app", SimApp),
    Verb("open_url", OpenUrl),
    Verb("spawn", Shell),
)
