"""Rig host credentials: what a ``hangar rig-host`` proves it may run rigs for this server with.

``hrh_<id>_<secret>``, minted by an admin (``hangar admin rig-host-credential create``), kept as a hash, listed
and revoked like worker credentials (``hangar.core.hostcreds``). Scoped to rig hosting: only the rig hosts' socket
(``wire.PATH``) verifies it; the RPC socket, the MCP endpoint, ``/metrics`` and every other route authenticate
device credentials only and refuse it. A revoked one is refused when its host connects and, within
``route.RECHECK_S``, on the socket of a host connected with it.

Its limits are the admin's, set when minting it, never the host's word: the most memory its host is counted as
having (``--max-memory-budget``, ``MAX_BUDGET_MIN`` to ``MAX_BUDGET_MAX`` MB, default
``tables.DEFAULT_MAX_BUDGET_MB``; a host saying more is given this maximum), and the workspaces whose rigs may be
placed on it (``--workspace``, repeated; none named: every workspace).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hangar.core.hostcreds import CredentialKind, HostCredential
from hangar.errors import InvalidArgs
from hangar.rigs.hosts.tables import DEFAULT_MAX_BUDGET_MB, rig_host_credentials

PREFIX = "hrh_"
MAX_BUDGET_MIN = 512  # MB: what ``hangar rig-host --memory-budget`` accepts, and so the maximum's range
MAX_BUDGET_MAX = 1024 * 1024
WORKSPACES_MAX = 100  # workspaces one credential may name


def max_budget_mb(credential: HostCredential) -> int:
    return int(credential.limits.get("max_budget_mb") or DEFAULT_MAX_BUDGET_MB)


def workspace_ids(credential: HostCredential) -> frozenset[str] | None:
    """The workspaces whose rigs the credential's host may run; None: every workspace."""
    named = credential.limits.get("workspace_ids")
    return None if named is None else frozenset(str(w) for w in named)


def serves(credential: HostCredential, workspace_id: str) -> bool:
    named = workspace_ids(credential)
    return named is None or workspace_id in named


def limits(max_mb: int, workspaces: Sequence[str], known: Sequence[str]) -> dict[str, Any]:
    """The limits of a credential to mint, checked (``known``: the ids of the workspaces that exist)."""
    if not MAX_BUDGET_MIN <= max_mb <= MAX_BUDGET_MAX:
        raise InvalidArgs(
            f"a rig host credential's maximum budget is {MAX_BUDGET_MIN} to {MAX_BUDGET_MAX} MB", field="maxBudgetMb"
        )
    named = list(dict.fromkeys(w.strip() for w in workspaces))
    if len(named) > WORKSPACES_MAX:
        raise InvalidArgs(f"a rig host credential names at most {WORKSPACES_MAX} workspaces", field="workspaces")
    for workspace_id in named:
        if workspace_id not in known:
            raise InvalidArgs(f"no workspace {workspace_id!r} on this server", field="workspaces")
    return {"max_budget_mb": max_mb, "workspace_ids": named or None}


def describe(credential: HostCredential) -> str:
    named = workspace_ids(credential)
    where = "every workspace" if named is None else "workspaces " + ", ".join(sorted(named))
    return f"at most {max_budget_mb(credential)} MB; {where}"


KIND = CredentialKind(
    "rig host credential", PREFIX, "hangar admin rig-host-credential create", rig_host_credentials, describe
)
