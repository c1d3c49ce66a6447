"""What the setup row of an open card says while a space is being provisioned, and when it may say anything.

The card opens when a mention is accepted (``Working on it...``), before the clone and the first token; the turn
that follows adopts it. Later narration follows ``SpaceProvisioningChanged`` (state, step, detail). Narration needs
all four conditions of ``NarrationState``; a ``ready`` with no open card (a warm space) stays quiet, and
provisioning nobody in chat waits for produces no card. Pure functions: the bridge keeps the state.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCEPTED = "Working on it..."
PREPARING = "Preparing the workspace..."
READY = "Starting the agent..."
THINKING = "Thinking..."

_STEP_TEXTS: dict[str, str] = {
    "repo": "Cloning {detail}...",
    "prCheckout": "Checking out the pull request in {detail}...",
    "script": "Running the setup script for {detail}...",
    "agent": "Setting up {detail}...",
}
# When the event names no repo or agent, the sentence still reads.
_STEP_FALLBACK_DETAIL: dict[str, str] = {
    "repo": "the repository",
    "prCheckout": "the repository",
    "script": "the repository",
    "agent": "the agent",
}


@dataclass(frozen=True)
class NarrationState:
    """What the bridge knows about one space when a provisioning event arrives."""

    renders_cards: bool  # the provider has task cards and they were not dropped on this connection
    streaming_available: bool  # streaming was not refused at call time on this connection
    request_in_flight: bool  # a chat request for this space waits for its turn
    turn_card_open: bool  # a card already reports a turn in this space
    card_open: bool = True  # the card opened when the request was accepted is still open


def product_pointer(link: str | None) -> str:
    """Where the details are: the space's deep link when the server has a public URL, else the product's name."""
    return f"Details are in Hangar: {link}" if link else "Details are in Hangar."


def provisioning_text(state: str, step: str | None = None, detail: str | None = None, link: str | None = None) -> str:
    """The setup row's title for one provisioning state (``provisioning``, ``ready``, ``failed``, ``cancelled``)."""
    if state == "ready":
        return READY
    if state == "failed":
        return f"Workspace setup failed. {product_pointer(link)}"
    if state == "cancelled":
        return f"Workspace setup was stopped. {product_pointer(link)}"
    if step in _STEP_TEXTS:
        return _STEP_TEXTS[step].format(detail=detail or _STEP_FALLBACK_DETAIL[step])
    return PREPARING


def may_narrate(s: NarrationState) -> bool:
    """The spec's four conditions, all required."""
    return s.renders_cards and s.streaming_available and s.request_in_flight and not s.turn_card_open


def narrate(
    s: NarrationState, state: str, step: str | None = None, detail: str | None = None, link: str | None = None
) -> str | None:
    """The text to put on the setup row for this event, or None to stay quiet."""
    if not may_narrate(s) or not s.card_open:
        return None
    return provisioning_text(state, step, detail, link)


def still_in_flight(in_flight: bool, *, turn_started: bool = False, provisioning_state: str | None = None) -> bool:
    """A request stays in flight until a turn starts or setup ends without one (failed, or stopped)."""
    if turn_started or provisioning_state in ("failed", "cancelled"):
        return False
    return in_flight
