"""Creating a workspace: its database first, complete, then the row that makes it a workspace.

The database is built with its first event (``identity.workspaceCreated``) and audit row under a temporary name and
renamed into place (``Databases.create_workspace``); only then are the workspace's row and its owner's
membership written. A kill at any moment leaves either no workspace or a complete one (an orphaned database
without a row is never listed, and nothing reaches it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast, get_args

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.core.migrating import Seed
from hangar.core.principal import Role
from hangar.core.settings import SettingSpec
from hangar.errors import Forbidden, InvalidArgs
from hangar.identity.events import WorkspaceCreated
from hangar.identity.models import Workspace
from hangar.identity.service import IdentityService

SETTING_CREATORS = "workspaceCreators"
Creators = Literal["serverOwner", "members", "anyone"]
CREATORS: tuple[str, ...] = get_args(Creators)
DEFAULT_CREATORS: Creators = "members"


def _check_creators(value: object) -> Creators:
    if isinstance(value, str) and value in CREATORS:
        return cast(Creators, value)
    raise InvalidArgs(f"{SETTING_CREATORS} must be one of {', '.join(CREATORS)}", field=SETTING_CREATORS)


CREATORS_SPEC = SettingSpec(SETTING_CREATORS, "Who may create workspaces on this server.", _check_creators)


async def workspace_creators(app: AppContext) -> Creators:
    """Who may create workspaces: the server owner only, also members of any workspace (the default: not
    guests, not people who belong nowhere), or anyone signed in. Read on every call: the CLI may change it."""
    value = await app.service(IdentityService).get_setting(SETTING_CREATORS)
    return value if value in CREATORS else DEFAULT_CREATORS


async def check_may_create(app: AppContext, user_id: str) -> None:
    if await app.service(IdentityService).is_server_owner(user_id):
        return
    who = await workspace_creators(app)
    if who == "anyone":
        return
    if who == "members" and any(
        role >= Role.member for _, role in await app.service(IdentityService).workspaces_of(user_id)
    ):
        return
    allowed = "the server owner" if who == "serverOwner" else "the server owner and members of a workspace"
    raise Forbidden(f"workspaces.create is allowed to {allowed} on this server (setting {SETTING_CREATORS})")


async def create_workspace(
    app: AppContext,
    name: str,
    owner_id: str,
    *,
    by: str,
    workspace_id: str | None = None,
    action: str = "workspaces.create",
    seed: Sequence[Seed] = (),
) -> Workspace:
    """A new workspace owned by ``owner_id``; ``by`` is the audit principal. An import names the id it prepared
    files for, audits its own ``action`` and writes its records with ``seed`` in the database being built."""
    ws_id = workspace_id or new_id()
    created = WorkspaceCreated(workspace_id=ws_id, name=name, owner_id=owner_id)
    audited = app.audit.seed(principal=by, action=action, target=f"workspace:{ws_id}")
    await app.dbs.create_workspace(ws_id, seed=[app.bus.seed(created), audited, *seed])
    ws = await app.service(IdentityService).create_workspace(name, owner_id, workspace_id=ws_id)
    await app.bus.created(ws.id)
    return ws
