"""What the bridge sends to a chat provider, with the workspace's secrets blanked.

Agents' replies stream into chat threads, and people outside the workspace may read a shared channel: a reply
that repeats a secret (a command agent printing its environment, a model told one by what it read) would publish
it. Every text the bridge sends (a message, an update, a streamed reply's markdown, chunks and blocks, a thread's
title and status) goes through ``Redactor.encoded`` of every secret ``SecretValues`` knows for the workspace
(its agents' API keys and secret variables), read again for each call so a secret just set is blanked at once.
A secret split across two appends of one stream is not caught here (the command adapter blanks its own secrets in
the stream as it flows). How many were blanked (never what) is an audit row ``chat.redacted``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hangar.core.context import AppContext
from hangar.core.redact import outgoing_redactor

# The arguments of ``ChatOutbound``'s calls that carry text someone reads; the others address the message.
TEXT_ARGS = frozenset({"text", "markdown_text", "chunks", "blocks", "title", "status"})
_READS = frozenset({"conversations_info", "users_info"})  # calls that send no text


class RedactingApi:
    """``api`` (the provider's ``BridgeApi``) with every text argument cleaned before it is sent."""

    def __init__(self, api: Any, app: AppContext, workspace_id: str, provider: str) -> None:
        self._api = api
        self._app = app
        self._workspace_id = workspace_id
        self._provider = provider

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._api, name)
        if name in _READS or name.startswith("_") or not callable(call):
            return call
        return self._redacted(name, call)

    def _redacted(self, name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def sending(*args: Any, **kwargs: Any) -> Any:
            redactor = await outgoing_redactor(self._app, self._workspace_id)
            cleaned = {k: redactor.clean_json(v) if k in TEXT_ARGS else v for k, v in kwargs.items()}
            if redactor.count:
                await self._app.audit.append(
                    self._workspace_id,
                    principal=f"chat:{self._provider}",
                    action="chat.redacted",
                    target=f"channel:{kwargs.get('channel', '')}",
                    details={"call": name, "redacted": redactor.count},
                )
            return await call(*args, **cleaned)

        return sending
