"""What the agents ops answer: agents (their adapter settings without secrets), runs and their turn events."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from hangar.agents.config import CommandAdapter, OpenAIAdapter
from hangar.agents.events import RunOutcome
from hangar.agents.runs import Run, RunStatus
from hangar.agents.service import Agent
from hangar.agents.teams import Team
from hangar.core.event_types import StoredEvent
from hangar.core.types import Timestamp
from hangar.rpc.frames import frames
from hangar.rpc.registry import Result


class OpenAIAdapterView(OpenAIAdapter):
    """``openai`` settings as returned: the key is never sent back, only whether one is stored."""

    api_key: SkipJsonSchema[str | None] = Field(default=None, exclude=True)
    has_api_key: bool = False


class CommandAdapterView(CommandAdapter):
    """``command`` settings as returned: the names of the secret variables (``secretEnvNames``), not their values."""

    secret_env: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict, exclude=True)


AdapterView = Annotated[OpenAIAdapterView | CommandAdapterView, Field(discriminator="type")]


def adapter_view(agent: Agent) -> OpenAIAdapterView | CommandAdapterView:
    settings = agent.adapter.model_dump()
    if isinstance(agent.adapter, OpenAIAdapter):
        return OpenAIAdapterView.model_validate({**settings, "api_key": None, "has_api_key": agent.has_api_key})
    return CommandAdapterView.model_validate({**settings, "secret_env": {}})


class AgentView(Result):
    id: str
    name: str
    role: str
    system_prompt: str
    adapter: AdapterView
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, agent: Agent) -> AgentView:
        return cls(
            id=agent.id,
            name=agent.name,
            role=agent.role,
            system_prompt=agent.system_prompt,
            adapter=adapter_view(agent),
            created_at=agent.created_at,
            updated_at=agent.updated_at,
        )


class AgentList(Result):
    agents: list[AgentView]


class FrontDoor(Result):
    """The agent a new conversation wakes, or null when the workspace has none."""

    agent: AgentView | None


class AgentDeleted(Result):
    deleted: bool = True


class RunView(Result):
    """One agent run, built from a ``Run`` record."""

    id: str
    agent_id: str
    space_id: str
    status: RunStatus
    outcome: RunOutcome | None
    error: str | None
    prompt: str
    output_schema: dict[str, Any] | None
    output: Any
    has_output: bool
    output_error: str | None
    turns: int
    dispatched_by: str
    created_at: Timestamp
    finished_at: Timestamp | None


class DispatchedRun(RunView):
    """The run just dispatched, with its id also as ``runId``."""

    run_id: str

    @classmethod
    def of(cls, run: Run) -> DispatchedRun:
        return cls(**dict(RunView.model_validate(run)), run_id=run.id)


class DispatchedRuns(Result):
    """The runs just dispatched on one prompt, one per agent in the order asked, with their ids as ``runIds``."""

    runs: list[DispatchedRun]
    run_ids: list[str]


class RunList(Result):
    runs: list[RunView]


class RunEventFrame(Result):
    """A persisted event of an agent run: its sequence number in the workspace, type, time and payload."""

    model_config = ConfigDict(json_schema_extra=frames(suffix="InRun", prefix="agents."))

    seq: int
    type: str
    at: Timestamp
    payload: dict[str, Any]

    @classmethod
    def of(cls, event: StoredEvent) -> RunEventFrame:
        return cls(seq=event.seq, type=event.type, at=event.occurred_at, payload=event.payload)


class RunEvents(Result):
    events: list[RunEventFrame]


class TeamDispatch(Result):
    run_ids: list[str]
    dispatch_mode: str


class TeamView(Result):
    id: str
    name: str
    leader_id: str | None
    dispatch_mode: str
    member_ids: list[str]
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, team: Team) -> TeamView:
        return cls.model_validate({**vars(team), "leader_id": team.leader_agent_id})


class TeamList(Result):
    teams: list[TeamView]


class TeamDeleted(Result):
    deleted: bool = True
