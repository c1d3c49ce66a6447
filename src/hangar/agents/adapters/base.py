"""What an adapter is given and what it reports.

An adapter drives one run: it starts turns, streams text and reasoning, calls tools through the toolbox, and
returns the run's outcome. It never touches the database or the bus itself; it reports through ``RunIO``,
which the runner implements (persisting and publishing the turn events). Interrupting a run cancels the
adapter's task; an adapter must release what it holds (HTTP streams, child processes) when cancelled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hangar.agents.events import RunOutcome
from hangar.agents.service import Agent
from hangar.core.brokering import CredentialSource
from hangar.core.confine import CallBack, Confinement, Wait, confinement_for


async def no_confinement() -> Confinement:
    """A request built without a server: only an explicitly provided confinement would do."""
    return await confinement_for(None)


@dataclass(frozen=True)
class HistoryMessage:
    """A message of the space before the run, as the agent sees it: ``own`` when this agent wrote it."""

    author_kind: str
    author_name: str
    content: str
    own: bool


@dataclass(frozen=True)
class LoadedSkill:
    """A skill the run loads (``hangar.agents.skills``): its name, pinned digest and ``SKILL.md`` text."""

    name: str
    digest: str
    instructions: str


@dataclass(frozen=True)
class RunRequest:
    workspace_id: str
    run_id: str
    space_id: str
    agent: Agent
    prompt: str
    history: tuple[HistoryMessage, ...]
    folder: Path
    output_schema: dict[str, Any] | None
    max_turns: int
    api_key: str | None
    secret_env: Mapping[str, str] = field(default_factory=dict)
    # Where the run's driver lock lives: an adapter that starts processes records their group there, so a
    # process that closes the run after its driver died can stop what the driver left running.
    control_dir: Path | None = None
    # Where programs the run starts (the ``command`` adapter) run: the space's enclosure, chosen when needed.
    confine: Callable[[], Awaitable[Confinement]] = no_confinement
    # The product's MCP endpoint for a program the run starts: its address and the run's credential, or why not
    # (``hangar.agents.tools.mcp_grant``).
    product_env: Mapping[str, str] = field(default_factory=dict)
    product_call_back: CallBack | None = None  # the endpoint's address, given where the program runs
    # Who mints forge credentials for a program the run starts (none: this server mints none).
    credentials: CredentialSource | None = None
    # Added to a program's environment: which try of a pipeline step's attempt a worker runs, and the earlier
    # tries' keys (``HANGAR_ATTEMPT_KEY``, ``HANGAR_EARLIER_ATTEMPTS``), so the program can make a repeat harmless.
    attempt_env: Mapping[str, str] = field(default_factory=dict)
    # The space's folder is the run's to read only: a program it starts sees it mounted read-only, or does not run.
    read_only: bool = False
    # The workspace's skills that passed their scan (or whose review an admin overrode), read when the run starts.
    skills: tuple[LoadedSkill, ...] = ()


@dataclass(frozen=True)
class RunResult:
    outcome: RunOutcome
    error: str | None = None


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: str
    ends_run: bool = False


class Toolbox(Protocol):
    def specs(self) -> list[dict[str, Any]]:
        """The tools offered to the model, as OpenAI function-tool declarations."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; never raises for a bad call (the result says what was wrong)."""


class OutputSlot(Protocol):
    @property
    def schema(self) -> dict[str, Any] | None: ...

    def submit(self, payload: Any) -> tuple[bool, str]:
        """Validate and keep ``payload``; returns (accepted, message for the agent)."""


class RunIO(Protocol):
    @property
    def toolbox(self) -> Toolbox: ...

    @property
    def output(self) -> OutputSlot: ...

    async def turn_started(self, turn: int) -> None: ...
    async def waiting(self, turn: int, wait: Wait) -> None:
        """The turn waits before its program starts (an image build, an enclosure's boot): one step of it."""

    async def reasoning_started(self, turn: int) -> None: ...
    async def reasoning_finished(self, turn: int, text: str) -> None: ...
    async def text_delta(self, turn: int, text: str) -> None: ...
    async def tool_started(self, turn: int, call_id: str, name: str, arguments: dict[str, Any]) -> None: ...
    async def tool_finished(self, turn: int, call_id: str, name: str, result: ToolResult) -> None: ...
    async def turn_finished(self, turn: int, outcome: RunOutcome, error: str | None = None) -> None: ...

    async def reply(self, turn: int, text: str) -> None:
        """Post the turn's text as the agent's message in the space."""


class Adapter(ABC):
    @abstractmethod
    async def run(self, request: RunRequest, io: RunIO) -> RunResult:
        """Drive the run to its end and return its outcome (``ok``, ``failed`` or ``turnLimit``).

        Failures of the far side (endpoint down, slow, garbage; a command exiting non-zero) are returned as
        ``failed`` with a one-sentence error, not raised. Cancellation (an interrupt) propagates.
        """
