"""``IdentityService``: the one face other parts look up (``app.service(IdentityService)``) for users,
workspaces, memberships, device credentials, server settings and authentication.

Behind it each concern is a small class of its own module, given what it needs: ``ServerSettings``
(``server_settings``), ``Users`` (``users``), ``Workspaces`` (``workspaces``: memberships and roles too),
``Devices`` (``devices``), ``Provisioning`` (``provisioning``: a new person's rows in one transaction),
``Authenticator`` (``authentication``) and ``LastUses`` (``last_use``). What they
share is explicit and made here: the database, the clock, and the one authority cache (``authority``) that the
settings, the roles and the credentials are kept in while the authority counter stays put. The face's names are
the pieces' own methods, so each signature and docstring lives in one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.context import AppContext
from hangar.core.settings import SettingSpec
from hangar.core.stamps import Stamp, engine_stamp
from hangar.errors import NotFound, Unavailable
from hangar.identity.authentication import Authenticator
from hangar.identity.authority import AUTHORITY, AuthorityCache
from hangar.identity.devices import Devices
from hangar.identity.last_use import LastUses
from hangar.identity.provisioning import Provisioning
from hangar.identity.server_settings import ServerSettings
from hangar.identity.users import Users
from hangar.identity.workspaces import Relay, Workspaces


class IdentityService:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock,
        stamp: Stamp | None = None,
        relay: Relay | None = None,
        settings: Iterable[SettingSpec] = (),
        deleted: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """``stamp`` reads the authority counter (default: from ``engine``); ``relay`` carries events staged with
        membership changes to their workspaces; ``settings`` are the server settings other parts declared;
        ``deleted`` reads the server's record of deleted workspaces (kept by the composition, which deletes)."""
        self._deleted = deleted
        authority = AuthorityCache(stamp or engine_stamp(engine, AUTHORITY))
        server = ServerSettings(engine, clock, authority, settings)
        users = Users(engine, clock)
        workspaces = Workspaces(engine, clock, authority, relay)
        uses = LastUses(engine, clock)
        devices = Devices(engine, clock, users, server, uses)
        checks = Authenticator(engine, clock, authority, server, users, uses)
        provisioning = Provisioning(engine, clock, relay)

        # The authority counter now: changes whenever anything an authorization decision reads changes.
        self.authority_stamp = authority.current
        # Server settings, the pairing flag, the session policy, the server owner.
        self.server_authority = server.server_authority
        self.get_setting = server.get_setting
        self.set_setting = server.set_setting
        self.pairing_enabled = server.pairing_enabled
        self.set_pairing_enabled = server.set_pairing_enabled
        self.session_policy = server.session_policy
        self.set_session_policy = server.set_session_policy
        self.is_server_owner = server.is_server_owner
        self.ensure_server_owner = server.ensure_server_owner
        # Users.
        self.get_user = users.get_user
        self.find_user_by_email = users.find_user_by_email
        self.find_user_by_sso = users.find_user_by_sso
        self.find_sign_in = users.find_sign_in
        self.list_users = users.list_users
        self.create_user = users.create_user
        self.update_user = users.update_user
        self.deactivate_user = users.deactivate_user
        self.reactivate_user = users.reactivate_user
        # A new person with their memberships and first credential, in one transaction.
        self.provision_user = provisioning.provision_user
        # Workspaces, members and roles.
        self.create_workspace = workspaces.create_workspace
        self.get_workspace = workspaces.get_workspace
        self.list_workspace_ids = workspaces.list_workspace_ids
        self.workspaces_of = workspaces.workspaces_of
        self.role_of = workspaces.role_of
        self.members = workspaces.members
        self.add_member = workspaces.add_member
        self.set_role = workspaces.set_role
        self.remove_member = workspaces.remove_member
        # Device credentials.
        self.issue_device = devices.issue_device
        self.new_device = devices.new_device
        self.rotate_device_token = devices.rotate_device_token
        self.device_of_token = devices.device_of_token
        self.revoke_device_id = devices.revoke_device_id
        self.extend_device = devices.extend_device
        self.revoke_minted = devices.revoke_minted
        self.narrow_agent_devices = devices.narrow_agent_devices
        self.get_device = devices.get_device
        self.list_devices = devices.list_devices
        self.revoke_device = devices.revoke_device
        self.rename_device = devices.rename_device
        # Authentication, and writing back last-used times at shutdown.
        self.authenticate = checks.authenticate
        self.recheck_device = checks.recheck_device
        self.authenticate_bearer = checks.authenticate_bearer
        self.flush = uses.flush

    async def workspace_deleted(self, workspace_id: str) -> bool:
        """Whether the server's record says ``workspace_id`` was deleted (read from the database on each call, so
        a deletion another process made counts at once). Asked only once a caller turned out not to be a member,
        to say why."""
        return self._deleted is not None and await self._deleted(workspace_id)


async def usable_workspace_ids(app: AppContext) -> list[str]:
    """Every workspace whose database opens. A damaged one is reported by ``Databases`` (once) and left out, so
    one broken workspace never keeps the rest from starting or serving."""
    usable = []
    for workspace_id in await app.service(IdentityService).list_workspace_ids():
        try:
            await app.dbs.workspace(workspace_id)
        except (NotFound, Unavailable):
            continue
        usable.append(workspace_id)
    return usable
