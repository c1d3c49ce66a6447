"""Rig ops (CONTRACTS section 6) with the spec's guardrail action classes.

The ``use`` tools and ``rig.open`` / ``rig.exec`` declare ``enclosureControl``, ``networkEgress`` and
``processSpawn`` (``mobile_use`` and ``sim_use`` also ``packageInstall``); ``rig_close`` declares
``enclosureControl``; ``rig_list`` declares none. Mutating verbs are refused while another person holds
control; observations stay allowed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, NoReturn

from pydantic import Field, StrictBool, StrictStr

from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.errors import NotFound, Refused, Unavailable
from hangar.identity import IdentityService
from hangar.rigs.actions import BROWSER_USE, COMPUTER_USE, MOBILE_USE, SIM_USE, VerbTable, parse_action
from hangar.rigs.backends.simulator import simulator_refusal
from hangar.rigs.egress.allowlist import validate_patterns
from hangar.rigs.lanes.browseruse import use_browser
from hangar.rigs.lanes.computeruse import use_computer
from hangar.rigs.lanes.consent import grants_of
from hangar.rigs.lanes.mobileuse import use_mobile
from hangar.rigs.lanes.signing import Lane, LaneSigner
from hangar.rigs.lifecycle.backendchoice import asks_vm
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.live.notices import EgressGrantedNotice, PhaseNotice, RigNotice
from hangar.rigs.live.rigs import LiveRig
from hangar.rigs.model import LIVE_PHASES, CloseReason, Phase, RigRecord, Surface
from hangar.rigs.results import (
    ActionLogEntry,
    ActionResult,
    Controller,
    ControlState,
    DisplaySize,
    ExecOutput,
    HostsGranted,
    LaneUrl,
    RigClosed,
    RigOpened,
    RigPorts,
    RigRow,
    RigSnapshot,
)
from hangar.rpc.context import OpContext
from hangar.rpc.guardrails import Guardrails
from hangar.rpc.registry import Args, op

log = logging.getLogger(__name__)

USE_ACTIONS = ("enclosureControl", "networkEgress", "processSpawn")
DEVICE_ACTIONS = (*USE_ACTIONS, "packageInstall")
MAX_OUTPUT_CHARS = 1 << 20  # per stream: a reply frame stays a reasonable size; the rest is cut and flagged
DEFAULT_EXEC_TIMEOUT_MS = 120_000

RigId = Annotated[StrictStr, Field(min_length=1, max_length=64)]


def manager(ctx: OpContext) -> RigManager:
    found = ctx.app.maybe_service(RigManager)
    if found is None:
        raise Unavailable("the rig manager is not running on this server")
    return found


async def guarded(ctx: OpContext, rig_id: str) -> RigManager:
    """The manager, once the rig's own space has been held to a credential limited to one space and, for a
    change, to the guardrails: the dispatcher checks the workspace and a space named in args, but rig ops name a
    rig, not a space. A rig not found is left to the op to answer."""
    mgr = manager(ctx)
    changes = ctx.spec.mutating or bool(ctx.spec.actions)
    if changes or ctx.principal.space_id is not None:
        rec = await mgr.store.get(ctx.ws, rig_id)
        if rec is not None:
            ctx.principal.check_space(rec.space_id, action=ctx.spec.name, subject=f"rig {rig_id}")
            if changes:
                await ctx.app.service(Guardrails).check(await ctx.db(), ctx.ws, ctx.spec, rec.space_id)
    return mgr


def signer(ctx: OpContext) -> LaneSigner:
    return LaneSigner(ctx.app.secrets, ctx.app.clock)


class RigArgs(Args):
    rig_id: RigId = Field(alias="rigId")


class OpenArgs(Args):
    space_id: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    surface: StrictStr
    engine: StrictStr | None = None
    backend: StrictStr | None = Field(
        default=None,
        description="computer rigs: enclosure (the default), fullvm-kvm or fullvm-tcg (a full VM, only when asked)",
    )
    image_id: Annotated[StrictStr, Field(min_length=1, max_length=64)] | None = Field(
        default=None,
        alias="imageId",
        description="a full VM's imported image (rigs.images); without it the newest imported for the backend",
    )


@op("rig.open", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def rig_open(ctx: OpContext, args: OpenArgs) -> RigOpened:
    """Open a rig for a space (one terminal per conversation, reused); answers once booted or still booting. A
    computer rig runs on the ``enclosure`` backend (Xvfb and a window manager in the namespace sandbox) unless
    ``backend`` asks for a full VM (``fullvm-kvm``, refused where KVM is unusable, or ``fullvm-tcg``) booted from
    an imported image (``imageId``)."""
    live = await manager(ctx).opener.open(
        ctx.ws,
        args.space_id,
        args.surface,
        args.engine,
        ctx.principal,
        on_status=ctx.report,
        backend=args.backend,
        image_id=args.image_id,
    )
    return RigOpened(rig_id=live.id, phase=live.phase, status_detail=live.status_detail)


class ListArgs(Args):
    include_closed: StrictBool = Field(default=False, alias="includeClosed")


async def _controller(ctx: OpContext, user_id: str | None) -> Controller | None:
    if user_id is None:
        return None
    user = await ctx.app.service(IdentityService).get_user(user_id)
    return Controller(user_id=user_id, display_name=user.display_name if user else user_id)


async def _row(ctx: OpContext, rec: RigRecord, live: LiveRig | None) -> RigRow:
    # In-memory phases lead the row only while live; final phases are read from the row with their reason.
    phase = live.phase if live is not None and live.phase in LIVE_PHASES else rec.phase
    return RigRow(
        rig_id=rec.id,
        space_id=rec.space_id,
        surface=rec.surface,
        engine=rec.engine,
        backend=rec.backend,
        status=phase,
        status_detail=live.status_detail if live is not None else rec.status_detail,
        display=DisplaySize.parse(rec.display),
        controller=await _controller(ctx, live.controller if live is not None else rec.controller),
        close_reason=rec.close_reason,
        memory_mb=rec.memory_mb,
        resident_mb=live.resident_mb if live is not None else rec.resident_mb,
        created_at=rec.created_at,
        closed_at=rec.closed_at,
    )


@op("rig_list", kind="read", scope="workspace", min_role="member")
async def rig_list(ctx: OpContext, args: ListArgs) -> list[RigRow]:
    """The workspace's rigs with surface, status, display and controller (closed ones on request); for a
    credential limited to one space, that space's rigs."""
    only = ctx.principal.space_id
    return [
        await _row(ctx, rec, live)
        for rec, live in await manager(ctx).records(ctx.ws, include_closed=args.include_closed)
        if only is None or rec.space_id == only
    ]


