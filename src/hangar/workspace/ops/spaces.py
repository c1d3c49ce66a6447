"""Ops on spaces and messages, including the watch op that follows a space live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.core.retention import check_resumable
from hangar.errors import InvalidArgs
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op
from hangar.workspace.authors import author_of
from hangar.workspace.repos import RepoService
from hangar.workspace.results import (
    MessageList,
    MessageView,
    SpaceDetail,
    SpaceEventFrame,
    SpaceFollowed,
    SpaceList,
    SpaceRepo,
    SpaceView,
)
from hangar.workspace.spaces import SpaceService
from hangar.workspace.watch import SpaceFollower, event_frame
from hangar.workspace.worktrees import WorktreeService


def _spaces(ctx: OpContext) -> SpaceService:
    return ctx.app.service(SpaceService)


class SpaceCreateArgs(Args):
    title: str
    mode: str = "chat"
    hidden: bool = False
    repo_ids: list[str] = Field(default_factory=list)
    all_repos: bool = False


@op("spaces.create", kind="mutate", scope="workspace")
async def spaces_create(ctx: OpContext, args: SpaceCreateArgs) -> SpaceDetail:
    """Open a space (a conversation), optionally with repo worktrees checked out in its working folder."""
    wants_repos = bool(args.repo_ids) or args.all_repos
    await ctx.app.service(WorktreeService).check_specs(ctx.ws, args.repo_ids)
    space = await _spaces(ctx).create(
        ctx.ws,
        title=args.title,
        mode=args.mode,
        hidden=args.hidden,
        created_by=ctx.principal.label,
        provisioning="provisioning" if wants_repos else "ready",
    )
    await ctx.audit("spaces.create", f"space:{space.id}", {"title": space.title, "mode": space.mode})
    if wants_repos:
        await ctx.app.service(WorktreeService).provision_space(
            ctx.ws, space.id, args.repo_ids, all_repos=args.all_repos
        )
    return await _space_detail(ctx, space.id)


def shows_paths(ctx: OpContext) -> bool:
    """Where the server keeps files is the host's business: guests see spaces and worktrees, not server paths."""
    return ctx.role is not None and ctx.role >= Role.member


async def _space_detail(ctx: OpContext, space_id: str) -> SpaceDetail:
    spaces = _spaces(ctx)
    space = await spaces.get(ctx.ws, space_id)
    worktrees = await ctx.app.service(WorktreeService).all(ctx.ws, space_id=space_id)
    names = {r.id: r.name for r in await ctx.app.service(RepoService).all(ctx.ws)}
    paths = shows_paths(ctx)
    repos = [SpaceRepo.of(w, show_path=paths, repo_name=names.get(w.repo_id)) for w in worktrees]
    folder = str(spaces.folder(ctx.ws, space_id)) if paths else None
    return SpaceDetail.of(space, folder=folder, repos=repos)


class SpaceListArgs(Args):
    include_archived: bool = False
    include_hidden: bool = False


@op("spaces.list", kind="read", scope="workspace")
async def spaces_list(ctx: OpContext, args: SpaceListArgs) -> SpaceList:
    """List the workspace's spaces (archived and hidden ones on request); for a credential limited to one space,
    that space."""
    spaces = await _spaces(ctx).all(ctx.ws, include_archived=args.include_archived, include_hidden=args.include_hidden)
    only = ctx.principal.space_id
    return SpaceList(spaces=[SpaceView.of(s) for s in spaces if only is None or s.id == only])


class SpaceRef(Args):
    space_id: str


@op("spaces.get", kind="read", scope="workspace")
async def spaces_get(ctx: OpContext, args: SpaceRef) -> SpaceDetail:
    """One space with its working folder and checked-out repos."""
    return await _space_detail(ctx, args.space_id)


class SpaceRenameArgs(Args):
    space_id: str
    title: str


@op("spaces.rename", kind="mutate", scope="workspace")
async def spaces_rename(ctx: OpContext, args: SpaceRenameArgs) -> SpaceView:
    """Rename a space."""
    space = await _spaces(ctx).rename(ctx.ws, args.space_id, args.title)
    await ctx.audit("spaces.rename", f"space:{space.id}", {"title": space.title})
    return SpaceView.of(space)


@op("spaces.archive", kind="mutate", scope="workspace")
async def spaces_archive(ctx: OpContext, args: SpaceRef) -> SpaceView:
    """Archive a space: it keeps its history but takes no new messages or agent runs."""
    space = await _spaces(ctx).archive(ctx.ws, args.space_id)
    await ctx.audit("spaces.archive", f"space:{space.id}")
    return SpaceView.of(space)


class SpaceWatchArgs(Args):
    space_id: str
    after_seq: int | None = Field(default=None, ge=0)


@op("spaces.watch", kind="watch", scope="workspace", result=SpaceFollowed, events=SpaceEventFrame)
async def spaces_watch(ctx: OpContext, args: SpaceWatchArgs) -> AsyncIterator[SpaceFollowed | SpaceEventFrame]:
    """Follow a space: new messages, provisioning changes and agent turn events, as event frames.

    With ``afterSeq`` the events persisted after that sequence number are sent first; refused (``conflict``) when
    retention pruned events after it, since they could not be sent: load the space again and watch without it.
    """
    space = await _spaces(ctx).get(ctx.ws, args.space_id)
    if args.after_seq is not None:  # events it would resume from may be gone: say so rather than skip them
        await check_resumable(ctx.app, ctx.ws, args.after_seq)
    follower = SpaceFollower(ctx.app, ctx.ws, args.space_id)
    try:
        yield SpaceFollowed(space=SpaceView.of(space))
        async for event in follower.events(after_seq=args.after_seq):
            yield event_frame(event)
    finally:
        await follower.aclose()


class MessagePostArgs(Args):
    space_id: str
    content: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


@op("messages.post", kind="mutate", scope="workspace")
async def messages_post(ctx: OpContext, args: MessagePostArgs) -> MessageView:
    """Post a message to a space as the caller."""
    posted = await _spaces(ctx).post(ctx.ws, args.space_id, author_of(ctx), args.content, metadata=args.metadata)
    return MessageView.model_validate(posted)


class MessageListArgs(Args):
    space_id: str
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=200, ge=1, le=1000)
    last: int | None = Field(default=None, ge=1, le=1000)  # instead of a page: the last N messages
    before_seq: int | None = Field(default=None, ge=1)  # with ``last``: the last N before this one (older pages)


@op("messages.list", kind="read", scope="workspace")
async def messages_list(ctx: OpContext, args: MessageListArgs) -> MessageList:
    """A space's messages after ``afterSeq``, oldest first; or, with ``last``, its last messages (those before
    ``beforeSeq`` when given, to page back through a long history), oldest first."""
    spaces = _spaces(ctx)
    if args.before_seq is not None and args.last is None:
        raise InvalidArgs("beforeSeq pages backwards and needs last (how many messages)", field="beforeSeq")
    if args.last is not None:
        await spaces.get(ctx.ws, args.space_id)  # an unknown space is not_found, as for a page
        msgs = await spaces.recent(ctx.ws, args.space_id, limit=args.last, before_seq=args.before_seq)
    else:
        msgs = await spaces.messages(ctx.ws, args.space_id, after_seq=args.after_seq, limit=args.limit)
    return MessageList(messages=[MessageView.model_validate(m) for m in msgs])


OPS: list[OpFunction] = [
    spaces_create,
    spaces_list,
    spaces_get,
    spaces_rename,
    spaces_archive,
    spaces_watch,
    messages_post,
    messages_list,
]
