"""Booting an engine in a rig: where it listens, what a rig may be handed to trust, which verbs exist."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.actions.browser import BROWSER_USE
from hangar.rigs.backends.engineboot import CA_GUEST_PATH, GUEST_HOME, RELAY_ARGV, check_public_pem, launch_context
from hangar.rigs.engines.launch import AUTOMATION_PORT, ENGINE_PORT, EngineRecipe, LaunchContext, LaunchPlan
from hangar.rigs.lanes.browseruse import HANDLERS

CERT = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def recipe(relay: bool) -> EngineRecipe:
    def plan(_ctx: LaunchContext) -> LaunchPlan:
        return LaunchPlan({}, (), ())

    async def connect(*_args: object) -> object:
        raise AssertionError("not called")

    return EngineRecipe("engine-x", relay, plan, connect)  # type: ignore[arg-type]


def test_engines_behind_the_relay_listen_on_9223_and_the_relay_on_9222() -> None:
    behind = launch_context(recipe(True), (1280, 800), "file:///home.html", None)
    assert (behind.port, behind.home, behind.width, behind.height) == (ENGINE_PORT, GUEST_HOME, 1280, 800)
    assert ("socat", f"TCP-LISTEN:{AUTOMATION_PORT},bind=127.0.0.1,fork,reuseaddr",
                          f"TCP:127.0.0.1:{ENGINE_PORT}") == RELAY_ARGV  # fmt: skip
    direct = launch_context(recipe(False), (1280, 800), "file:///home.html", CA_GUEST_PATH)
    assert direct.port == AUTOMATION_PORT and direct.ca_file == CA_GUEST_PATH


def test_a_rig_is_handed_certificates_only() -> None:
    check_public_pem(CERT)
    for bad in (b"", b"not pem", CERT + b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
                b"-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n"):  # fmt: skip
        with pytest.raises(InvalidArgs) as info:
            check_public_pem(bad)
        assert "trust_pem" in info.value.message


def test_every_browser_verb_has_a_handler() -> None:
    assert set(HANDLERS) == set(BROWSER_USE.verbs)