@op("rig.get", kind="read", scope="workspace", min_role="member")
async def rig_get(ctx: OpContext, args: RigArgs) -> RigRow:
    """One rig as ``rig_list`` shows it, closed or not. A read: it neither wakes the rig nor counts as activity
    against its idle timeout."""
    rec, live = await (await guarded(ctx, args.rig_id)).record(ctx.ws, args.rig_id)
    return await _row(ctx, rec, live)


@op("rig_close", kind="destructive", scope="workspace", actions=("enclosureControl",))
async def rig_close(ctx: OpContext, args: RigArgs) -> RigClosed:
    """Destroy a rig and discard its disk; its row stays for the audit trail."""
    mgr = await guarded(ctx, args.rig_id)
    rec = await mgr.closer.close(ctx.ws, args.rig_id, CloseReason.requested, ctx.principal)
    await ctx.audit("rig.close", f"rig:{rec.id}", {"reason": rec.close_reason.value if rec.close_reason else None})
    return RigClosed(rig_id=rec.id, phase=rec.phase, close_reason=rec.close_reason)


class ExecArgs(RigArgs):
    command: Annotated[StrictStr, Field(min_length=1, max_length=131_072)]
    timeout_ms: Annotated[int, Field(ge=1, le=3_600_000, strict=True)] = Field(
        default=DEFAULT_EXEC_TIMEOUT_MS, alias="timeoutMs"
    )


