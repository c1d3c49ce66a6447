"""Following resources: ``resources/subscribe`` in a session (the 2025 revisions) and ``subscriptions/listen``
streams (2026-07-28, served by ``listen``). Either way a resource is followed by its watch op run as the caller
(``Resources.start_watch``), and a change is sent only while the caller still may see it.

A session's follows are tasks kept here by (session id, URI). The SDK drops notifications to a session that is
gone without a word, so nothing else would ever end them: they end with their session (its connection's exit
stack), with ``resources/unsubscribe``, or when the server stops (``close``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp.types as mt
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.shared.exceptions import MCPError

from hangar.errors import HangarError
from hangar.rpc.mcp.listen import Follow, Listening
from hangar.rpc.mcp.ops import OpRunner
from hangar.rpc.mcp.request import connection_stack, principal_of, session_id_of, token_of
from hangar.rpc.mcp.resources import Resources
from hangar.rpc.mcp.sessions import TOO_MANY_SESSIONS, SessionCap

MAX_SUBSCRIPTIONS = 32  # per session, and per listen stream

Following = dict[tuple[str, str], asyncio.Task[None]]  # by (session id, uri)


class Subscriptions:
    """The follows of ``resources``; a listen stream is served by ``listening`` and holds one of ``seats``."""

    def __init__(self, resources: Resources, ops: OpRunner, seats: SessionCap, listening: Listening) -> None:
        self.resources = resources
        self.ops = ops
        self.seats = seats
        self.listening = listening
        self.following: Following = {}
        self._watched_sessions: set[str] = set()

    async def close(self) -> None:
        """The server is stopping: listen streams end gracefully, session follows are stopped."""
        self.listening.close()
        await self._stop_following(dict(self.following))

    async def subscribe(self, ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        self.resources.followable(uri)
        if not session_id_of(ctx):
            raise MCPError(mt.INVALID_PARAMS, "subscriptions need a session: initialize and send its Mcp-Session-Id")
        session_id = session_id_of(ctx)
        key = (session_id, uri)
        if key not in self.following and sum(k[0] == session_id for k in self.following) >= MAX_SUBSCRIPTIONS:
            raise MCPError(
                mt.INVALID_PARAMS, f"a session follows at most {MAX_SUBSCRIPTIONS} resources; unsubscribe one"
            )
        token = token_of(ctx) or ""
        watch, _op_ctx = await self.resources.start_watch(ctx, token, uri)
        previous = self.following.pop(key, None)
        if previous is not None:
            previous.cancel()
        self.following[key] = asyncio.get_running_loop().create_task(
            self._follow(key, watch, ctx.session), name=f"mcp-subscription:{uri}"
        )
        self._end_with_session(ctx, session_id)
        return mt.EmptyResult()

    async def unsubscribe(self, ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        task = self.following.pop((session_id_of(ctx), str(params.uri)), None)
        if task is not None:
            task.cancel()
        return mt.EmptyResult()

    async def listen(self, ctx: Any, params: mt.SubscriptionsListenRequestParams) -> mt.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): the named resources followed as ``resources/subscribe`` follows
        them, on one stream that holds a seat under the caller's caps while it is open (``listen``)."""
        if ctx.request_id is None:
            raise MCPError(mt.INVALID_REQUEST, "subscriptions/listen needs a request id: its frames carry it")
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(uris) > MAX_SUBSCRIPTIONS:
            raise MCPError(mt.INVALID_PARAMS, f"a listen stream follows at most {MAX_SUBSCRIPTIONS} resources")
        for uri in uris:
            self.resources.followable(uri)  # an unknown or unfollowable resource is refused before any work
        principal, token = principal_of(ctx), token_of(ctx) or ""
        seat = "credential" if principal is None else self.seats.take(principal)
        if isinstance(seat, str):
            raise MCPError(TOO_MANY_SESSIONS, self.seats.refusal(seat, DEFAULT_SESSION_IDLE_TIMEOUT, listening=True))

        async def start(uri: str) -> Follow:
            watch, _op_ctx = await self.resources.start_watch(ctx, token, uri)
            return watch

        try:
            return await self.listening.serve(ctx, params, uris, start)
        finally:
            self.seats.give_back(seat)

    async def _follow(self, key: tuple[str, str], watch: Any, session: Any) -> None:
        """Each event of the watch becomes ``notifications/resources/updated``, while the caller still may see it
        (the dispatcher checks again before each and ends the watch: a member who left hears nothing more) and
        the session still listens."""
        try:
            async for _event in watch:
                try:
                    await session.send_resource_updated(key[1])
                except Exception:
                    return  # the session is gone
        except HangarError:
            return  # the caller may no longer see it
        finally:
            await watch.aclose()
            if self.following.get(key) is asyncio.current_task():
                del self.following[key]

    def _end_with_session(self, ctx: Any, session_id: str) -> None:
        """Follows end with their session. The connection's exit stack unwinds when the session ends (a DELETE,
        the idle timeout, the server stopping); the SDK offers it to handlers only through the session proxy."""
        stack = connection_stack(ctx)
        if stack is None or session_id in self._watched_sessions:
            return
        self._watched_sessions.add(session_id)

        async def end() -> None:
            self._watched_sessions.discard(session_id)
            await self._stop_following({k: t for k, t in self.following.items() if k[0] == session_id})

        stack.push_async_callback(end)

    async def _stop_following(self, follows: Following) -> None:
        for key, task in follows.items():
            if self.following.get(key) is task:
                del self.following[key]
            task.cancel()
        await asyncio.gather(*follows.values(), return_exceptions=True)
