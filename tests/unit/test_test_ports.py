"""The suite's ports under parallel workers (tests/support/ports.py): each worker hands out ports from a block of
its own, below the kernel's ephemeral range, and never one something listens on."""

from __future__ import annotations

import socket

import pytest

from tests.support import ports


def test_each_worker_has_its_own_block_below_the_ephemeral_range() -> None:
    blocks = [ports.worker_block(i, 32768) for i in range(8)]
    taken = [p for block in blocks for p in block]
    assert len(taken) == len(set(taken)) == 8 * ports.BLOCK
    assert min(taken) >= 20000 and max(taken) < 32768
    # More workers than room: blocks are shared rather than spilling into the ephemeral range.
    assert max(ports.worker_block(1000, 32768)) < 32768


def test_the_worker_number_comes_from_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ports.worker_index("gw0") == 0 and ports.worker_index("gw7") == 7
    assert ports.worker_index("master") == 0 and ports.worker_index("gwx") == 0
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw5")
    assert ports.worker_index() == 5
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert ports.worker_index() == 0


def test_a_port_is_handed_out_once_in_turn_and_never_while_something_listens() -> None:
    block = ports.worker_block(ports.worker_index(), ports._ephemeral_low())
    first = ports.free_port()
    assert first in block
    with socket.socket() as held:
        held.bind(("127.0.0.1", first + 1 if first + 1 in block else block.start))
        nxt = ports.free_port()
        assert nxt != first and nxt != held.getsockname()[1] and nxt in block
        assert not ports.is_free(held.getsockname()[1])
