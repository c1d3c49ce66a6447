"""Rig host credentials: what a ``hangar rig-host`` proves it may run rigs for this server with.

``hrh_<id>_<secret>``, minted by an admin (``hangar admin rig-host-credential create``), kept as a hash, listed
and revoked like worker credentials (``hangar.core.hostcreds``). Scoped to rig hosting: only the rig hosts' socket
(``wire.PATH``) verifies it; the RPC socket, the MCP endpoint, ``/metrics`` and every other route authenticate
device credentials only and refuse it. A revoked one is refused when its host connects and, within
``route.RECHECK_S``, on the socket of a host connected with it.
"""

from __future__ import annotations

from hangar.core.hostcreds import CredentialKind
from hangar.rigs.hosts.tables import rig_host_credentials

PREFIX = "hrh_"
KIND = CredentialKind("rig host credential", PREFIX, "hangar admin rig-host-credential create", rig_host_credentials)
