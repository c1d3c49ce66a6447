"""A rig host names a rig's home after the id a server sends: anything but the shape of a record id is refused
before a folder is made, so a server (or anyone between it and the host) cannot make the host create or delete a
directory outside its homes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.core.ids import is_id, new_id
from hangar.errors import InvalidArgs
from hangar.rigs.hosts.agent import RigHostAgent, ServerLink


def start(agent: RigHostAgent, **spec: Any) -> None:
    base = {"rigId": new_id(), "workspaceId": new_id(), "memoryMb": 10**9, "surface": "terminal", "vcpus": 1}
    asyncio.run(agent._start(ServerLink("https://a.example"), {**base, **spec}))


# A record id of a fixed value: the parameters name the tests, and every worker of a parallel run must collect the
# same names.
AN_ID = "3f2b8c1e-5d4a-4e6f-9b7c-0a1d2e3f4a5b"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rigId", "../../outside"),
        ("rigId", "/etc"),
        ("rigId", AN_ID + "/.."),
        ("rigId", AN_ID.upper()),
        ("rigId", ""),
        ("workspaceId", "../x"),
        ("workspaceId", None),
    ],
)
def test_a_start_naming_no_record_id_is_refused_before_any_folder(tmp_path: Path, field: str, value: Any) -> None:
    agent = RigHostAgent(["https://a.example"], "hrh_x", tmp_path / "data", 1024, backend=None)  # type: ignore[arg-type]
    (tmp_path / "data" / "rigs" / "homes").mkdir(parents=True)
    with pytest.raises(InvalidArgs) as refused:
        start(agent, **{field: value})
    assert refused.value.field == field
    assert list((tmp_path / "data").rglob("*")) == [tmp_path / "data" / "rigs", tmp_path / "data" / "rigs" / "homes"]
    assert not (tmp_path / "outside").exists()


def test_a_well_formed_id_gets_past_the_check(tmp_path: Path) -> None:
    agent = RigHostAgent(["https://a.example"], "hrh_x", tmp_path / "data", 1024, backend=None)  # type: ignore[arg-type]
    with pytest.raises(Exception) as refused:  # the budget refuses next: the id itself was accepted
        start(agent)
    assert "memory budget" in str(refused.value)
    assert is_id(new_id()) and not is_id(new_id()[:-1]) and not is_id(new_id() + "0")
