"""``Principal.check_reach`` with a credential limited to one space: the space an action names is checked with
the workspace, an action that names none is not about a space, and reads of every space are refused."""

from __future__ import annotations

import pytest

from hangar.core.principal import Principal
from hangar.errors import Forbidden

WS, OWN, OTHER = "ws-1", "space-own", "space-other"


def _agent(space_id: str | None) -> Principal:
    return Principal(
        "agent:a1", "run:r1", "Agent", False, workspace_id=WS, space_id=space_id, tools=frozenset({"messages.list"})
    )


def test_the_own_space_and_no_space_pass() -> None:
    agent = _agent(OWN)
    agent.check_reach(WS, changes=False, action="messages.list", space_id=OWN)
    agent.check_reach(WS, changes=False, action="messages.list")  # names no space: not about one
    assert agent.scoped


def test_another_space_is_refused_naming_the_limit() -> None:
    with pytest.raises(Forbidden) as refused:
        _agent(OWN).check_reach(WS, changes=False, action="messages.list", space_id=OTHER)
    assert refused.value.message == f"this credential is limited to space {OWN}; messages.list names space {OTHER}"


def test_the_workspace_is_checked_before_the_space() -> None:
    with pytest.raises(Forbidden, match=f"limited to workspace {WS}"):
        _agent(OWN).check_reach("ws-2", changes=False, action="messages.list", space_id=OWN)


def test_a_thing_in_another_space_is_named_with_its_space() -> None:
    with pytest.raises(Forbidden) as refused:
        _agent(OWN).check_space(OTHER, action="rig.exec", subject="rig r9")
    assert refused.value.message == f"this credential is limited to space {OWN}; rig.exec: rig r9 is in space {OTHER}"


def test_a_credential_without_a_space_reaches_every_space() -> None:
    agent = _agent(None)
    agent.check_reach(WS, changes=False, action="messages.list", space_id=OTHER)
    agent.whole_workspace("events.list")


def test_reads_of_every_space_are_refused_to_a_credential_of_one() -> None:
    with pytest.raises(Forbidden) as refused:
        _agent(OWN).whole_workspace("events.list")
    assert refused.value.message == (
        f"this credential is limited to space {OWN}; events.list reads every space of the workspace"
    )
