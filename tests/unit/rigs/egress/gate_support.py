"""Starting a gate on free host loopback ports in tests.

A port found free a moment ago can be taken before the gate binds it (an outgoing connection's source port, a
lingering socket of an earlier test), so the six ports are picked distinct while held, on both families and both
kinds, and a start that still meets a taken port is retried on fresh ones."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

from hangar.rigs.egress.gate import EgressGate
from hangar.rigs.egress.rules import GatePorts
from hangar.rigs.egress.server_door import DoorTarget

ATTEMPTS = 5


async def plain_socket(family: int, kind: int) -> socket.socket:
    return socket.socket(family, kind)


def _free_on_the_other_bindings(port: int) -> bool:
    """Whether ``port`` is free for UDP on 127.0.0.1 and for both kinds on ::1 (TCP on 127.0.0.1 is held)."""
    others = ((socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1"), (socket.AF_INET6, socket.SOCK_STREAM, "::1"),
              (socket.AF_INET6, socket.SOCK_DGRAM, "::1"))  # fmt: skip
    for family, kind, host in others:
        with socket.socket(family, kind) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                return False
    return True


def free_gate_ports() -> GatePorts:
    """Six distinct ports, each free for TCP and UDP on 127.0.0.1 and ::1 when picked."""
    held: list[socket.socket] = []  # held until all six are picked, so no pick repeats another
    ports: list[int] = []
    try:
        while len(ports) < 6:
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            if _free_on_the_other_bindings(port):
                ports.append(port)
    finally:
        for s in held:
            s.close()
    dns, http, tls, deny_tcp, deny_udp, door = ports
    return GatePorts(dns=dns, http=http, tls=tls, deny_tcp=deny_tcp, deny_udp=deny_udp, server_door=door)


async def start_gate(build: Callable[[GatePorts], EgressGate], door: DoorTarget | None = None) -> EgressGate:
    """A started gate from ``build`` on free ports (its server door opened to ``door`` when given)."""
    for attempt in range(ATTEMPTS):
        gate = build(free_gate_ports())
        try:
            await gate.start(plain_socket)
            if door is not None:
                await gate.open_server_door(door, plain_socket)
            return gate
        except OSError as e:
            await gate.aclose()
            if e.errno != errno.EADDRINUSE or attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
