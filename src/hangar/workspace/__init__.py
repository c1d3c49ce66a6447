"""Workspace: spaces (conversations) and messages, tickets, repos and worktrees.

Other parts use the services below through ``app.service(...)`` (provided when the part starts) and follow
spaces through the domain events re-exported here. Parts whose ops or bodies work in spaces also share:
``WsArgs`` (the op argument base), ``author_of`` and ``audit_queued`` (signing a message, auditing in turn with
this part's writes), ``require_text``, and for pipeline bodies ``pipeline_author`` and ``SPACE_STATE_KEY``
(where ``messaging.createSpace`` publishes its space).
This module imports only what it re-exports, none of it the part's ops or bodies.
"""

from hangar.workspace.args import WsArgs
from hangar.workspace.events import MessagePosted, SpaceCreated, SpaceProvisioningChanged, SpaceUpdated, TicketChanged
from hangar.workspace.records import (
    SPACE_STATE_KEY,
    SPACE_TITLE_MAX,
    Author,
    author_of,
    clip_title,
    pipeline_author,
    require_text,
)
from hangar.workspace.repos import Repo, RepoService, RepoSpec, parse_repo_spec
from hangar.workspace.spaces import Space, SpaceService, check_mode
from hangar.workspace.tickets import Ticket, TicketService
from hangar.workspace.worktrees import CleanupReport, Worktree, WorktreeService, pr_key
from hangar.workspace.writes import audit_queued

__all__ = [
    "SPACE_STATE_KEY",
    "SPACE_TITLE_MAX",
    "Author",
    "CleanupReport",
    "MessagePosted",
    "Repo",
    "RepoService",
    "RepoSpec",
    "Space",
    "SpaceCreated",
    "SpaceProvisioningChanged",
    "SpaceService",
    "SpaceUpdated",
    "Ticket",
    "TicketChanged",
    "TicketService",
    "Worktree",
    "WorktreeService",
    "WsArgs",
    "audit_queued",
    "author_of",
    "check_mode",
    "clip_title",
    "parse_repo_spec",
    "pipeline_author",
    "pr_key",
    "require_text",
]
