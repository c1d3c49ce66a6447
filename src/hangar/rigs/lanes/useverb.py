"""One ``use`` verb carried out on a rig, whatever its surface (``browseruse``, ``computeruse``): the clipboard
consent of a verb that crosses, the take-over check of a mutating one (``RigManager.acting``), a bound on how long
the rig may take, and one row in the rig's action log with the verb's outcome (``ok``, ``refused`` for a person
holding control or a consent not given, ``error`` with its code), whatever happened."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from hangar.core.principal import Principal
from hangar.errors import HangarError, Unavailable
from hangar.rigs.actions.base import ParsedAction
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.errors import ControlHeld
from hangar.rigs.lanes.consent import ClipboardGrants, ConsentRequired
from hangar.rigs.lifecycle.manager import RigManager

Result = dict[str, Any]
Details = dict[str, Any]
Run = Callable[[RigHandle], Awaitable[tuple[Result, Details]]]


async def use_verb(
    mgr: RigManager,
    ws: str,
    rig_id: str,
    parsed: ParsedAction,
    principal: Principal,
    *,
    tool: str,
    run: Run,
    bound_s: float,
    answerer: str,
    logged: Details,
) -> Result:
    """``run`` the verb on the rig within ``bound_s`` (else ``Unavailable`` saying ``answerer`` did not answer);
    its result, or the error it raised, logged with ``logged`` beside the verb's own details either way."""
    verb = parsed.verb.name
    what = f"{tool} {verb}"
    details: Details = {}
    outcome = "error"
    try:
        if parsed.verb.crossing is not None:
            consent = await ClipboardGrants(mgr.app.dbs.server, mgr.app.clock).require(principal, parsed.verb.crossing)
            details["consent"] = consent.why
        async with mgr.acting(ws, rig_id, principal, mutating=not parsed.observation, what=what) as (_, handle):
            try:
                result, said = await asyncio.wait_for(run(handle), bound_s)
            except TimeoutError:
                raise Unavailable(f"{what}: {answerer} did not answer in time") from None
            details = {**details, **said}
        outcome = "ok"
        return result
    except (ControlHeld, ConsentRequired):
        outcome = "refused"
        raise
    except HangarError as exc:
        details = {**details, "error": exc.code}
        raise
    finally:
        record = mgr.log_observation if parsed.observation else mgr.log_action
        await record(ws, rig_id, principal, verb, {**details, **logged}, outcome)
