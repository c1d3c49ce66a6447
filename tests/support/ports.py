"""A free host loopback port for a test's own listener, or for an address nothing listens on.

The suite runs in parallel processes (pytest-xdist, README "Tests"). A port the kernel picks for ``bind(0)`` comes
from its ephemeral range, the same range every other process's ``bind(0)`` and every outgoing connection draws
from: between the moment a test learns such a port and the moment its listener binds it (or while a test counts on
nothing listening there), another worker may be given it. So each worker hands out ports from a block of its own,
below the kernel's ephemeral range, which neither the kernel nor another worker hands out; within the block the
ports are taken in turn (a port handed out is not handed out again soon after) from a random start (two runs of the
suite on one machine rarely begin at the same port), and a port is handed out only when it binds on every address.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

BLOCK = 500  # ports per worker
_FLOOR = 20000  # below it: ports well-known services, other programs' defaults and the tests' fixed guest ports use


def worker_index(worker: str | None = None) -> int:
    """This process's xdist worker number (``gw3`` is 3); 0 when the suite runs in one process."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def worker_block(index: int, ephemeral_low: int) -> range:
    """The ports worker ``index`` hands out: a block of its own below ``ephemeral_low``; workers past the room
    there share blocks (taken in turn from random starts, and checked free, a shared block still rarely clashes)."""
    blocks = max(1, (ephemeral_low - _FLOOR) // BLOCK)
    start = _FLOOR + (index % blocks) * BLOCK
    return range(start, start + BLOCK)


def _cycle(block: range) -> Iterator[int]:
    first = random.randrange(len(block))
    return itertools.cycle([*block[first:], *block[:first]])


_ports: Iterator[int] | None = None


def is_free(port: int) -> bool:
    """Nothing of the host listens on ``port`` on any address."""
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port of this worker's block that nothing listens on, on any address, when asked. Nothing else in the
    suite hands it out, so it stays free until the caller binds it (or, unbound, stays an address where nothing
    listens)."""
    global _ports
    if _ports is None:
        _ports = _cycle(worker_block(worker_index(), _ephemeral_low()))
    for port in itertools.islice(_ports, BLOCK):
        if is_free(port):
            return port
    raise RuntimeError(f"no free port in this worker's block of {BLOCK}")
