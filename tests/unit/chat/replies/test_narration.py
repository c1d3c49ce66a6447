"""The provisioning narration: its texts and the four conditions."""

from __future__ import annotations

import itertools

from hangar.chat.narration import NarrationState, may_narrate, narrate, provisioning_text, still_in_flight

OPEN = NarrationState(renders_cards=True, streaming_available=True, request_in_flight=True, turn_card_open=False)


def test_texts_of_every_state() -> None:
    assert provisioning_text("provisioning", "repo", "acme/web") == "Cloning acme/web..."
    assert provisioning_text("provisioning", "prCheckout", "acme/web") == "Checking out the pull request in acme/web..."
    assert provisioning_text("provisioning", "script", "acme/web") == "Running the setup script for acme/web..."
    assert provisioning_text("provisioning", "agent", "Ada") == "Setting up Ada..."
    assert provisioning_text("provisioning") == "Preparing the workspace..."
    assert provisioning_text("ready") == "Starting the agent..."
    failed = provisioning_text("failed", link="https://h.example/open/workspaces/w/spaces/s")
    assert failed.startswith("Workspace setup failed") and "https://h.example/open/workspaces/w/spaces/s" in failed
    assert provisioning_text("cancelled").startswith("Workspace setup was stopped")
    assert "Hangar" in provisioning_text("cancelled")


def test_narration_needs_all_four_conditions() -> None:
    for flags in itertools.product((True, False), repeat=4):
        cards, streaming, in_flight, turn_card = flags
        state = NarrationState(cards, streaming, in_flight, turn_card)
        expected = cards and streaming and in_flight and not turn_card
        assert may_narrate(state) is expected
        assert (narrate(state, "provisioning", "repo", "r") is not None) is expected


def test_ready_without_an_open_card_stays_quiet() -> None:
    warm = NarrationState(True, True, True, False, card_open=False)
    assert narrate(warm, "ready") is None
    assert narrate(OPEN, "ready") == "Starting the agent..."


def test_a_request_stays_in_flight_until_a_turn_starts_or_setup_fails() -> None:
    assert still_in_flight(True, provisioning_state="provisioning") is True
    assert still_in_flight(True, provisioning_state="ready") is True
    assert still_in_flight(True, turn_started=True) is False
    assert still_in_flight(True, provisioning_state="failed") is False
    assert still_in_flight(True, provisioning_state="cancelled") is False
    assert still_in_flight(False, provisioning_state="ready") is False
