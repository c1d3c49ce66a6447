"""One agent reply in a chat thread, streamed with its card over ``ChatOutbound`` or posted whole.

A ``ReplyStream`` follows one turn: the bridge feeds it the turn's steps (``set_setup``, ``on_reasoning_*``,
``on_tool_*``, ``on_text``) and ends it with ``finish``. While the turn runs it flushes at most once a second on
the injected clock, the card's news and the prose in one call; prose goes out as ``markdown_text`` chunks of at
most 256 characters, appends carry at most 3,800 characters cut at a paragraph, line or space boundary, and a
streamed message rolls over into a new one before it would hold 12,000 characters (or at once when the provider
ended it on its side), so no reply is ever cut. A reply over 39,000 characters is truncated with a pointer to the
product.

The fallbacks (spec, "Reply streaming and cards"):

- card refused on an append: the append is retried at once without it, and cards are dropped for the life of
  the connection (``ConnectionFlags`` is shared by every reply of one connection);
- prose refused too, before any prose landed: the stream is closed and the reply posted whole at the end;
- the stream breaks after part of the reply landed: the stream is closed and nothing is re-posted;
- streaming refused at call time (``STREAMING_REFUSED_CODES``): remembered on the connection
  (``streaming_available`` false) and the turn posted whole;
- a missing recipient (``missing_recipient_user_id``/``_team_id``): this turn is posted whole.

A turn without text finishes its card with a short note; a wordless turn that never opened a stream posts one
message with the finished card and the note.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hangar.chat.cards import Card, CardDelta, TurnOutcome
from hangar.chat.errors import TRANSPORT_CODE, ChatProviderError
from hangar.chat.narration import ACCEPTED
from hangar.chat.outbound import Block, ChatOutbound, Chunk
from hangar.core.clock import Clock

PROSE_CHUNK_MAX = 256
APPEND_MAX = 3_800
MESSAGE_MAX = 12_000
REPLY_MAX = 39_000
# A posted card carries the reply in a markdown block, which the provider caps like a streamed message.
MARKDOWN_BLOCK_MAX = 12_000
FLUSH_INTERVAL = 1.0

STREAMING_REFUSED_CODES: frozenset[str] = frozenset(
    {
        "streaming_not_supported",
        "feature_not_enabled",
        "paid_only",
        "paid_teams_only",
        "not_supported",
        "method_not_supported_for_channel_type",
    }
)
MISSING_RECIPIENT_CODES: frozenset[str] = frozenset({"missing_recipient_user_id", "missing_recipient_team_id"})
# The provider ended the streamed message on its side (or it is full): the reply goes on in a new one.
STREAM_ENDED_CODES: frozenset[str] = frozenset(
    {"message_not_in_streaming_state", "streaming_state_conflict", "msg_too_long"}
)

EMPTY_TURN_NOTES: dict[TurnOutcome, str] = {
    TurnOutcome.ok: "The agent finished without a written reply.",
    TurnOutcome.failed: "The run failed before the agent replied.",
    TurnOutcome.interrupted: "The run was interrupted before the agent replied.",
    TurnOutcome.turn_limit: "The run stopped at its turn limit before the agent replied.",
}


@dataclass
class ConnectionFlags:
    """What the provider refused once on this connection and is not asked again until it reconnects."""

    streaming_available: bool = True
    cards_available: bool = True


@dataclass(frozen=True)
class ReplyTarget:
    """Where a reply goes. In a channel, streaming needs the member who asked and their team; a DM needs none."""

    channel: str
    thread_ts: str | None
    recipient_user_id: str | None = None
    recipient_team_id: str | None = None
    is_dm: bool = False

    @property
    def can_stream(self) -> bool:
        if not self.thread_ts:
            return False
        return self.is_dm or bool(self.recipient_user_id and self.recipient_team_id)


class _Mode(StrEnum):
    idle = "idle"  # streaming allowed, no message open yet
    streaming = "streaming"
    posted = "posted"  # the reply goes out whole at the end
    broken = "broken"  # part landed, then the stream broke: nothing more is sent
    done = "done"


def boundary_prefix(text: str, limit: int) -> str:
    """The longest start of ``text`` within ``limit`` that ends at a paragraph, else line, else space boundary."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > 0:
            return text[: at + len(sep)]
    return window


