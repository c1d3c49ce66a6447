"""The authority counter and the one in-memory cache it guards.

Authentication runs on every use of a credential (every RPC frame, every authenticated HTTP request), so what it
reads (credentials, roles, the server owner, the session policy, the pairing flag) is kept in memory, but only
for as long as the server database's ``authority`` change counter stays put: triggers bump it in the same
transaction as any change to users, workspaces, memberships, credentials or server settings, made by this
process or any other (``hangar admin owner-token`` while the server runs, a second server). Every decision reads
the counter first (a few microseconds), so none acts on a copy another process has made stale.

One cache serves the settings, the memberships and the credentials alike: any change drops every copy at once,
so a decision never mixes a fresh role with a stale credential.
"""

from __future__ import annotations

from typing import Any

from hangar.core.stamps import StampedCache

AUTHORITY = "authority"  # the counter's name in the server database (migration i0002)

# Keys: ("server",) -> ServerAuthority; ("role", workspace, user) -> Role | None;
# ("device", token hash) and ("device-id", device id) -> (Device, User) | None.
AuthorityCache = StampedCache[tuple[str, ...], Any]
