"""The calls the bridge makes to a provider: post, update, stream, thread status and title.

Chunks and blocks are the provider's wire shapes as plain dicts (``{"type": "markdown_text", "text": ...}``,
``{"type": "task_update", "id": ..., "title": ..., "status": ...}``, a ``plan`` block of ``task_card``s). Every
method raises ``hangar.chat.errors.ChatProviderError`` when the provider refuses or cannot be reached; a rate
limit is waited out inside (the reply is never dropped), so callers never see ``ratelimited``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

Chunk = Mapping[str, Any]
Block = Mapping[str, Any]


class ChatOutbound(Protocol):
    async def post_message(
        self, *, channel: str, text: str, thread_ts: str | None = None, blocks: Sequence[Block] | None = None
    ) -> str:
        """Post a message; returns its ts."""

    async def update_message(
        self, *, channel: str, ts: str, text: str, blocks: Sequence[Block] | None = None
    ) -> None: ...

    async def post_ephemeral(self, *, channel: str, user: str, text: str, thread_ts: str | None = None) -> None: ...

    async def start_stream(
        self,
        *,
        channel: str,
        thread_ts: str,
        recipient_user_id: str | None = None,
        recipient_team_id: str | None = None,
        markdown_text: str | None = None,
        chunks: Sequence[Chunk] | None = None,
        task_display_mode: str | None = None,
    ) -> str:
        """Open a streamed message; returns its ts."""

    async def append_stream(
        self, *, channel: str, ts: str, markdown_text: str | None = None, chunks: Sequence[Chunk] | None = None
    ) -> None: ...

    async def stop_stream(
        self,
        *,
        channel: str,
        ts: str,
        markdown_text: str | None = None,
        chunks: Sequence[Chunk] | None = None,
        blocks: Sequence[Block] | None = None,
    ) -> None: ...

    async def set_thread_status(self, *, channel: str, thread_ts: str, status: str) -> None:
        """The is-thinking line under a DM thread; an empty status clears it."""

    async def set_thread_title(self, *, channel: str, thread_ts: str, title: str) -> None: ...
