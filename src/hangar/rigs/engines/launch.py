"""How an engine starts: a recipe that is the same wherever the engine runs.

A ``LaunchPlan`` lists the files to place in the engine's home (a profile's preferences) and the processes to
run there; whoever runs the engine (the enclosure backend inside a rig, ``hostlaunch`` on the host for tests
and the benchmark) writes the files, starts the processes, waits for ``port`` to listen, and connects with
``EngineRecipe.connect``. Inside a rig, engines A and B listen on guest loopback 9223 behind a ``socat`` relay
on 9222 (``relay``); engine C's driver listens on 9222 itself. One host loopback port is forwarded to 9222.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from hangar.rigs.engines.session import EngineSession

AUTOMATION_PORT = 9222  # what the rig forwards to the host
ENGINE_PORT = 9223  # where engines behind the relay listen
LISTEN_POLL_S = 0.025  # how often a boot looks whether the engine listens yet (a cheap look; a boot waits on it)


@dataclass(frozen=True)
class LaunchContext:
    """Where this launch happens. Paths are as the engine's processes see them."""

    home: str  # the engine user's home (profiles live under it)
    port: int  # where the engine (or its driver) must listen, on 127.0.0.1
    width: int  # the boot display
    height: int
    home_url: str  # the page the engine opens first
    ca_file: str | None = None  # a PEM CA certificate the engine must trust (dev domains), if any


@dataclass(frozen=True)
class EngineProcess:
    name: str  # for logs: "chromium", "xvfb"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchPlan:
    files: Mapping[str, bytes]  # relative to ``home`` -> content, written before any process starts
    setup: tuple[EngineProcess, ...]  # run to completion first, in order (trusting the CA)
    processes: tuple[EngineProcess, ...]  # long-lived, started in order


@dataclass(frozen=True)
class Endpoint:
    """Where a client reaches the engine: the TCP ``host``:``port`` to dial, and the ``authority`` the engine
    believes it listens on (engine B checks the Host header against its own port)."""

    host: str
    port: int
    authority: str


@dataclass(frozen=True)
class EngineRecipe:
    engine: str
    relay: bool  # listens on ENGINE_PORT behind a socat relay on AUTOMATION_PORT (engines A and B)
    plan: Callable[[LaunchContext], LaunchPlan]
    connect: Callable[[Endpoint, LaunchContext], Awaitable[EngineSession]]
    boot_timeout_s: float = 60.0  # from the processes' start to a connected session
