"""What an op run through the MCP door says to the client while it runs: progress notifications, where the
client asked for them, and the question an ask-first guardrail puts to the person, where the client can ask one.

Both ride the request's way back to the client (its SSE answer, or the session's stream), which the SDK offers
only when the request is served its whole way; a call answered in one exchange (``exchange``) has none, so a
question there sends the request back to the SDK before anything has run (``exchange`` asks so itself).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp.types as mt
from mcp.shared.exceptions import MCPError, NoBackChannelError

from hangar.rpc.dispatcher import Ask
from hangar.rpc.guardrails import AskFirst

ASK_TIMEOUT_S = 300.0  # how long an ask-first question waits for the person before the call stays refused
HEARTBEAT_S = 1.0
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve", "description": "Let this one call run."}},
    "required": ["approve"],
}

Progress = Callable[[str], Awaitable[None]]

# What a client declares when it can show a question (built once: every tool call asks).
ELICITATION = mt.ClientCapabilities(elicitation=mt.ElicitationCapability())


def asker(ctx: Any) -> Ask | None:
    """An ask-first guardrail becomes a question to the person in their client, where the client can show one
    (it declared elicitation, and this exchange has a way back); otherwise the call stays refused."""
    session = getattr(ctx, "session", None)
    if session is None or not session.check_client_capability(ELICITATION):
        return None

    async def ask(rule: AskFirst) -> bool:
        message = f"{rule.message.split(' refused: ', 1)[-1]}. Approve this one call?"
        try:
            async with asyncio.timeout(ASK_TIMEOUT_S):
                answer = await session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=ctx.request_id)
        except (NoBackChannelError, MCPError, TimeoutError, ValueError):
            return False  # no way to ask, a client that failed to answer, or no answer in time: still refused
        return answer.action == "accept" and (answer.content or {}).get("approve") is True

    return ask


def progress_token(ctx: Any, params: mt.CallToolRequestParams) -> Any:
    """The client's progress token, when it asked for progress on a request that has a way back to it."""
    token = (params.meta or {}).get("progress_token")
    return None if getattr(ctx, "session", None) is None else token


@contextlib.asynccontextmanager
async def progress(ctx: Any, params: mt.CallToolRequestParams, name: str) -> AsyncIterator[Progress | None]:
    """When the client asked for progress (``_meta.progressToken``): a notification every second while the op
    runs, carrying what the op last reported, and one at once for each report. Otherwise nothing is sent."""
    token = progress_token(ctx, params)
    session = getattr(ctx, "session", None)
    if token is None or session is None:
        yield None
        return
    sent, said = 0, ["working"]
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def send() -> None:
        nonlocal sent
        sent += 1  # progress only grows, as the protocol asks; there is no total to announce
        message = f"{name}: {said[0]} ({loop.time() - started:.0f} s)"
        with contextlib.suppress(Exception):  # a client that went away stops hearing; the op goes on
            await session.send_progress_notification(
                token, float(sent), message=message, related_request_id=ctx.request_id
            )

    async def report(message: str) -> None:
        said[0] = message
        await send()

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            await send()

    heartbeat = loop.create_task(beat())
    try:
        yield report
    finally:
        heartbeat.cancel()
