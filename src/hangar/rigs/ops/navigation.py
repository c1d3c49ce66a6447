"""A person moving a browser rig's page from its live view: the address bar (go to an address, back, forward,
reload, stop) and the page list (move to another page of the session), through ``rig.navigate``.

The verbs are ``browser_use``'s, carried out, followed across pages and written to the action log by it
(``browser.use_browser``), under the rule of the live view's input (``liveview``) rather than an agent's: the caller
must hold control of the rig (``rig.takeControl``). So a member watching cannot move the page an agent or another
person is using; a read-only credential is refused by the dispatcher (this op changes the rig), and the guardrails'
read-only mode and ask-first rules hold as for every rig change (``rig.guarded``).

The reply is the session's page list for the person's own screen: addresses and titles are the pages' own text,
unfenced (an agent reads them fenced, through ``browser_use pages``). Every open live view of the rig hears of the
move at once (``pagefeed.poke``).
"""

from __future__ import annotations

from typing import Any

from hangar.core.part import OpFunction
from hangar.rigs.actions import BROWSER_USE, VerbTable, parse_action
from hangar.rigs.errors import ControlHeld
from hangar.rigs.lanes.browseruse import use_browser
from hangar.rigs.lanes.pagefeed import page_row, poke
from hangar.rigs.ops.rig import USE_ACTIONS, RigArgs, check_surface, guarded
from hangar.rigs.results import BrowserPages, PageRow
from hangar.rpc.context import OpContext
from hangar.rpc.registry import op

# What a person's address bar and page list do: browser_use's own verbs, nothing else through this op.
PERSON_VERBS = VerbTable.of(
    "rig.navigate",
    BROWSER_USE.surface,
    BROWSER_USE.needs,
    *(BROWSER_USE.verbs[name] for name in ("navigate", "history", "reload", "stop_loading", "switch_page")),
)


class NavigateArgs(RigArgs):
    action: Any = None


@op("rig.navigate", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def rig_navigate(ctx: OpContext, args: NavigateArgs) -> BrowserPages:
    """Move a browser rig's page as the person holding control: ``{"action": "navigate", "url"}``, ``{"action":
    "history", "direction": "back"|"forward"}``, ``{"action": "reload"}``, ``{"action": "stop_loading"}`` or
    ``{"action": "switch_page", "page"}`` (an id the page list gave). Answers the session's pages afterwards."""
    parsed = parse_action(PERSON_VERBS, args.action)
    mgr = await guarded(ctx, args.rig_id)
    live = await mgr.get_live(ctx.ws, args.rig_id)
    check_surface(BROWSER_USE, live)
    verb = parsed.verb.name
    if live.controller != ctx.principal.user_id:
        why = (
            "take control of the rig first (the address bar moves the page only for the person holding control)"
            if live.controller is None
            else "another person holds control of the rig; they must hand it back first"
        )
        await mgr.log_action(ctx.ws, live.id, ctx.principal, verb, {"by": "rig.navigate"}, "refused")
        raise ControlHeld(f"rig.navigate {verb} refused: {why}")
    try:
        moved = await use_browser(mgr, ctx.ws, live.id, parsed, ctx.principal)
    finally:
        poke(live)  # whatever happened, the live views read the pages again
    async with mgr.acting(ctx.ws, live.id, ctx.principal, mutating=False, what="rig.navigate pages") as (_l, handle):
        session = handle.browser()
        pages = await session.pages()
    status = moved.get("status")
    return BrowserPages(
        rig_id=live.id,
        engine=session.engine,
        status=status if isinstance(status, int) else None,
        pages=[PageRow.model_validate(page_row(p)) for p in pages],
    )


OPS: list[OpFunction] = [rig_navigate]
