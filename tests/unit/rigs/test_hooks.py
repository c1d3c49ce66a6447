"""Which events end rigs: an archived space, a removed member; nothing else. The ports a rig's forward never takes
and the space a confinement scope belongs to."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hangar.config import Settings
from hangar.core.addresses import server_ports
from hangar.core.events import StoredEvent
from hangar.rigs.hooks import ENDING_EVENT_TYPES, ended_space, removed_member


def ev(type_name: str, **payload: Any) -> StoredEvent:
    return StoredEvent("ws1", 1, "e1", type_name, datetime(2026, 1, 1, tzinfo=UTC), payload)


def test_the_ending_events() -> None:
    assert set(ENDING_EVENT_TYPES) == {"workspace.spaceUpdated", "identity.memberRemoved"}


def test_an_archived_space_ends_but_a_renamed_one_does_not() -> None:
    assert ended_space(ev("workspace.spaceUpdated", space_id="s1", title="t", archived=True)) == "s1"
    assert ended_space(ev("workspace.spaceUpdated", space_id="s1", title="t", archived=False)) is None
    assert ended_space(ev("identity.memberRemoved", user_id="u1", role="member")) is None


def test_a_removed_member_is_named() -> None:
    assert removed_member(ev("identity.memberRemoved", user_id="u1", role="member")) == "u1"
    assert removed_member(ev("workspace.spaceUpdated", space_id="s1", archived=True)) is None
    assert removed_member(ev("identity.memberRemoved", role="member")) is None


def test_the_ports_the_servers_configuration_names() -> None:
    settings = Settings(port=8420, site_port=8421, public_url="https://hangar.example.test:8443",
                        web_client_url="http://127.0.0.1:5173", site_url="https://docs.example.test")  # fmt: skip
    assert server_ports(settings) == {8420, 8421, 8443, 5173}
    assert server_ports(Settings(port=9000, site_port=None)) == {9000}
