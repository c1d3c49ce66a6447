"""How the MCP door runs an op: as the caller, through the same dispatcher as the RPC socket.

A tool call, a resource read and a subscription are each op calls here, never their own code path: the
dispatcher's checks in the socket's order (credential, server owner, role, arguments, guardrails), the op's
handler, its audit rows marked ``door: mcp``. The dispatcher and the authority exist only once the server has
started, after the SDK's server (which names the handlers) is built: ``bind`` hands them over.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from hangar.core.principal import Principal
from hangar.core.requestids import request_scope
from hangar.errors import HangarError
from hangar.rpc.authority import Authority
from hangar.rpc.context import OpContext
from hangar.rpc.dispatcher import Ask, Dispatcher
from hangar.rpc.mcp.backchannel import Progress, asker
from hangar.rpc.mcp.request import principal_of
from hangar.rpc.registry import OpRegistry, OpSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """Who calls an op through the door: the credential of the request, the caller the gate authenticated from
    it for that very request (``None``: the dispatcher authenticates it), the JSON-RPC request id, and how an
    ask-first guardrail asks them (``None``: it refuses)."""

    token: str
    principal: Principal | None
    request_id: Any
    ask: Ask | None


class OpRunner:
    """The ops of ``registry``, run through the dispatcher; ``authority`` is also who the gate asks."""

    def __init__(self, registry: OpRegistry) -> None:
        self.registry = registry
        self.dispatcher: Dispatcher | None = None
        self.authority: Authority | None = None  # None until the server has started

    def bind(self, dispatcher: Dispatcher, authority: Authority) -> None:
        self.dispatcher, self.authority = dispatcher, authority

    async def run(
        self, ctx: Any, token: str, op_name: str, args: dict[str, Any], progress: Progress | None = None
    ) -> Any:
        """One op as the caller of the request the SDK serves (``ctx``); a watch op answers its first reply and
        stops."""
        caller = Caller(token, principal_of(ctx), getattr(ctx, "request_id", None), asker(ctx))
        return await self.call(caller, op_name, args, progress)

    async def call(self, caller: Caller, op_name: str, args: dict[str, Any], progress: Progress | None = None) -> Any:
        """One op as ``caller``: what every handler and the tool-call hot path (``exchange``) run."""
        spec = self.registry.get(op_name)
        assert spec is not None and self.dispatcher is not None
        with request_scope():  # the SDK runs a session's requests in its own tasks: each call gets its id here
            op_ctx, parsed = await self.dispatcher.prepare(
                caller.token,
                caller.request_id,
                spec,
                args,
                door="mcp",
                ask=caller.ask,
                progress=progress,
                principal=caller.principal,
            )
            if spec.kind != "watch":
                return await self.dispatcher.call(op_ctx, parsed)
            watch = self.dispatcher.watch(op_ctx, parsed)
            try:
                return spec.result_to_wire(await first(spec.name, watch))
            finally:
                await watch.aclose()  # type: ignore[attr-defined]

    async def start_watch(
        self, ctx: Any, token: str, spec: OpSpec, args: dict[str, Any]
    ) -> tuple[AsyncIterator[Any], OpContext]:
        """A watch op as the caller, started: its first reply (the state a read gives) is taken, so a refusal or a
        missing record raises here rather than in whoever follows the watch."""
        assert self.dispatcher is not None
        op_ctx, parsed = await self.dispatcher.prepare(
            token, ctx.request_id, spec, args, door="mcp", principal=principal_of(ctx)
        )
        watch = self.dispatcher.watch(op_ctx, parsed)
        try:
            await first(spec.name, watch)
        except HangarError:
            await watch.aclose()  # type: ignore[attr-defined]
            raise
        return watch, op_ctx


async def first(name: str, watch: Any) -> Any:
    """A watch's first reply; what is not a ``HangarError`` is logged and answered as an internal error, as the
    dispatcher does for every other op (the exception's text never reaches the caller)."""
    try:
        return await anext(watch)
    except HangarError:
        raise
    except Exception as exc:
        log.exception("op %s failed", name)
        raise HangarError(f"{name} failed with an internal error") from exc
