"""Which events end rigs: an archived space, a removed member; nothing else. (The ports a rig's forward never
takes are the kernel's ``server_ports``, tested with the address rules.)"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hangar.core.event_types import StoredEvent
from hangar.rigs.hooks import ENDING_EVENT_TYPES, changed_member, ended_space, removed_member


def ev(type_name: str, **payload: Any) -> StoredEvent:
    return StoredEvent("ws1", 1, "e1", type_name, datetime(2026, 1, 1, tzinfo=UTC), payload)


def test_the_ending_events() -> None:
    assert set(ENDING_EVENT_TYPES) == {
        "workspace.spaceUpdated",
        "identity.memberRemoved",
        "identity.memberRoleChanged",
    }


def test_an_archived_space_ends_but_a_renamed_one_does_not() -> None:
    assert ended_space(ev("workspace.spaceUpdated", spaceId="s1", title="t", archived=True)) == "s1"
    assert ended_space(ev("workspace.spaceUpdated", spaceId="s1", title="t", archived=False)) is None
    assert ended_space(ev("identity.memberRemoved", userId="u1", role="member")) is None


def test_a_removed_member_is_named() -> None:
    assert removed_member(ev("identity.memberRemoved", userId="u1", role="member")) == "u1"
    assert removed_member(ev("workspace.spaceUpdated", spaceId="s1", archived=True)) is None
    assert removed_member(ev("identity.memberRemoved", role="member")) is None
    # A change of role is not a removal (the rigs they opened stay), but names whose terminals are checked.
    changed = ev("identity.memberRoleChanged", userId="u1", oldRole="member", newRole="guest")
    assert removed_member(changed) is None
    assert changed_member(changed) == "u1"
    assert changed_member(ev("identity.memberRemoved", userId="u1", role="member")) == "u1"
    assert changed_member(ev("workspace.spaceUpdated", spaceId="s1", archived=True)) is None