def split_text(text: str, limit: int) -> list[str]:
    pieces: list[str] = []
    while text:
        piece = boundary_prefix(text, limit)
        pieces.append(piece)
        text = text[len(piece) :]
    return pieces


def prose_chunks(text: str) -> list[Chunk]:
    return [
        {"type": "markdown_text", "text": text[i : i + PROSE_CHUNK_MAX]} for i in range(0, len(text), PROSE_CHUNK_MAX)
    ]


def truncation_pointer(link: str | None) -> str:
    where = f"The whole reply is in Hangar: {link}" if link else "The whole reply is in Hangar."
    return f"\n\n… The reply was too long for chat and was cut here. {where}"


class ReplyStream:
    def __init__(
        self,
        outbound: ChatOutbound,
        target: ReplyTarget,
        *,
        request: str,
        flags: ConnectionFlags,
        clock: Clock,
        renders_cards: bool = True,
        link: str | None = None,
        on_open: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._out = outbound
        self._target = target
        self._flags = flags
        self._clock = clock
        self._renders_cards = renders_cards
        self._link = link
        self.card = Card(request)
        self._mode = _Mode.idle if flags.streaming_available and target.can_stream else _Mode.posted
        self._reply: list[str] = []
        self._reply_len = 0
        self._truncated = False
        self._pending = ""
        self._landed = 0
        self._ts: str | None = None
        self._msg_chars = 0
        self._last_call: float | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._first_words = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Told of every streamed message this reply opens (the first, and each roll-over's): the bridge records
        # it so a restarted server can finish the one left open.
        self._on_open = on_open
        self.opened: list[str] = []

    # --- what the bridge calls --------------------------------------------------------------------------------

    @property
    def cards_on(self) -> bool:
        return self._renders_cards and self._flags.cards_available

    @property
    def streaming(self) -> bool:
        """True while a streamed message is open."""
        return self._mode is _Mode.streaming

    @property
    def message_ts(self) -> str | None:
        """The open streamed message, for the bridge to remember (a restart finishes its card with an update)."""
        return self._ts if self._mode is _Mode.streaming else None

    async def open(self) -> None:
        """A mention was accepted: open the card at once (``Working on it...``), before clone and first token."""
        self.card.set_setup(ACCEPTED)
        async with self._lock:
            if self._mode is _Mode.idle and self.cards_on:
                await self._start()
        self._kick()

    def set_setup(self, title: str) -> None:
        """Provisioning narration: the setup row's new title."""
        self.card.set_setup(title)
        self._kick()

    def on_reasoning_started(self) -> None:
        self.card.start_thinking()
        self._kick()

    def on_reasoning_finished(self, text: str) -> None:
        self.card.finish_thinking(text)
        self._kick()

    def on_tool_started(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self.card.start_tool(call_id, name, arguments)
        self._kick()

    def on_tool_finished(self, call_id: str, *, ok: bool) -> None:
        self.card.finish_tool(call_id, ok=ok)
        self._kick()

    def on_text(self, delta: str) -> None:
        if self._mode is _Mode.done or self._truncated or not delta:
            return
        room = REPLY_MAX - len(truncation_pointer(self._link)) - self._reply_len
        if len(delta) > room:
            delta = boundary_prefix(delta, room) + truncation_pointer(self._link)
            self._truncated = True
        self._reply.append(delta)
        self._reply_len += len(delta)
        self._pending += delta
        if not self._landed:
            self._first_words.set()
        self._kick()

    async def finish(self, outcome: TurnOutcome) -> None:
        """The turn ended: send what is left, finish the card (and its note when there was no text)."""
        async with self._lock:
            if self._mode is _Mode.done:
                return
            if self._task is not None:
                # Safe: while we hold the lock the flusher is waiting or sleeping, never inside a provider call.
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self.card.finish(outcome, self._link if self.cards_on else None)
            text = "".join(self._reply)
            note = None if text.strip() else EMPTY_TURN_NOTES[outcome]
            while self._pending and self._mode in (_Mode.idle, _Mode.streaming):
                await self._flush()
            if self._mode is _Mode.streaming:
                await self._stop(note)
            elif self._mode in (_Mode.idle, _Mode.posted):
                await self._post_whole(text or note or "")
            self._mode = _Mode.done

    # --- cadence ----------------------------------------------------------------------------------------------

    def _kick(self) -> None:
        if self._mode not in (_Mode.idle, _Mode.streaming):
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            # The card opened on the mention carried no text: the reply's first words go out as they come (the
            # time to the first answer is what a person waits on); every later flush keeps the cadence.
            if not self._pending and not (self.cards_on and self.card.stream_delta()):
                continue  # nothing to send: no cadence wait, or the first words would wait behind it
            first_words = self._mode is _Mode.streaming and self._landed == 0 and bool(self._pending)
            if self._last_call is not None and not first_words:
                wait = self._last_call + FLUSH_INTERVAL - self._clock.monotonic()
                if wait > 0:
                    await self._cadence_wait(wait)
            async with self._lock:
                if self._mode not in (_Mode.idle, _Mode.streaming):
                    return
                await self._flush()
                if self._pending:
                    self._wake.set()

    async def _cadence_wait(self, seconds: float) -> None:
        """Wait out the cadence, cut short by the reply's first words (a card change waiting for its turn, such as
        provisioning narration, must not hold them back: they travel together in one call)."""
        if self._landed:
            await self._clock.sleep(seconds)
            return
        self._first_words.clear()
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        words = asyncio.ensure_future(self._first_words.wait())
        try:
            await asyncio.wait({sleeper, words}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (sleeper, words):
                t.cancel()

    # --- the provider calls -----------------------------------------------------------------------------------

    async def _flush(self) -> None:
        """At most one content call: open the message with the first prose, else append card news and prose."""
        if self._mode is _Mode.idle:
            if self._pending:
                await self._start()
            return
        if self._mode is not _Mode.streaming:
            return
        piece = boundary_prefix(self._pending, APPEND_MAX)
        if piece and self._msg_chars + len(piece) > MESSAGE_MAX:
            await self._roll_over()
            return
        delta = self.card.stream_delta() if self.cards_on else None
        if not piece and not delta:
            return
        await self._append(piece, delta)

    async def _start(self) -> None:
        piece = boundary_prefix(self._pending, APPEND_MAX)
        delta = self.card.stream_delta() if self.cards_on else None
        t = self._target
        assert t.thread_ts is not None  # can_stream
        self._last_call = self._clock.monotonic()
        try:
            self._ts = await self._out.start_stream(
                channel=t.channel,
                thread_ts=t.thread_ts,
                recipient_user_id=None if t.is_dm else t.recipient_user_id,
                recipient_team_id=None if t.is_dm else t.recipient_team_id,
                chunks=_chunks(delta, piece) or None,
                task_display_mode="plan" if delta is not None else None,
            )
        except ChatProviderError as exc:
            code = exc.provider_code
            if code in STREAMING_REFUSED_CODES:
                self._flags.streaming_available = False
            elif (
                delta
                and code not in MISSING_RECIPIENT_CODES
                and code != TRANSPORT_CODE
                and await self._start_without_card(piece)
            ):
                return
            self._give_up_streaming()
            return
        if delta is not None:
            self.card.acknowledge(delta)
        self._mode = _Mode.streaming
        self._landed_in_message(piece)
        await self._opened()

    async def _start_without_card(self, piece: str) -> bool:
        t = self._target
        assert t.thread_ts is not None
        try:
            self._ts = await self._out.start_stream(
                channel=t.channel,
                thread_ts=t.thread_ts,
                recipient_user_id=None if t.is_dm else t.recipient_user_id,
                recipient_team_id=None if t.is_dm else t.recipient_team_id,
                chunks=prose_chunks(piece) or None,
            )
        except ChatProviderError:
            return False
        self._flags.cards_available = False
        self._mode = _Mode.streaming
        self._landed_in_message(piece)
        await self._opened()
        return True

    async def _opened(self) -> None:
        assert self._ts is not None
        self.opened.append(self._ts)
        if self._on_open is not None:
            await self._on_open(self._ts)

    async def _append(self, piece: str, delta: CardDelta | None) -> None:
        assert self._ts is not None
        self._last_call = self._clock.monotonic()
        try:
            await self._out.append_stream(channel=self._target.channel, ts=self._ts, chunks=_chunks(delta, piece))
        except ChatProviderError as exc:
            if exc.provider_code in STREAM_ENDED_CODES:
                await self._reopen()
                return
            if not delta or exc.provider_code == TRANSPORT_CODE:
                await self._break()
                return
            # The card may be what the provider refuses: once more at once without it.
            if not piece:
                self._flags.cards_available = False
                return
            try:
                await self._out.append_stream(channel=self._target.channel, ts=self._ts, chunks=prose_chunks(piece))
            except ChatProviderError as again:
                if again.provider_code in STREAM_ENDED_CODES:
                    await self._reopen()
                else:
                    await self._break()
                return
            self._flags.cards_available = False
            self._landed_in_message(piece)
            return
        if delta is not None:
            self.card.acknowledge(delta)
        self._landed_in_message(piece)

    async def _roll_over(self) -> None:
        """Close a message about to be full (its running rows shown complete: the card goes on) and open the next."""
        assert self._ts is not None
        closing = self.card.stream_delta(close_running=True) if self.cards_on else None
        with contextlib.suppress(ChatProviderError):
            await self._out.stop_stream(channel=self._target.channel, ts=self._ts, chunks=_chunks(closing, "") or None)
        await self._reopen()

    async def _reopen(self) -> None:
        self._ts = None
        self._msg_chars = 0
        self.card.forget_sent()
        self._mode = _Mode.idle
        await self._start()

    async def _stop(self, note: str | None) -> None:
        assert self._ts is not None
        delta = self.card.stream_delta() if self.cards_on else None
        tail = prose_chunks(note) if note else []
        try:
            await self._out.stop_stream(
                channel=self._target.channel, ts=self._ts, chunks=[*(delta.chunks if delta else []), *tail] or None
            )
        except ChatProviderError as exc:
            if not delta or exc.provider_code in STREAM_ENDED_CODES or exc.provider_code == TRANSPORT_CODE:
                return
            with contextlib.suppress(ChatProviderError):
                await self._out.stop_stream(channel=self._target.channel, ts=self._ts, chunks=tail or None)
                self._flags.cards_available = False
            return
        if delta is not None:
            self.card.acknowledge(delta)

    async def _break(self) -> None:
        """Prose refused or the stream broke: close it; post whole only when none of the prose landed."""
        if self._ts is not None:
            with contextlib.suppress(ChatProviderError):
                await self._out.stop_stream(channel=self._target.channel, ts=self._ts)
        self._ts = None
        self._give_up_streaming()

    def _give_up_streaming(self) -> None:
        self._mode = _Mode.broken if self._landed else _Mode.posted

    def _landed_in_message(self, piece: str) -> None:
        self._pending = self._pending[len(piece) :]
        self._msg_chars += len(piece)
        self._landed += len(piece)

    async def _post_whole(self, text: str) -> None:
        t = self._target
        blocks: list[Block] | None = None
        if self.cards_on:
            blocks = [self.card.plan_block()]
            if len(text) <= MARKDOWN_BLOCK_MAX:
                blocks.append({"type": "markdown", "text": text})
            else:
                await self._out.post_message(
                    channel=t.channel, thread_ts=t.thread_ts, text=self.card.status_line(), blocks=blocks
                )
                blocks = None
        await self._out.post_message(channel=t.channel, thread_ts=t.thread_ts, text=text, blocks=blocks)


def _chunks(delta: CardDelta | None, piece: str) -> list[Chunk]:
    return [*(delta.chunks if delta else []), *prose_chunks(piece)]
