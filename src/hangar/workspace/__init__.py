"""Workspace: spaces (conversations) and messages, tickets, repos and worktrees.

Other parts use the services below through ``app.service(...)`` (provided when the part starts) and follow
spaces through the domain events re-exported here. Parts whose ops or bodies work in spaces also share:
``author_of`` and ``audit_queued`` (signing a message, auditing in turn with this part's writes), ``clip_title``
and ``SPACE_TITLE_MAX`` (a space's title from free text), ``TICKET_DESCRIPTION_MAX`` (the most text a ticket
holds), ``trusted_repo_hosts`` (the hosts the server owner lets workspace admins' downloads reach on the private
network: clones, skills), and for pipeline bodies ``pipeline_author`` and ``SPACE_STATE_KEY`` (where
``messaging.createSpace`` publishes its space). A repo's files at a commit are read from its clone with
``list_tree`` and ``blob_reader`` (``hangar.workspace.snapshots``: never from a checkout), and carried to a
worker's host with ``bundle_branch``, ``open_mirror`` and ``unbundle``. Op argument models derive
from ``hangar.rpc.registry.Args``. This module imports only what it re-exports, none of it the part's ops or bodies.
"""

from hangar.workspace.authors import Author, author_of, pipeline_author
from hangar.workspace.events import MessagePosted, SpaceCreated, SpaceProvisioningChanged, SpaceUpdated, TicketChanged
from hangar.workspace.git import GitFailed
from hangar.workspace.repos import Repo, RepoService, RepoSpec, parse_repo_spec
from hangar.workspace.snapshots import (
    TreeEntry,
    blob_reader,
    bundle_branch,
    commit_exists,
    list_tree,
    open_mirror,
    resolve_commit,
    unbundle,
)
from hangar.workspace.sources import TRUSTED_REPO_HOSTS_FIX, trusted_repo_hosts
from hangar.workspace.spaces import SPACE_STATE_KEY, SPACE_TITLE_MAX, Space, SpaceService, check_mode, clip_title
from hangar.workspace.tickets import DESCRIPTION_MAX as TICKET_DESCRIPTION_MAX
from hangar.workspace.tickets import Ticket, TicketService
from hangar.workspace.worktrees import CleanupReport, Worktree, WorktreeService, pr_key
from hangar.workspace.writes import audit_queued

__all__ = [
    "SPACE_STATE_KEY",
    "SPACE_TITLE_MAX",
    "TICKET_DESCRIPTION_MAX",
    "TRUSTED_REPO_HOSTS_FIX",
    "Author",
    "CleanupReport",
    "GitFailed",
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
    "TreeEntry",
    "Worktree",
    "WorktreeService",
    "audit_queued",
    "author_of",
    "blob_reader",
    "bundle_branch",
    "check_mode",
    "clip_title",
    "commit_exists",
    "list_tree",
    "open_mirror",
    "parse_repo_spec",
    "pipeline_author",
    "pr_key",
    "resolve_commit",
    "trusted_repo_hosts",
    "unbundle",
]
