"""Which server process a live rig's calls and lanes belong to.

A rig runs in the process that opened it (``ownership``); its row records where the other servers of the same
records reach that process (``server_url``, ``Settings.serving_origin``). A call or lane for a rig this process
does not run, whose row is live and names another server, is that server's to answer: ``Elsewhere`` tells the
RPC layer and the lanes to relay it there (``hangar.rpc.relay``, ``hangar.rigs.lanes.relay``). Only the holder
touches the rig or settles its row, so two servers never drive one rig.
"""

from __future__ import annotations

from hangar.errors import Elsewhere, Unavailable
from hangar.rigs.model import RigRecord


def refuse_if_elsewhere(rec: RigRecord, here: str | None) -> None:
    """Raise for a live row of a rig another process runs (``here``: this process's origin, or None when it
    serves nothing): ``Elsewhere`` naming that server, or ``Unavailable`` when that process serves no calls."""
    if not rec.live or (rec.server_url is not None and rec.server_url == here):
        return
    if rec.server_url is None:
        raise Unavailable(
            f"rig {rec.id} runs in a process that serves no calls or lanes (a command, not a server); use it from there"
        )
    # The message names no address: the servers' own network is not the caller's business.
    raise Elsewhere(f"rig {rec.id} runs on another server of this installation", origin=rec.server_url)
