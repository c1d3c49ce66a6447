"""The grouped card of one agent turn: a plan titled with the request, one row per step.

Rows: the setup row (one id, its title replaced as provisioning moves), a thinking row per reasoning phase, one
row per tool call and, once the turn finished and the product has a public URL, the call-to-action row. A row is
in progress while it runs, complete when the next row starts or the turn ends, and ``error`` when the turn failed,
was interrupted or hit its turn limit (or the tool call itself failed).

The provider concatenates same-id ``details`` (and ``output``) without a separator, so a row's details are sent
once and output never: the card remembers what it sent and renders only the difference. A card never carries tool
output, database content or an argument outside ``ARGUMENT_ALLOW_LIST``.

Two wires: streamed (``plan_update`` + ``task_update`` chunks keyed by ``id``) and posted (a ``plan`` block of
``task_card`` blocks keyed by ``task_id``, details as rich text).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hangar.chat.narration import THINKING
from hangar.chat.outbound import Block, Chunk

# Plain strings the provider shows in a card row (titles, details) are capped like streamed prose chunks.
CARD_TEXT_MAX = 256
# One argument value shown in a tool row's title.
ARGUMENT_VALUE_MAX = 60

SETUP_ROW_ID = "setup"
CTA_ROW_ID = "cta"
CTA_TITLE = "View in Control Center"
THINKING_TITLE = THINKING

# Argument names whose values say where a tool works, never what it read or wrote: paths, patterns, addresses.
# Anything else (file contents, commands, queries, message bodies) stays in the product.
ARGUMENT_ALLOW_LIST: frozenset[str] = frozenset(
    {"path", "file_path", "filename", "directory", "pattern", "glob", "url", "repo", "branch", "name"}
)


class RowStatus(StrEnum):
    pending = "pending"
    in_progress = "in_progress"
    complete = "complete"
    error = "error"


class TurnOutcome(StrEnum):
    """How a turn ended; the values are the agents' run outcomes so the bridge maps them by value."""

    ok = "ok"
    failed = "failed"
    interrupted = "interrupted"
    turn_limit = "turnLimit"


def cap(text: str, limit: int = CARD_TEXT_MAX) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_title(name: str, arguments: Mapping[str, Any], allow: frozenset[str] = ARGUMENT_ALLOW_LIST) -> str:
    """The tool's name plus the allow-listed scalar arguments, e.g. ``read_file: src/app.py``."""
    shown = [
        cap(str(value), ARGUMENT_VALUE_MAX)
        for key, value in arguments.items()
        if key in allow and isinstance(value, str | int | float) and not isinstance(value, bool) and str(value)
    ]
    return cap(f"{name}: {', '.join(shown)}" if shown else name)


@dataclass
class Row:
    id: str
    title: str
    status: RowStatus
    details: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class _SentRow:
    title: str
    status: RowStatus
    details_sent: bool
    url_sent: bool


@dataclass(frozen=True)
class CardDelta:
    """The chunks that bring the provider's copy up to date, and the state they establish once accepted."""

    chunks: list[Chunk]
    title_sent: bool
    rows: dict[str, _SentRow] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.chunks)


