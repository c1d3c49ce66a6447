"""``subscriptions/listen``: how clients on the 2026-07-28 revision follow resources (CONTRACTS.md section 8: watch
ops are subscribable resources).

That revision has no sessions and no ``resources/subscribe``: a client opts in by one long request whose answer is
the stream. The SDK serves the request (an SSE answer, the acknowledgement first, every frame stamped with the
request's id) and offers a generic handler fed by a server-wide bus of events; ours differs in where events come
from. Each resource the client names is followed by its watch op, run as the caller through the dispatcher, so a
resource the caller may not see is refused before anything is acknowledged, and every change is sent only while
the caller still may see it (checked again before each), exactly as a ``resources/subscribe`` follow.

Changes are level triggers ("read it again"): while the client has not taken the last one, further changes of the
same resource fold into it, so a slow client costs one entry per resource, never a growing queue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp.types as mt
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ResourceUpdated, event_to_notification

from hangar.errors import HangarError

# A started follow of one resource: the watch, its first reply already taken (the dispatcher ends it once the
# caller may no longer see what it reports).
Follow = AsyncIterator[Any]
StartFollow = Callable[[str], Awaitable[Follow]]


class Listening:
    """The listen streams the endpoint serves; ``close`` ends them all gracefully (the server stopping)."""

    def __init__(self) -> None:
        self._wakes: set[asyncio.Event] = set()
        self.closed = False

    @property
    def open_streams(self) -> int:
        return len(self._wakes)

    async def serve(
        self, ctx: Any, params: mt.SubscriptionsListenRequestParams, uris: list[str], start: StartFollow
    ) -> mt.SubscriptionsListenResult:
        """One listen request, from its acknowledgement until the client leaves (which cancels this) or the
        server stops (which answers the request's result, the protocol's graceful end)."""
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        follows: dict[str, Follow] = {}
        pumps: list[asyncio.Task[None]] = []
        changed: set[str] = set()
        wake = asyncio.Event()
        try:
            for uri in uris:
                follows[uri] = await start(uri)  # refused: the request fails naming why, nothing acknowledged
            wanted = params.notifications
            # The catalogue's lists never change while the server runs: those kinds are honoured and never sent.
            honored = mt.SubscriptionFilter(
                tools_list_changed=True if wanted.tools_list_changed else None,
                prompts_list_changed=True if wanted.prompts_list_changed else None,
                resources_list_changed=True if wanted.resources_list_changed else None,
                resource_subscriptions=list(follows) or None,
            )
            ack = mt.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
            self._wakes.add(wake)
            await ctx.session.send_notification(
                mt.SubscriptionsAcknowledgedNotification(params=ack), related_request_id=ctx.request_id
            )
            loop = asyncio.get_running_loop()
            for uri, follow in follows.items():
                pumps.append(loop.create_task(_pump(uri, follow, changed, wake), name=f"mcp-listen:{uri}"))
            follows = {}  # each pump closes its own watch now
            while not self.closed:
                await wake.wait()
                wake.clear()
                while changed and not self.closed:
                    uri = changed.pop()
                    notification = event_to_notification(ResourceUpdated(uri=uri), meta)
                    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
            return mt.SubscriptionsListenResult(_meta=meta)
        finally:
            self._wakes.discard(wake)
            for task in pumps:
                task.cancel()
            for watch in follows.values():
                with contextlib.suppress(Exception):
                    await watch.aclose()  # type: ignore[attr-defined]
            await asyncio.gather(*pumps, return_exceptions=True)

    def close(self) -> None:
        self.closed = True
        for wake in self._wakes:
            wake.set()


async def _pump(uri: str, watch: Follow, changed: set[str], wake: asyncio.Event) -> None:
    """The watch's events, folded into the stream's set of changed resources while the caller may see them."""
    try:
        async for _event in watch:
            changed.add(uri)
            wake.set()
    except HangarError:
        return  # the caller may no longer see it
    finally:
        await watch.aclose()  # type: ignore[attr-defined]