def _clip(text: str) -> tuple[str, bool]:
    return (text[:MAX_OUTPUT_CHARS], True) if len(text) > MAX_OUTPUT_CHARS else (text, False)


@op("rig.exec", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def rig_exec(ctx: OpContext, args: ExecArgs) -> ExecOutput:
    """Run a shell command in a terminal rig or a full VM (bash -lc, as the rig user, in its home; in a VM through
    its guest agent)."""
    mgr = await guarded(ctx, args.rig_id)
    live = await mgr.get_live(ctx.ws, args.rig_id)
    if live.surface is not Surface.terminal and not asks_vm(live.backend):
        raise Refused(f"rig.exec drives terminal rigs and full VMs; rig {live.id} is a {live.surface.value} rig")
    result = await mgr.exec(ctx.ws, args.rig_id, args.command, args.timeout_ms / 1000, ctx.principal)
    stdout, cut_out = _clip(result.stdout)
    stderr, cut_err = _clip(result.stderr)
    return ExecOutput(
        exit_code=result.exit_code,
        stdout=stdout,
        stderr=stderr,
        timed_out=result.timed_out,
        truncated=cut_out or cut_err,
    )


def _control_reply(live: LiveRig) -> ControlState:
    return ControlState(rig_id=live.id, controller=live.controller)


@op("rig.takeControl", kind="mutate", scope="workspace", actions=("enclosureControl",))
async def rig_take_control(ctx: OpContext, args: RigArgs) -> ControlState:
    """A person takes control: others' mutating verbs are refused until it is handed back."""
    return _control_reply(await (await guarded(ctx, args.rig_id)).take_control(ctx.ws, args.rig_id, ctx.principal))


@op("rig.releaseControl", kind="mutate", scope="workspace", actions=("enclosureControl",))
async def rig_release_control(ctx: OpContext, args: RigArgs) -> ControlState:
    """Hand control back (the holder, or a workspace admin for a stuck take-over)."""
    force = ctx.role is not None and ctx.role >= Role.admin
    return _control_reply(
        await (await guarded(ctx, args.rig_id)).release_control(ctx.ws, args.rig_id, ctx.principal, force=force)
    )


@op("rig.watch", kind="watch", scope="workspace", min_role="member", result=RigSnapshot, events=RigNotice)
async def rig_watch(ctx: OpContext, args: RigArgs) -> AsyncIterator[RigSnapshot | RigNotice]:
    """Watch a rig live: first its state, then its activity (phases, commands and their results, control,
    ports) until it ends. An open watch pins the rig against parking and idle reaping."""
    async with (await guarded(ctx, args.rig_id)).watch(ctx.ws, args.rig_id) as (live, queue):
        yield live.snapshot()
        while True:
            event = await queue.get()
            yield event
            if isinstance(event, PhaseNotice) and event.phase in (Phase.closed, Phase.failed):
                return


@op("rig.ports", kind="read", scope="workspace", min_role="member")
async def rig_ports(ctx: OpContext, args: RigArgs) -> RigPorts:
    """The rig's listening guest ports: forwarded ones with their host (and LAN) ports, then the rest."""
    return _ports_reply(await (await guarded(ctx, args.rig_id)).get_live(ctx.ws, args.rig_id))


def _ports_reply(live: LiveRig) -> RigPorts:
    return RigPorts(rig_id=live.id, limit=live.ports.limit, ports=live.ports.rows())


class SharePortArgs(RigArgs):
    guest_port: Annotated[int, Field(ge=1, le=65535, strict=True)] = Field(alias="guestPort")
    share: StrictBool = True


@op("rig.sharePort", kind="mutate", scope="workspace", actions=("enclosureControl", "networkEgress"))
async def rig_share_port(ctx: OpContext, args: SharePortArgs) -> RigPorts:
    """Share a forwarded port on the local network (an OS-assigned port on all interfaces), or stop sharing."""
    live = await (await guarded(ctx, args.rig_id)).share_port(
        ctx.ws, args.rig_id, args.guest_port, args.share, ctx.principal
    )
    return _ports_reply(live)


class GrantArgs(RigArgs):
    hosts: Annotated[
        list[Annotated[StrictStr, Field(min_length=1, max_length=253)]], Field(min_length=1, max_length=64)
    ]


@op("rig.grantHosts", kind="mutate", scope="workspace", min_role="admin", actions=("networkEgress",))
async def rig_grant_hosts(ctx: OpContext, args: GrantArgs) -> HostsGranted:
    """Add host names (exact or *.suffix) to one rig's egress allowlist."""
    mgr = await guarded(ctx, args.rig_id)
    async with mgr.acting(ctx.ws, args.rig_id, ctx.principal, mutating=True, what="rig.grantHosts") as (live, handle):
        await handle.grant_hosts(args.hosts)
        granted = validate_patterns(args.hosts)
        live.refusals.forget_granted(granted)
        live.notify(EgressGrantedNotice(hosts=sorted(granted)))
    await mgr.log_action(ctx.ws, args.rig_id, ctx.principal, "grantHosts", {"hosts": sorted(args.hosts)})
    await ctx.audit("rig.grantHosts", f"rig:{args.rig_id}", {"hosts": sorted(args.hosts)})
    return HostsGranted(rig_id=args.rig_id, granted=sorted(args.hosts))


async def _lane_url(ctx: OpContext, rig_id: str, lane: Lane, path: str, scheme_ws: bool) -> LaneUrl:
    live = await (await guarded(ctx, rig_id)).get_live(ctx.ws, rig_id)
    token, exp = signer(ctx).mint(lane, ctx.ws, live.id, ctx.principal.user_id)
    origin = ctx.app.settings.origin
    if scheme_ws:
        origin = "ws" + origin.removeprefix("http")
    target = f"{path}/{live.id}?sig={token}"
    return LaneUrl(url=f"{origin}{target}", path=target, sig=token, expires_at=exp)


@op("rig.fileLaneUrl", kind="read", scope="workspace", min_role="member")
async def rig_file_lane_url(ctx: OpContext, args: RigArgs) -> LaneUrl:
    """A signed URL for the rig's file lane (POST drops files in, GET ?p= reads a file) and its clipboard lane
    (/rig/clipboard/<rigId> with the same sig), for you only."""
    return await _lane_url(ctx, args.rig_id, "files", "/rig/files", scheme_ws=False)


# A terminal runs commands in the rig: minting one is held to the same guardrails as rig.exec.
@op("rig.terminalUrl", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def rig_terminal_url(ctx: OpContext, args: RigArgs) -> LaneUrl:
    """A signed WebSocket URL for a live terminal in the rig (PTY over the socket), for you only."""
    return await _lane_url(ctx, args.rig_id, "terminal", "/rig/terminal", scheme_ws=True)


@op("rig.liveViewUrl", kind="read", scope="workspace", min_role="member")
async def rig_live_view_url(ctx: OpContext, args: RigArgs) -> LaneUrl:
    """A signed WebSocket URL for the live view of a browser or computer rig (frames out; your input while you
    hold control), for you only."""
    return await _lane_url(ctx, args.rig_id, "watch", "/rig/live", scheme_ws=True)


class UseArgs(RigArgs):
    action: Any = None


def check_surface(table: VerbTable, live: LiveRig | None) -> None:
    if live is not None and live.surface is not table.surface:
        raise Refused(
            f"{table.tool} drives {table.surface.value} rigs; rig {live.id} is a {live.surface.value} rig "
            "(a terminal is never reused as a drivable desktop)"
        )


async def _use(ctx: OpContext, table: VerbTable, args: UseArgs) -> NoReturn:
    """Parse totally first (a malformed action names its field), then answer for the surface's backend (none
    drives these surfaces yet, so the answer is ``unavailable``)."""
    parsed = parse_action(table, args.action)
    mgr = await guarded(ctx, args.rig_id)
    try:
        live = await mgr.get_live(ctx.ws, args.rig_id)
    except NotFound:
        live = None
    check_surface(table, live)
    if live is not None and not parsed.observation:
        mgr.check_control(live, ctx.principal, f"{table.tool} {parsed.verb.name}")
    if parsed.verb.crossing is not None:
        await grants_of(ctx).require(ctx.principal, parsed.verb.crossing)
    raise Unavailable(
        f"{table.tool} {parsed.verb.name}: {table.surface.value} rigs need {table.needs}, "
        "which this server does not have yet (planned)"
    )


@op("computer_use", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def computer_use(ctx: OpContext, args: UseArgs) -> ActionResult:
    """Drive a desktop rig with one action (screenshot, clicks, keys, typing, clipboard...). Coordinates are
    guest pixels in the current mode and every screenshot states the display size; what a selection holds comes
    fenced as untrusted data."""
    parsed = parse_action(COMPUTER_USE, args.action)
    mgr = await guarded(ctx, args.rig_id)
    check_surface(COMPUTER_USE, await mgr.get_live(ctx.ws, args.rig_id))
    return ActionResult(await use_computer(mgr, ctx.ws, args.rig_id, parsed, ctx.principal))


@op("browser_use", kind="mutate", scope="workspace", actions=USE_ACTIONS)
async def browser_use(ctx: OpContext, args: UseArgs) -> ActionResult:
    """Drive a browser rig with one action (navigate, click, fill, extract, screenshot...). Every result
    carries ``engine``; what the page returns comes fenced as untrusted data."""
    parsed = parse_action(BROWSER_USE, args.action)
    mgr = await guarded(ctx, args.rig_id)
    check_surface(BROWSER_USE, await mgr.get_live(ctx.ws, args.rig_id))
    return ActionResult(await use_browser(mgr, ctx.ws, args.rig_id, parsed, ctx.principal))


@op("mobile_use", kind="mutate", scope="workspace", actions=DEVICE_ACTIONS)
async def mobile_use(ctx: OpContext, args: UseArgs) -> ActionResult:
    """Drive a phone rig (an emulator or a device over adb) with one action (tap, swipe, keys, apps, shell
    argv...). What the device hands back comes fenced as untrusted data."""
    parsed = parse_action(MOBILE_USE, args.action)
    mgr = await guarded(ctx, args.rig_id)
    check_surface(MOBILE_USE, await mgr.get_live(ctx.ws, args.rig_id))
    return ActionResult(await use_mobile(mgr, ctx.ws, args.rig_id, parsed, ctx.principal))


@op("sim_use", kind="mutate", scope="workspace", actions=DEVICE_ACTIONS)
async def sim_use(ctx: OpContext, args: UseArgs) -> ActionResult:
    """Drive a platform simulator rig with one action (tap, swipe, keys, apps, spawn argv...); they run only on a
    macOS server, so elsewhere a well-formed action answers ``unavailable`` saying so."""
    parsed = parse_action(SIM_USE, args.action)
    raise Unavailable(simulator_refusal(f"sim_use {parsed.verb.name}"))


@op("rig.actionLog", kind="read", scope="workspace", min_role="admin")
async def rig_action_log(ctx: OpContext, args: RigArgs) -> list[ActionLogEntry]:
    """A rig's action log, oldest first: principal, per-rig sequence, verb, outcome, details (never content)."""
    mgr = await guarded(ctx, args.rig_id)
    if await mgr.store.get(ctx.ws, args.rig_id) is None:
        raise NotFound(f"no rig {args.rig_id} in this workspace")
    await mgr.flush_folds(ctx.ws, args.rig_id)  # the screenshots this process still counts are shown too
    return [ActionLogEntry.model_validate(e) for e in await mgr.store.actions(ctx.ws, args.rig_id)]


OPS: list[OpFunction] = [
    rig_open,
    rig_list,
    rig_close,
    rig_exec,
    rig_take_control,
    rig_release_control,
    rig_watch,
    rig_ports,
    rig_get,
    rig_share_port,
    rig_grant_hosts,
    rig_file_lane_url,
    rig_terminal_url,
    rig_live_view_url,
    computer_use,
    browser_use,
    mobile_use,
    sim_use,
    rig_action_log,
]