class Card:
    def __init__(self, request: str) -> None:
        self.title = cap(request) or "Request"
        self.rows: list[Row] = []
        self._tool_rows: dict[str, str] = {}
        self._thinking: Row | None = None
        self._counter = 0
        self.finished = False
        self._title_sent = False
        self._sent: dict[str, _SentRow] = {}

    # --- building ---------------------------------------------------------------------------------------------

    def set_setup(self, title: str) -> None:
        """Open the setup row or replace its title (``Working on it...`` -> ``Cloning ...`` -> ...)."""
        row = self._row(SETUP_ROW_ID)
        if row is None:
            self._start(Row(SETUP_ROW_ID, cap(title), RowStatus.in_progress))
        else:
            row.title = cap(title)

    def start_thinking(self) -> None:
        row = Row(self._next_id("thinking"), THINKING_TITLE, RowStatus.in_progress)
        self._thinking = row
        self._start(row)

    def finish_thinking(self, text: str) -> None:
        """The reasoning is complete: its start goes out once as the row's details."""
        if self._thinking is None:
            self.start_thinking()
        assert self._thinking is not None
        if self._thinking.details is None and text.strip():
            self._thinking.details = cap(text)
        self._thinking = None

    def start_tool(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        row = Row(self._next_id("tool"), tool_title(name, arguments), RowStatus.in_progress)
        self._tool_rows[call_id] = row.id
        self._start(row)

    def finish_tool(self, call_id: str, *, ok: bool) -> None:
        """A failed call shows ``error`` at once; a good one stays in progress until the next row starts."""
        row = self._row(self._tool_rows.get(call_id, ""))
        if row is not None and not ok:
            row.status = RowStatus.error

    def finish(self, outcome: TurnOutcome, link: str | None = None) -> None:
        """End the turn: running rows complete (or ``error``), then the call-to-action row when ``link`` is known."""
        if self.finished:
            return
        self.finished = True
        failed = outcome is not TurnOutcome.ok
        running = [r for r in self.rows if r.status in (RowStatus.in_progress, RowStatus.pending)]
        for row in running:
            row.status = RowStatus.error if failed else RowStatus.complete
        if failed and not running and self.rows and all(r.status is not RowStatus.error for r in self.rows):
            self.rows[-1].status = RowStatus.error
        if link:
            self.rows.append(Row(CTA_ROW_ID, CTA_TITLE, RowStatus.complete, url=link))

    def status_line(self) -> str:
        """One plain line for notifications and text-only fallbacks: the request and where the turn is."""
        current = next((r for r in reversed(self.rows) if r.id != CTA_ROW_ID), None)
        return cap(f"{self.title} · {current.title}") if current else self.title

    # --- streamed wire ----------------------------------------------------------------------------------------

    def stream_delta(self, *, close_running: bool = False) -> CardDelta:
        """Chunks for what changed since the last acknowledged delta (empty when nothing new).

        ``close_running`` renders running rows as complete without changing the card: a message being closed
        for a roll-over must not spin forever while the card goes on in the next message.
        """
        chunks: list[Chunk] = []
        if not self._title_sent:
            chunks.append({"type": "plan_update", "title": self.title})
        sent_rows: dict[str, _SentRow] = {}
        for row in self.rows:
            status = row.status
            if close_running and status in (RowStatus.in_progress, RowStatus.pending):
                status = RowStatus.complete
            before = self._sent.get(row.id)
            send_details = row.details is not None and not (before and before.details_sent)
            send_url = row.url is not None and not (before and before.url_sent)
            now = _SentRow(
                row.title,
                status,
                bool(before and before.details_sent) or send_details,
                bool(before and before.url_sent) or send_url,
            )
            sent_rows[row.id] = now
            if before == now:
                continue
            chunk: dict[str, Any] = {"type": "task_update", "id": row.id, "title": row.title, "status": status.value}
            if send_details:
                chunk["details"] = row.details
            if send_url:
                chunk["sources"] = [{"type": "url", "url": row.url, "text": row.title}]
            chunks.append(chunk)
        return CardDelta(chunks, True, sent_rows)

    def acknowledge(self, delta: CardDelta) -> None:
        """The provider accepted ``delta``: later deltas diff against it."""
        self._title_sent = self._title_sent or delta.title_sent
        self._sent.update(delta.rows)

    def forget_sent(self) -> None:
        """A new message starts with nothing of the card: the next delta carries all of it."""
        self._title_sent = False
        self._sent = {}

    # --- posted wire ------------------------------------------------------------------------------------------

    def plan_block(self) -> Block:
        return {"type": "plan", "title": self.title, "tasks": [_task_card(row) for row in self.rows]}

    # --- helpers ----------------------------------------------------------------------------------------------

    def _start(self, row: Row) -> None:
        for other in self.rows:
            if other.status is RowStatus.in_progress:
                other.status = RowStatus.complete
        self.rows.append(row)

    def _row(self, row_id: str) -> Row | None:
        return next((r for r in self.rows if r.id == row_id), None)

    def _next_id(self, kind: str) -> str:
        self._counter += 1
        return f"{kind}-{self._counter}"


def _rich_text(text: str) -> dict[str, Any]:
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def _task_card(row: Row) -> dict[str, Any]:
    card: dict[str, Any] = {"type": "task_card", "task_id": row.id, "title": row.title, "status": row.status.value}
    if row.details:
        card["details"] = _rich_text(row.details)
    if row.url:
        card["sources"] = [{"type": "url", "url": row.url, "text": row.title}]
    return card
