"""A ChatOutbound that records every call (refused ones too) and refuses on demand with a provider code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hangar.chat.errors import ChatProviderError
from hangar.chat.outbound import Block, ChatOutbound, Chunk
from hangar.core.clock import Clock


@dataclass
class Call:
    method: str
    kwargs: dict[str, Any]
    at: float
    refused: str | None = None

    @property
    def chunks(self) -> list[Mapping[str, Any]]:
        return list(self.kwargs.get("chunks") or [])

    @property
    def prose(self) -> str:
        return "".join(c["text"] for c in self.chunks if c["type"] == "markdown_text")

    def task_updates(self) -> list[Mapping[str, Any]]:
        return [c for c in self.chunks if c["type"] == "task_update"]


@dataclass
class _Refusal:
    method: str
    code: str
    times: int
    when: Callable[[dict[str, Any]], bool] | None


@dataclass
class RecordingOutbound:
    clock: Clock
    calls: list[Call] = field(default_factory=list)
    _refusals: list[_Refusal] = field(default_factory=list)
    _next_ts: int = 0

    def refuse(
        self, method: str, code: str, *, times: int = 1, when: Callable[[dict[str, Any]], bool] | None = None
    ) -> None:
        """The next ``times`` calls of ``method`` (matching ``when``) fail with ``code``."""
        self._refusals.append(_Refusal(method, code, times, when))

    def of(self, *methods: str) -> list[Call]:
        return [c for c in self.calls if c.method in methods and c.refused is None]

    def landed_prose(self) -> str:
        return "".join(c.prose for c in self.of("start_stream", "append_stream", "stop_stream"))

    async def _record(self, method: str, kwargs: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        call = Call(method, kwargs, self.clock.monotonic())
        self.calls.append(call)
        for r in self._refusals:
            if r.method == method and r.times > 0 and (r.when is None or r.when(kwargs)):
                r.times -= 1
                call.refused = r.code
                raise ChatProviderError(r.code)

    def _ts(self) -> str:
        self._next_ts += 1
        return f"1700000000.{self._next_ts:06d}"

    async def post_message(
        self, *, channel: str, text: str, thread_ts: str | None = None, blocks: Sequence[Block] | None = None
    ) -> str:
        await self._record("post_message", {"channel": channel, "text": text, "thread_ts": thread_ts, "blocks": blocks})
        return self._ts()

    async def update_message(self, *, channel: str, ts: str, text: str, blocks: Sequence[Block] | None = None) -> None:
        await self._record("update_message", {"channel": channel, "ts": ts, "text": text, "blocks": blocks})

    async def post_ephemeral(self, *, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
        await self._record("post_ephemeral", {"channel": channel, "user": user, "text": text, "thread_ts": thread_ts})

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
        await self._record(
            "start_stream",
            {
                "channel": channel,
                "thread_ts": thread_ts,
                "recipient_user_id": recipient_user_id,
                "recipient_team_id": recipient_team_id,
                "markdown_text": markdown_text,
                "chunks": chunks,
                "task_display_mode": task_display_mode,
            },
        )
        return self._ts()

    async def append_stream(
        self, *, channel: str, ts: str, markdown_text: str | None = None, chunks: Sequence[Chunk] | None = None
    ) -> None:
        await self._record(
            "append_stream", {"channel": channel, "ts": ts, "markdown_text": markdown_text, "chunks": chunks}
        )

    async def stop_stream(
        self,
        *,
        channel: str,
        ts: str,
        markdown_text: str | None = None,
        chunks: Sequence[Chunk] | None = None,
        blocks: Sequence[Block] | None = None,
    ) -> None:
        await self._record(
            "stop_stream",
            {"channel": channel, "ts": ts, "markdown_text": markdown_text, "chunks": chunks, "blocks": blocks},
        )

    async def set_thread_status(self, *, channel: str, thread_ts: str, status: str) -> None:
        await self._record("set_thread_status", {"channel": channel, "thread_ts": thread_ts, "status": status})

    async def set_thread_title(self, *, channel: str, thread_ts: str, title: str) -> None:
        await self._record("set_thread_title", {"channel": channel, "thread_ts": thread_ts, "title": title})


def conforms(out: RecordingOutbound) -> ChatOutbound:
    """Typed use keeps the recorder in step with the protocol."""
    return out


def has_card(kwargs: dict[str, Any]) -> bool:
    return any(c["type"] in ("task_update", "plan_update") for c in kwargs.get("chunks") or [])
