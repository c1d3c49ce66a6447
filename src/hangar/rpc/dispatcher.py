"""Turning one request frame into one reply, in the contract's order of checks.

Order: frame shape → op known → ``workspace_id`` present (before any database opens) → credential still
valid (session policy on every use) → server-owner ops → membership and minimum role (``admit``) → arguments
parsed totally (the message names the field) → the space they name, for a credential limited to one →
guardrails (``guard``) → the handler (an op naming a rig or a run, not a space, holds its space to the same check
itself). A part acting for a person without calling an op (the chat bridge) is held to the same checks through
``authorize``. Only this module and the HTTP edge turn errors into wire shapes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from hangar.core.audit import through
from hangar.core.context import AppContext
from hangar.core.dbfailures import DatabaseGone, gone
from hangar.core.metric_labels import UNKNOWN_OP
from hangar.core.metrics import Stopwatch
from hangar.core.principal import Principal, Role
from hangar.errors import Elsewhere, Forbidden, HangarError, InvalidArgs, UnknownOp, WorkspaceRequired
from hangar.rpc.access import Revocable
from hangar.rpc.authority import Authority
from hangar.rpc.context import OpContext
from hangar.rpc.guardrails import AskFirst, Guardrails
from hangar.rpc.registry import CONTRACT_SNAKE_CASE, OpRegistry, OpSpec, spellings
from hangar.rpc.relay import OpRelay, Relayable, RelayTokens, relay_watch

log = logging.getLogger(__name__)

# Asks the caller's person whether one ask-first call may run (a door that can ask: the MCP endpoint).
Ask = Callable[[AskFirst], Awaitable[bool]]


async def _asked_where_relayed(_rule: AskFirst) -> bool:
    """The ``ask`` of a call relayed here whose caller approved it on the server that asked them."""
    return True


def error_frame(req_id: Any, err: HangarError) -> dict[str, Any]:
    return {"id": req_id, "ok": False, "error": err.to_dict()}


MAX_ID_CHARS = 256


def check_request_id(req_id: Any) -> None:
    """A request id is a string of at most ``MAX_ID_CHARS`` or a number (``InvalidArgs`` otherwise)."""
    if not isinstance(req_id, str | int) or isinstance(req_id, bool):
        raise InvalidArgs("id must be a string or a number", field="id")
    if isinstance(req_id, str) and len(req_id) > MAX_ID_CHARS:
        raise InvalidArgs(f"id must be at most {MAX_ID_CHARS} characters", field="id")


def invalid_args(exc: ValidationError, model: type[BaseModel], given: Mapping[str, Any]) -> InvalidArgs:
    """The first validation failure, naming the field as the caller spelled it (``given`` holds their keys)."""
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"]]
    if not loc:
        return InvalidArgs(f"args: {first['msg']}", field="args")
    key = loc[0]
    names = spellings(model, key)
    if first["type"] == "missing":
        # Nothing to echo: follow the style of the caller's other keys, else the contract's spelling.
        snake_keys, camel_keys = any("_" in k for k in given), any(k != k.lower() for k in given)
        snake = snake_keys if snake_keys != camel_keys else not CONTRACT_SNAKE_CASE.isdisjoint(names)
        key = next((n for n in names if ("_" in n) == snake), key)
    field = ".".join([key, *loc[1:]])
    if first["type"] == "missing":
        return InvalidArgs(f"args.{field} is required", field=field)
    if first["type"] == "extra_forbidden":
        twin = next((n for n in names if n != key and n in given), None)
        if twin is not None:
            return InvalidArgs(f"args.{twin} and args.{key} are one argument spelled twice; send one", field=key)
        return InvalidArgs(f"args.{field} is not a known argument", field=field)
    return InvalidArgs(f"args.{field}: {first['msg']}", field=field)


class Dispatcher:
    def __init__(self, app: AppContext, registry: OpRegistry, guardrails: Guardrails, authority: Authority) -> None:
        self.app = app
        self.registry = registry
        self.guardrails = guardrails
        self.authority = authority
        self.relay = OpRelay(RelayTokens(app.secrets, app.clock))

    def parse_frame(self, frame: Any) -> tuple[Any, OpSpec, dict[str, Any]]:
        """Check the frame's shape and find its op; returns (id, spec, args)."""
        if not isinstance(frame, dict):
            raise InvalidArgs("a request frame must be a JSON object with id, op and args", field="frame")
        req_id = frame.get("id")
        check_request_id(req_id)
        op_name = frame.get("op")
        if not isinstance(op_name, str):
            raise InvalidArgs("op must be a string naming the operation", field="op")
        args = frame.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArgs("args must be a JSON object", field="args")
        spec = self.registry.get(op_name)
        if spec is None:
            # Counted under one label: the name is the caller's, and a label never takes a caller's value.
            self.ended(UNKNOWN_OP, "socket", UnknownOp.code, 0.0)
            raise UnknownOp(f"there is no op named {op_name!r}")
        return req_id, spec, args

    async def prepare(
        self,
        token: str,
        req_id: Any,
        spec: OpSpec,
        raw: dict[str, Any],
        door: str = "socket",
        ask: Ask | None = None,
        progress: Callable[[str], Awaitable[None]] | None = None,
        principal: Principal | None = None,
        *,
        relayed: bool = False,
        approved: bool = False,
    ) -> tuple[OpContext, BaseModel]:
        """Everything short of running the handler: the contract's checks in order. A refusal is counted here
        (``hangar_rpc_calls`` by its code); a call that passes is counted when it ends (``call``, ``watch``).
        ``relayed``: another server relayed the call here (``hangar.rpc.relay``), where the caller ``approved``
        its ask-first guardrail if they did."""
        clock = Stopwatch()
        if relayed and approved:
            ask = _asked_where_relayed
        try:
            return await self._prepare(token, req_id, spec, raw, door, ask, progress, principal, clock, relayed)
        except HangarError as err:
            self.ended(spec.name, door, err.code, clock.seconds())
            raise

    async def _prepare(
        self,
        token: str,
        req_id: Any,
        spec: OpSpec,
        raw: dict[str, Any],
        door: str,
        ask: Ask | None,
        progress: Callable[[str], Awaitable[None]] | None,
        principal: Principal | None,
        clock: Stopwatch,
        relayed: bool,
    ) -> tuple[OpContext, BaseModel]:
        args = dict(raw)
        workspace_id: str | None = None
        if spec.scope == "workspace":
            ws = args.pop("workspace_id", None)
            if ws is None:
                raise WorkspaceRequired(f"{spec.name} is workspace-scoped: pass args.workspace_id")
            if not isinstance(ws, str) or not ws:
                raise InvalidArgs("args.workspace_id must be a non-empty string", field="workspace_id")
            workspace_id = ws
        # A principal without a credential: the server vouches for the caller (an agent, the chat bridge's person).
        vouched = principal if not token else None
        if principal is None:  # given only by a door that checked this credential for this very request
            principal = await self.authority.authenticate(token)
        role = await self.admit(principal, spec, workspace_id)
        try:
            parsed = spec.args_model.model_validate(args)
        except ValidationError as exc:
            raise invalid_args(exc, spec.args_model, args) from None
        approved = False
        if workspace_id is not None:
            # Whichever spelling the caller used, the parsed model holds it under its Python name.
            space_id = getattr(parsed, "space_id", None)
            space = space_id if isinstance(space_id, str) else None
            approved = await self.guard(principal, spec, workspace_id, space, door=door, ask=ask)
        # A call can be relayed to the server holding what it names, with its credential or as vouched for.
        relayable = Relayable(token, raw, relayed=relayed, approved=approved, vouched=vouched)
        ctx = OpContext(self.app, principal, spec, workspace_id, role, req_id, door, progress, clock, relayable)
        return ctx, parsed

    async def authorize(
        self,
        principal: Principal,
        spec: OpSpec,
        workspace_id: str,
        *,
        space_id: str | None = None,
        door: str,
        ask: Ask | None = None,
    ) -> Role | None:
        """The checks of ``prepare`` for something done on ``principal``'s behalf that amounts to ``spec`` without
        being a call of it (the chat bridge opening a space of its own kind): the same rules in the same order,
        so a part acting for a person never keeps a second copy of them. Returns the principal's role."""
        role = await self.admit(principal, spec, workspace_id)
        await self.guard(principal, spec, workspace_id, space_id, door=door, ask=ask)
        return role

    async def admit(self, principal: Principal, spec: OpSpec, workspace_id: str | None) -> Role | None:
        """Who may call ``spec`` at all: the credential's reach, the server owner's ops, membership and the op's
        minimum role. Returns the principal's role in the workspace (``None`` for a server-scoped op)."""
        principal.check_reach(workspace_id, changes=spec.mutating, action=spec.name)
        if spec.people_only and principal.agent_id is not None:
            raise Forbidden(f"{spec.name} is for people only: an agent cannot call it")
        if spec.server_owner and not principal.is_server_owner:
            raise Forbidden(f"{spec.name} is reserved to the server owner")
        if workspace_id is None:
            return None
        role = await self.role_in(workspace_id, principal)
        if role is None:
            if await self.authority.workspace_deleted(workspace_id):
                raise Forbidden(f"workspace {workspace_id} was deleted")
            raise Forbidden(f"you are not a member of workspace {workspace_id}")
        if role < spec.min_role:
            raise Forbidden(f"{spec.name} needs the {spec.min_role.name} role; you are {role.name}")
        return role

    async def guard(
        self,
        principal: Principal,
        spec: OpSpec,
        workspace_id: str,
        space_id: str | None,
        *,
        door: str,
        ask: Ask | None = None,
    ) -> bool:
        """Where ``spec`` may run: the space a credential is limited to, then the guardrails of the workspace and
        of ``space_id`` (read-only mode; ask-first, approved through ``ask`` where the door can ask). True when
        the caller approved an ask-first rule for this call."""
        principal.check_space(space_id, action=spec.name)
        engine = await self.app.dbs.workspace(workspace_id)
        try:
            await self.guardrails.check(engine, workspace_id, spec, space_id)
        except AskFirst as rule:
            if ask is None or not await ask(rule):
                raise
            if ask is not _asked_where_relayed:  # the server that asked recorded the approval
                await self._approved(workspace_id, principal, spec, rule, door)
            return True
        return False

    async def role_in(self, workspace_id: str, principal: Principal) -> Role | None:
        """An agent is a member of its own workspace (``check_reach`` kept it there); a person holds the role
        their membership says, read at the authority their credential was checked against."""
        if principal.agent_id is not None:
            return Role.member
        return await self.authority.role_of(workspace_id, principal.user_id, as_of=principal.authority)

    async def _approved(self, workspace_id: str, principal: Principal, spec: OpSpec, rule: AskFirst, door: str) -> None:
        """The person approved one ask-first call where it was made: the approval is an audit row of its own."""
        with through(door):
            details = {"op": spec.name, "actionClasses": sorted(rule.classes)}
            await self.app.audit.append(
                workspace_id,
                principal=principal.label,
                action="guardrails.approved",
                target=f"op:{spec.name}",
                details=details,
            )

    async def call(self, ctx: OpContext, args: BaseModel) -> Any:
        try:
            try:
                with through(ctx.door):
                    result = ctx.spec.result_to_wire(await ctx.spec.handler(ctx, args))
            except Elsewhere as moved:
                # What the call names is held by another server: that server answers it, as the caller.
                if ctx.relayable is None or ctx.relayable.relayed:
                    raise
                result = await self.relay.call(moved, ctx.spec.name, ctx.relayable, ctx.door)
        except HangarError as err:
            self.counted(ctx, err.code)
            raise
        except Exception as exc:
            if (down := self.database_gone(exc)) is not None:
                self.counted(ctx, down.code)
                raise down from exc
            self.counted(ctx, HangarError.code)
            # The exception text may hold anything (paths, values); it goes to the log, not the caller.
            log.exception("op %s failed", ctx.spec.name)
            raise HangarError(f"{ctx.spec.name} failed with an internal error") from exc
        self.counted(ctx, "ok")
        return result

    def database_gone(self, exc: BaseException) -> DatabaseGone | None:
        """``exc`` as ``unavailable`` naming the database when it is the loss of the PostgreSQL connection (logged
        as one line, not a traceback: the server pauses, nothing is broken), else None."""
        down = gone(self.app.dbs.postgresql_url, exc)
        if down is not None:
            log.warning("%s", down.message)
        return down

    def counted(self, ctx: OpContext, outcome: str) -> None:
        """One call of ``ctx.spec`` ended with ``outcome`` (``ok`` or an error code), timed from its ``prepare``."""
        self.ended(ctx.spec.name, ctx.door, outcome, ctx.clock.seconds() if ctx.clock else 0.0)

    def ended(self, op: str, door: str, outcome: str, seconds: float) -> None:
        """Count one call, and log it at debug level (its name, door and outcome: never its arguments)."""
        self.app.metrics.rpc_call(op, door, outcome, seconds)
        if log.isEnabledFor(logging.DEBUG):
            fields = {"op": op, "door": door, "outcome": outcome, "seconds": round(seconds, 6)}
            log.debug("op %s through %s: %s", op, door, outcome, extra=fields)

    def watch(self, ctx: OpContext, args: BaseModel) -> AsyncIterator[Any]:
        """A watch op's replies: its first one, then its events, each delivered only once its caller has been
        checked again (``recheck_watch``), whichever door streams them."""
        return self._delivered(ctx, self._watched(ctx, args))

    async def _watched(self, ctx: OpContext, args: BaseModel) -> AsyncIterator[Any]:
        """The handler's replies; when what it watches is held by another server, that server's, as the caller
        (``relay_watch``): the first reply read back into its declared result, the events as they come."""
        gen = ctx.spec.handler(ctx, args)
        try:
            first = await anext(gen)
        except StopAsyncIteration:
            return
        except Elsewhere as moved:
            if ctx.relayable is None or ctx.relayable.relayed or ctx.relayable.vouched is not None:
                raise  # a watch is followed as its caller, over a socket, with the caller's own credential
            relayed = relay_watch(moved, ctx.spec.name, ctx.relayable)
            try:
                yield ctx.spec.result.validate_python(await anext(relayed))
                async for event in relayed:
                    yield event
            finally:
                await relayed.aclose()
            return
        try:
            yield first
            async for item in gen:
                yield item
        finally:
            await gen.aclose()

    async def _delivered(self, ctx: OpContext, gen: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The first reply answers checks made a moment ago (``prepare``); every later event is held to the
        caller's access at the moment it is handed on, so nothing that happens after a removal is acknowledged
        reaches the removed member. The caller is checked again whenever the authority counter moved since the
        last check (and every second, for what time alone ends): otherwise a delivery costs one counter read."""
        gate = Revocable(functools.partial(self.recheck_watch, ctx), stamp=self.authority.authority_stamp)
        first = True
        try:
            async for item in gen:
                if not first:
                    await gate.admit()
                else:
                    self.counted(ctx, "ok")  # a watch counts as a call up to its first reply
                first = False
                yield item
        except HangarError as err:
            if first:
                self.counted(ctx, err.code)
            raise
        except Exception:
            if first:
                self.counted(ctx, HangarError.code)
            raise
        finally:
            aclose = getattr(gen, "aclose", None)
            if aclose is not None:
                await aclose()

    async def recheck_watch(self, ctx: OpContext) -> None:
        """Raise the reason a running watch may no longer deliver: its credential no longer works
        (``Unauthenticated``), or its caller no longer holds what the op needs (``Forbidden``). By the
        credential's id, not its token: an OAuth refresh rotates the token of a credential that lives on."""
        principal = await self.authority.recheck_device(ctx.principal.device_id)
        refusal = await self.watch_refusal(ctx, principal)
        if refusal is not None:
            raise refusal

    async def watch_refusal(self, ctx: OpContext, principal: Principal) -> Forbidden | None:
        """Why ``principal`` (the watch's caller, checked again) may no longer follow what ``ctx`` opened."""
        spec = ctx.spec
        if spec.server_owner and not principal.is_server_owner:
            return Forbidden(f"{spec.name} is reserved to the server owner; the watch ended")
        if ctx.workspace_id is None:
            return None
        role = await self.role_in(ctx.workspace_id, principal)
        if role is None:
            return Forbidden(f"you are no longer a member of workspace {ctx.workspace_id}; the watch ended")
        if role < spec.min_role:
            return Forbidden(
                f"{spec.name} needs the {spec.min_role.name} role; you are now {role.name}; the watch ended"
            )
        return None
