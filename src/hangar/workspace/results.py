"""What the workspace ops answer: spaces and their messages, tickets, repos and worktrees.

These models are the one definition of the records' wire form: the stores keep plain dataclasses, and what
leaves the server as a message payload, a step output or an audit detail is one of these models in wire form.
Where server paths are hidden from guests, the field is omitted (``omitted_when_none``), not sent as null.
"""

from __future__ import annotations

from typing import Any, Protocol, Self

from pydantic import ConfigDict

from hangar.core.types import Timestamp
from hangar.rpc.frames import frames
from hangar.rpc.registry import Result, omitted_when_none


# The records are described by what the views read of them, not imported: the stores import these views to
# render their events, so naming the record classes here would close a circle.
class _SpaceRecord(Protocol):
    @property
    def provisioning(self) -> str: ...
    @property
    def provisioning_step(self) -> str | None: ...
    @property
    def provisioning_error(self) -> str | None: ...


class Provisioning(Result):
    """How far checking out a space's repos got: ``state``, the step under way, the error that stopped it."""

    state: str
    step: str | None
    error: str | None


class SpaceView(Result):
    id: str
    kind: str
    mode: str
    title: str
    hidden: bool
    created_by: str
    provisioning: Provisioning
    created_at: Timestamp
    updated_at: Timestamp
    archived_at: Timestamp | None

    @classmethod
    def of(cls, space: _SpaceRecord, **more: Any) -> Self:
        """The view of ``space``; ``more`` gives the fields a subclass adds."""
        state = Provisioning(state=space.provisioning, step=space.provisioning_step, error=space.provisioning_error)
        return cls.model_validate({**vars(space), "provisioning": state, **more})


class WorktreeView(Result):
    """A checked-out worktree and what owns it (a space, a ticket, or a PR editor by ``prKey``)."""

    id: str
    repo_id: str
    branch: str
    work_branch: str
    path: str | None = omitted_when_none()  # hidden from guests
    space_id: str | None
    ticket_id: str | None
    pr_key: str | None
    created_at: Timestamp

    @classmethod
    def of(cls, worktree: object, *, show_path: bool = True, **more: Any) -> Self:
        """The view of ``worktree``, without its path unless ``show_path``; ``more`` as in ``SpaceView.of``."""
        fields = {**vars(worktree), **more}
        if not show_path:
            fields["path"] = None
        return cls.model_validate(fields)


class WorktreeList(Result):
    worktrees: list[WorktreeView]


class SpaceRepo(WorktreeView):
    """A worktree in a space's working folder, with its repo's name (null once the repo is gone)."""

    repo_name: str | None


class SpaceDetail(SpaceView):
    """A space with its working folder (hidden from guests) and the worktrees checked out in it."""

    folder: str | None = omitted_when_none()
    repos: list[SpaceRepo]


class SpaceList(Result):
    spaces: list[SpaceView]


class SpaceEventFrame(Result):
    """An event of ``spaces.watch``: every declared event whose payload names the space (``spaceId``): its
    messages, its provisioning, its agents' turns, its rigs."""

    model_config = ConfigDict(json_schema_extra=frames(suffix="InSpace", field="spaceId"))
    seq: int
    type: str
    at: Timestamp
    payload: dict[str, Any]


class SpaceFollowed(Result):
    """The first reply of ``spaces.watch``: the space as it is now."""

    space: SpaceView


class MessageAuthor(Result):
    kind: str
    id: str
    name: str


class MessageView(Result):
    id: str
    seq: int
    space_id: str
    author: MessageAuthor
    content: str
    metadata: dict[str, Any]
    run_id: str | None
    created_at: Timestamp


class MessageList(Result):
    messages: list[MessageView]


class TicketView(Result):
    id: str
    title: str
    description: str
    reporter: str
    status: str
    parent_id: str | None
    space_id: str | None
    created_at: Timestamp
    updated_at: Timestamp


class TicketDetail(TicketView):
    sub_tickets: list[TicketView]


class TicketList(Result):
    tickets: list[TicketView]


class TicketsDeleted(Result):
    """How many tickets went: the one named and its sub-tickets."""

    deleted: int


class RepoView(Result):
    id: str
    name: str
    source_kind: str
    source: str
    default_branch: str
    created_at: Timestamp


class RepoList(Result):
    repos: list[RepoView]


class RepoRemoved(Result):
    removed: str


class CleanupView(Result):
    """What a worktree cleanup released (or, in a dry run, would release)."""

    mode: str
    dry_run: bool
    worktrees: list[str]
    folders: list[str]
    summary: str
