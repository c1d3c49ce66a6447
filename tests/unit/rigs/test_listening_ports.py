"""The listening ports a rig host (or any backend) reports are its word only: a rig host answering
``listeningPorts`` with a hundred thousand numbers, a 0 and a 70000 gets the valid ones taken in, at most
``MAX_LISTENING_PORTS`` of them (at the cap all kept, one past cut), and nothing that is not a port number; and
ports left unforwarded are logged in one line per poll, not one per port."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.backends.base import RigSpec
from hangar.rigs.hosts.remote import RemoteRig
from hangar.rigs.live.ports import PortForwards
from hangar.rigs.model import MAX_LISTENING_PORTS, listening_within


class _Link:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        assert op == "listeningPorts"
        return self.answer


class _Hosts:
    def __init__(self, link: _Link) -> None:
        self._link = link

    def link(self, host_id: str) -> _Link:
        return self._link

    async def ended(self, rig_id: str) -> None:
        pass


def _remote(answer: dict[str, Any]) -> RemoteRig:
    spec = RigSpec("r1", "w1", "terminal", 512, 1, frozenset(), None, None)
    return RemoteRig(_Hosts(_Link(answer)), "h1", "host", spec)  # type: ignore[arg-type]


async def test_a_rig_host_flooding_listening_ports_is_cut_and_out_of_range_numbers_dropped() -> None:
    flood = [0, 70000, -1, True, "22", 1.5, None, *range(1, 100_001)]
    ports = await _remote({"ports": flood}).listening_ports()
    assert ports == list(range(1, MAX_LISTENING_PORTS + 1))
    assert await _remote({"ports": [0, 70000, 65535, 1]}).listening_ports() == [1, 65535]
    assert await _remote({"ports": {"a": 1}}).listening_ports() == []
    assert await _remote({}).listening_ports() == []


def test_the_cap_at_the_limit_keeps_all_one_past_cuts_one() -> None:
    at = list(range(1, MAX_LISTENING_PORTS + 1))
    assert listening_within(at) == (at, 0)
    assert listening_within([*at, 65535]) == (at, 1)
    assert listening_within([65535, 65536, 0, 1]) == ([1, 65535], 0)


class _Handle:
    spec = RigSpec("r1", "w1", "terminal", 512, 1, frozenset(), None, None)

    def __init__(self) -> None:
        self.forwarded: list[int] = []

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        self.forwarded.append(guest_port)
        return 40000 + len(self.forwarded)

    async def unforward(self, host_port: int) -> None:
        pass


async def test_ports_left_unforwarded_are_logged_in_one_line(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    ports = PortForwards(limit=2)
    handle = _Handle()
    ports._forward_loopback = _fake_forward(handle)  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="hangar.rigs.live.ports"):
        fresh = await ports.sync(handle, list(range(1, MAX_LISTENING_PORTS + 1)))  # type: ignore[arg-type]
    assert fresh == list(range(3, MAX_LISTENING_PORTS + 1))
    assert len(caplog.records) == 1 and "1022 more guest ports" in caplog.records[0].getMessage()


def _fake_forward(handle: _Handle) -> Any:
    async def forward(h: Any, guest_port: int, own_number: bool) -> int:
        return await handle.forward(guest_port, "127.0.0.2", None)

    return forward
