"""A part of the server: what it contributes, declared explicitly and handed to the server composition."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hangar.core.confine import TRUSTED_HOST_EXEC_SPEC
from hangar.core.context import AppContext
from hangar.core.disks import DISK_SPECS
from hangar.core.event_types import DomainEvent
from hangar.core.lapse import LAPSE_SPEC
from hangar.core.migrating import MigrationSet
from hangar.core.retention import EventFloor
from hangar.core.sealed_tables import MIGRATIONS as SEALED_MIGRATIONS
from hangar.core.settings import SettingSpec
from hangar.core.tables import MIGRATIONS as KERNEL_MIGRATIONS

if TYPE_CHECKING:
    from starlette.routing import BaseRoute  # a part's routes are the server's; a command starts without Starlette

# A function declared with ``@op`` (``hangar.rpc.registry``): ``(ctx, args)``, a coroutine or, for a watch, an
# async generator. Named by its shape so the kernel does not import the RPC layer; the server's ``OpRegistry``
# checks each carries its ``OpSpec``.
OpFunction = Callable[..., Awaitable[Any] | AsyncIterator[Any]]


class StepBody(Protocol):
    """A pipeline step body: an async function of one step, declared with ``hangar.pipelines.body`` (which
    attaches what the pipelines part reads). The kernel does not know what a step is, so the step is ``Any``
    here; the pipelines part checks each body's declaration when it builds its registry."""

    def __call__(self, step: Any, /) -> Awaitable[Any]: ...


# A part's folders outside ``<dataDir>/<workspaceId>/`` holding files of a workspace (its pipeline run folders); a
# folder directly inside one of the data directory's top folders, named by a generated id.
WorkspaceFolders = Callable[[AppContext, str], Awaitable[list[Path]]]


@dataclass(frozen=True)
class FolderFinders:
    """Every part's ``workspace_folders``, handed over by the composition (``server.storage`` counts them). Kept
    beside ``Part`` rather than in the retention part, so that building a context does not import that part and,
    through its ops, the RPC layer."""

    finders: tuple[WorkspaceFolders, ...]


@dataclass(frozen=True)
class Part:
    """``start`` runs after the databases open (create and ``ctx.provide`` services, resume work);
    ``stop`` runs at shutdown in reverse order of start."""

    name: str
    ops: Sequence[OpFunction] = ()
    routes: Sequence[BaseRoute] = ()
    migrations: Sequence[MigrationSet] = ()
    events: Sequence[type[DomainEvent]] = ()
    settings: Sequence[SettingSpec] = ()  # workspace settings keys this part owns
    # Server-wide settings keys this part owns (kept by the identity part in the server database).
    server_settings: Sequence[SettingSpec] = ()
    # Pipeline step bodies this part contributes; the composition hands every part's to the pipelines part.
    bodies: Sequence[StepBody] = ()
    # The seq after which this part still needs a workspace's events (``hangar.core.retention``: never pruned).
    event_floor: EventFloor | None = None
    # Folders outside ``<dataDir>/<workspaceId>/`` holding a workspace's files (counted as its own by
    # ``server.storage``): ``(app, workspace_id) -> [folders]``.
    workspace_folders: WorkspaceFolders | None = None
    start: Callable[[AppContext], Awaitable[None]] | None = None
    stop: Callable[[AppContext], Awaitable[None]] | None = None


def kernel_part() -> Part:
    """The kernel's own workspace tables (domain events, audit, settings, guardrails) as a part: every server and
    command opens them first, since every part writes events and audit rows. Its server settings are the owner's
    trusted-host-exec switch (``hangar.core.confine``), the disk quotas of confined code (``hangar.core.disks``) and
    the lease lapse (``hangar.core.lapse``)."""
    return Part(
        name="kernel",
        migrations=[KERNEL_MIGRATIONS, SEALED_MIGRATIONS],
        server_settings=[TRUSTED_HOST_EXEC_SPEC, *DISK_SPECS, LAPSE_SPEC],
    )
