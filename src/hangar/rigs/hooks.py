"""Where rigs meet other parts: spaces and worktrees (workspace part), membership (identity), the egress
allowlist (egress gate), the product site (server settings), the dev-domain CA. Each lookup goes through the
other part's public service and degrades clearly when that part is not in this server (a server composed
without the workspace part accepts any space id)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hangar.core.addresses import git_url_host as forge_host
from hangar.core.audit import sensitive as _sensitive
from hangar.core.beneath import anchored, lstat_beneath
from hangar.core.confine import Scope
from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.principal import Role
from hangar.errors import NotFound, Refused
from hangar.identity import IdentityService, MemberRemoved, MemberRoleChanged
from hangar.rigs.backends.base import GuestTree
from hangar.rigs.devdomains import tls
from hangar.rigs.egress.allowlist import browser_default_allowlist, terminal_default_allowlist
from hangar.rigs.egress.relay import relay
from hangar.workspace import RepoService, SpaceService, SpaceUpdated, WorktreeService

log = logging.getLogger("hangar.rigs")

# Events that end rigs: an archived space (conversationEnded), a removed member (workspaceGone); and that end a
# person's kept terminals: a removal or a change of role (below member, they may no longer use a terminal).
ENDING_EVENT_TYPES: tuple[str, ...] = (SpaceUpdated.type, MemberRemoved.type, MemberRoleChanged.type)


def sensitive(content: str | bytes) -> dict[str, Any]:
    """Typed text, clipboard content, commands: only their length and SHA-256 are ever stored."""
    return _sensitive(content)


async def check_space(app: AppContext, ws: str, space_id: str, *, archived_ok: bool = False) -> None:
    """The space must exist in the workspace and (unless ``archived_ok``: looking, tidying up) not be archived
    (raises ``NotFound`` / ``Refused``)."""
    spaces = app.maybe_service(SpaceService)
    if spaces is None:
        return
    space = await spaces.get(ws, space_id)
    if space.archived_at is not None and not archived_ok:
        raise Refused(f"space {space_id} is archived: its conversation has ended, so it takes no new rigs")


async def worktree_of(app: AppContext, ws: str, space_id: str) -> GuestTree | None:
    """The space's first worktree (from the server's records) that is still a directory in the space's folder,
    named beneath that folder, so the backend opens it without following anything the space's guests planted.
    A worktree its guests swapped for a symlink (or removed) is passed over, never mounted or walked."""
    worktrees, spaces = app.maybe_service(WorktreeService), app.maybe_service(SpaceService)
    if worktrees is None or spaces is None:
        return None
    folder = spaces.folder(ws, space_id)
    names = [Path(wt.path).name for wt in await worktrees.all(ws, space_id=space_id) if Path(wt.path).parent == folder]

    def first_directory() -> str | None:
        try:
            with anchored(folder) as fd:
                for name in names:
                    found = lstat_beneath(fd, name)
                    if found is not None and stat.S_ISDIR(found.st_mode):
                        return name
                    log.warning("space %s: its worktree %r is not a folder any more; not mounted", space_id, name)
        except (FileNotFoundError, NotADirectoryError):
            pass
        return None

    name = await asyncio.to_thread(first_directory)
    return GuestTree(folder, name) if name is not None else None


async def forge_hosts(app: AppContext, ws: str, space_id: str) -> list[str]:
    """The hosts of the origins the server recorded for the repos checked out in the space. Never read from a
    worktree: its ``.git`` file and config are the rig's to write."""
    worktrees, repos = app.maybe_service(WorktreeService), app.maybe_service(RepoService)
    if worktrees is None or repos is None:
        return []
    hosts: list[str] = []
    for repo_id in dict.fromkeys(wt.repo_id for wt in await worktrees.all(ws, space_id=space_id)):
        try:
            repo = await repos.get(ws, repo_id)
        except NotFound:  # removed since the worktree was listed
            continue
        host = forge_host(repo.source) if repo.source_kind == "url" else None
        if host is not None:
            hosts.append(host)
    return hosts


async def allowlist(app: AppContext, ws: str, space_id: str) -> frozenset[str]:
    """The terminal's default egress allowlist: developer baseline, apt mirrors, the space's repos' forges."""
    return await asyncio.to_thread(terminal_default_allowlist, await forge_hosts(app, ws, space_id))


async def confinement_allowlist(app: AppContext, scope: Scope) -> frozenset[str]:
    """The allowlist of a confinement scope's enclosure: code of a space (an agent run, a setup script) gets its
    terminal rigs' (``allowlist``); a pipeline run has no repo of its own, so the baseline and the apt mirrors."""
    if scope.space_id is not None:
        return await allowlist(app, scope.workspace_id, scope.space_id)
    return await asyncio.to_thread(terminal_default_allowlist)


LaneHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _site_host(app: AppContext) -> str | None:
    """Where the product site listens on this host (None when this server serves no site)."""
    if app.settings.site_port is None:
        return None
    host = app.settings.host
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


def browser_allowlist(app: AppContext, *, first_boot: bool) -> frozenset[str]:
    """The browser's default egress allowlist: the product site by name (the host of its public origin, when
    it is served under one) and, on the engine's first boot, the distribution's package archives. A site
    listening on this host is reached through ``site_lane`` instead."""
    names = [h for h in (urlsplit(app.settings.site_url or "").hostname,) if h and not _is_ip(h)]
    return browser_default_allowlist(names, first_boot=first_boot)


def site_lane(app: AppContext) -> tuple[int, LaneHandler] | None:
    """The product site as a browser rig reaches it at its own origin: the rig's loopback port ``site_port``
    relayed to the site's listener on this host. Never the server's own listener (RPC, MCP, lanes)."""
    host = _site_host(app)
    port = app.settings.site_port
    if host is None or port is None or port == app.settings.port:
        return None

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except (OSError, TimeoutError):
            writer.close()
            return
        await relay((reader, writer), upstream)

    return port, handler


async def dev_ca_pem(app: AppContext) -> bytes:
    """The dev-domain CA certificate (public part only) browser rigs trust, made on first use."""
    return await asyncio.to_thread(tls.dev_ca_pem, app.datadir.sub("rigs"))


def _is_ip(host: str) -> bool:
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host.strip("[]"))
        return True
    return False


async def still_member(app: AppContext, ws: str, user_id: str | None) -> bool:
    """False once the workspace is gone or the person who opened the rig lost their membership."""
    if await app.service(IdentityService).get_workspace(ws) is None:
        return False
    if user_id is None:
        return True
    return await app.service(IdentityService).role_of(ws, user_id) is not None


async def may_use_lanes(app: AppContext, ws: str, user_id: str) -> bool:
    """Whether the person holds member or above in the workspace now, as every lane requires (read from the
    records, so a change another process made counts at once)."""
    role = await app.service(IdentityService).role_of(ws, user_id)
    return role is not None and role >= Role.member


def changed_member(ev: StoredEvent) -> str | None:
    """The user whose membership this event removed or changed, if any."""
    if ev.type in (MemberRemoved.type, MemberRoleChanged.type):
        user_id = ev.payload.get("userId")
        return user_id if isinstance(user_id, str) else None
    return None


def removed_member(ev: StoredEvent) -> str | None:
    """The user who left the workspace with this event, if any."""
    return changed_member(ev) if ev.type == MemberRemoved.type else None


def ended_space(ev: StoredEvent) -> str | None:
    """The space whose conversation ended with this event (archived), if any."""
    if ev.type == SpaceUpdated.type and ev.payload.get("archived") is True:
        space_id = ev.payload.get("spaceId")
        return space_id if isinstance(space_id, str) else None
    return None
