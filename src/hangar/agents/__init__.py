"""Agents: workspace-scoped agent records, their adapters (``openai``, ``command``), runs, turn events and teams.

Other parts dispatch runs through ``AgentRunner`` (``app.service(AgentRunner)``), read agents through
``AgentService`` and teams through ``TeamService``, and follow runs through the events in
``hangar.agents.events`` (a run's ``RunStatus`` and ``RunOutcome``; its events so far: ``stored_run_events``).
A run closed because the process driving it died carries the error ``ABANDONED``.
"""

from hangar.agents.events import AGENT_EVENTS, RUN_EVENT_TYPES, RunOutcome
from hangar.agents.run_events import stored_run_events
from hangar.agents.runner import ABANDONED, AgentRunner
from hangar.agents.runs import Run, RunStatus
from hangar.agents.service import Agent, AgentService
from hangar.agents.teams import Team, TeamService, check_dispatch_mode

__all__ = [
    "ABANDONED",
    "AGENT_EVENTS",
    "RUN_EVENT_TYPES",
    "Agent",
    "AgentRunner",
    "AgentService",
    "Run",
    "RunOutcome",
    "RunStatus",
    "Team",
    "TeamService",
    "check_dispatch_mode",
    "stored_run_events",
]
