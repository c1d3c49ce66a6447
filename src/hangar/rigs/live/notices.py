"""What ``rig.watch`` tells after its first reply (``RigSnapshot``): the rig's activity, one model per kind, each
naming itself by ``type`` so a client narrows a notice by it. They live in this process only (a rig's watchers
are lanes of the process that runs it) and are not recorded: the rig's durable events are ``rigs.events``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from hangar.rigs.model import Phase
from hangar.rigs.results import EgressRefusal, PortRow
from hangar.rpc.registry import Result


class PhaseNotice(Result):
    """The rig moved to ``phase``; ``detail`` is its status line, ``reason`` why it closed or failed."""

    type: Literal["phase"] = "phase"
    phase: Phase
    detail: str
    reason: str | None = None


class ProgressNotice(Result):
    """A step of a long boot (the terminal image's build, the enclosure's start): ``step`` of ``steps``."""

    type: Literal["progress"] = "progress"
    detail: str
    step: int
    steps: int


class ExecNotice(Result):
    """Someone (``by``, a principal label) runs ``command`` in the rig."""

    type: Literal["exec"] = "exec"
    by: str
    command: str


class ExecResultNotice(Result):
    """How the command ended; the output is the tail of each stream."""

    type: Literal["execResult"] = "execResult"
    exit_code: int
    timed_out: bool
    stdout: str
    stderr: str


class ControlNotice(Result):
    """A person (``controller``, a user id) took control, or it was handed back (None)."""

    type: Literal["control"] = "control"
    controller: str | None


class PortsNotice(Result):
    """The rig's listening ports changed: all of them, forwarded first."""

    type: Literal["ports"] = "ports"
    ports: list[PortRow]


class EgressNotice(Result):
    """The rig's egress gate refused a connection."""

    type: Literal["egress"] = "egress"
    refusal: EgressRefusal


class EgressGrantedNotice(Result):
    """An admin let the rig reach more hosts."""

    type: Literal["egressGranted"] = "egressGranted"
    hosts: list[str]


RigNotice = Annotated[
    PhaseNotice
    | ProgressNotice
    | ExecNotice
    | ExecResultNotice
    | ControlNotice
    | PortsNotice
    | EgressNotice
    | EgressGrantedNotice,
    Field(discriminator="type"),
]
"""Every notice ``rig.watch`` sends after its reply."""
