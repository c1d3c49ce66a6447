"""Workspace: spaces (conversations) and messages, teams, tickets, repos and worktrees.

Other parts use the services below through ``app.service(...)`` (provided when the part starts) and follow
spaces through the domain events in ``hangar.workspace.events``.
"""

from hangar.workspace.records import SPACE_TITLE_MAX, Author, clip_title
from hangar.workspace.repos import Repo, RepoService, parse_repo_spec
from hangar.workspace.spaces import Space, SpaceService, check_mode
from hangar.workspace.teams import Team, TeamService, check_dispatch_mode
from hangar.workspace.tickets import Ticket, TicketService
from hangar.workspace.worktrees import CleanupReport, Worktree, WorktreeService, pr_key

__all__ = [
    "SPACE_TITLE_MAX",
    "Author",
    "CleanupReport",
    "Repo",
    "RepoService",
    "Space",
    "SpaceService",
    "Team",
    "TeamService",
    "Ticket",
    "TicketService",
    "Worktree",
    "WorktreeService",
    "check_dispatch_mode",
    "check_mode",
    "clip_title",
    "parse_repo_spec",
    "pr_key",
]
