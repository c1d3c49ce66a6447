"""The reply stream over a recording ChatOutbound: cadence on the fake clock, limits, roll-over, every fallback."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hangar.chat.cards import CTA_TITLE, TurnOutcome
from hangar.chat.replies import (
    APPEND_MAX,
    EMPTY_TURN_NOTES,
    MARKDOWN_BLOCK_MAX,
    MESSAGE_MAX,
    PROSE_CHUNK_MAX,
    REPLY_MAX,
    ConnectionFlags,
    ReplyStream,
    ReplyTarget,
    split_text,
)
from hangar.core.clock import FakeClock

from .recording import Call, RecordingOutbound, conforms, has_card

CHANNEL = ReplyTarget("C1", "111.000", recipient_user_id="U1", recipient_team_id="T1")
DM = ReplyTarget("D1", "222.000", is_dm=True)
LINK = "https://hangar.example/open/workspaces/w/spaces/s"


def words(n: int) -> str:
    """``n`` characters of prose with spaces, newlines and paragraphs to cut at."""
    out, i = [], 0
    while sum(map(len, out)) < n:
        i += 1
        out.append(f"word{i}" + ("\n\n" if i % 97 == 0 else "\n" if i % 13 == 0 else " "))
    return "".join(out)[:n]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def make(
    target: ReplyTarget = CHANNEL, flags: ConnectionFlags | None = None, link: str | None = LINK
) -> tuple[ReplyStream, RecordingOutbound, FakeClock, ConnectionFlags]:
    clock = FakeClock()
    out = RecordingOutbound(clock)
    flags = flags or ConnectionFlags()
    stream = ReplyStream(conforms(out), target, request="fix the login bug", flags=flags, clock=clock, link=link)
    return stream, out, clock, flags


async def run_for(clock: FakeClock, seconds: float, step: float = 0.1) -> None:
    for _ in range(round(seconds / step)):
        clock.advance(step)
        await settle()


def task(call: Call, row_id: str) -> dict[str, Any] | None:
    return next((dict(c) for c in call.task_updates() if c["id"] == row_id), None)


async def test_a_mention_opens_the_card_at_once_with_the_recipient_in_a_channel() -> None:
    stream, out, _, _ = make()
    await stream.open()
    (start,) = out.calls
    assert start.method == "start_stream" and stream.message_ts is not None
    assert start.kwargs["recipient_user_id"] == "U1" and start.kwargs["recipient_team_id"] == "T1"
    assert start.kwargs["task_display_mode"] == "plan"
    assert start.chunks == [
        {"type": "plan_update", "title": "fix the login bug"},
        {"type": "task_update", "id": "setup", "title": "Working on it...", "status": "in_progress"},
    ]
    dm, out, _, _ = make(DM)
    await dm.open()
    assert out.calls[0].kwargs["recipient_user_id"] is None and out.calls[0].kwargs["recipient_team_id"] is None


async def test_flushes_at_most_once_a_second_with_card_and_text_in_one_call() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    for i in range(100):  # ten seconds of deltas every 100 ms, with card news mixed in
        stream.on_text(f"part {i} ")
        if i % 10 == 0:
            stream.on_tool_started(f"c{i}", "grep", {"pattern": "x"})
        clock.advance(0.1)
        await settle()
    content = out.of("start_stream", "append_stream")
    assert 10 <= len(content) <= 12
    times = [c.at for c in content]
    # The card opened on the mention; the first words follow at once (within one 100 ms step of the first
    # delta), then one flush a second.
    assert times[1] - times[0] <= 0.1 + 1e-9 and content[1].prose.startswith("part 0")
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(times[1:]))
    mixed = [c for c in content if c.task_updates() and c.prose]
    assert mixed, "card news and prose travel together"
    for call in mixed:  # the answer comes after the plan's rows within an append
        kinds = [c["type"] for c in call.chunks]
        assert kinds.index("markdown_text") > max(i for i, k in enumerate(kinds) if k == "task_update")
    await stream.finish(TurnOutcome.ok)
    assert out.landed_prose() == "".join(f"part {i} " for i in range(100))
    assert stream.message_ts is None


async def test_nothing_is_resent_while_the_card_says_nothing_new() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    await run_for(clock, 5)
    assert len(out.calls) == 1
    stream.set_setup("Cloning acme/web...")
    stream.set_setup("Cloning acme/web...")
    await run_for(clock, 3)
    (append,) = out.of("append_stream")
    assert append.chunks == [
        {"type": "task_update", "id": "setup", "title": "Cloning acme/web...", "status": "in_progress"}
    ]


async def test_prose_chunks_appends_and_boundaries() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    text = words(9_000)
    stream.on_text(text)
    await run_for(clock, 5)
    await stream.finish(TurnOutcome.ok)
    content = out.of("start_stream", "append_stream")
    assert out.landed_prose() == text
    pieces = [c.prose for c in content if c.prose]
    assert len(pieces) >= 3 and all(len(p) <= APPEND_MAX for p in pieces)
    assert all(p[-1] in " \n" for p in pieces[:-1])
    assert all(
        len(c["text"]) <= PROSE_CHUNK_MAX for call in content for c in call.chunks if c["type"] == "markdown_text"
    )


def test_split_prefers_paragraph_then_line_then_space() -> None:
    assert split_text("aaaa\n\nbbbb\ncc dd", 12) == ["aaaa\n\n", "bbbb\ncc dd"]
    assert split_text("aaaa\nbbbb cc", 10) == ["aaaa\n", "bbbb cc"]
    assert split_text("aaaa bbbb cc", 9) == ["aaaa ", "bbbb cc"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def messages(out: RecordingOutbound) -> list[str]:
    """Prose per streamed message: a start opens one, everything until its stop belongs to it."""
    per: list[str] = []
    for call in out.of("start_stream", "append_stream", "stop_stream"):
        if call.method == "start_stream":
            per.append("")
        per[-1] += call.prose
    return per


async def test_a_long_reply_rolls_over_before_the_message_limit_and_is_never_cut() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    text = words(30_000)
    stream.on_text(text)
    await run_for(clock, 12)
    await stream.finish(TurnOutcome.ok)
    per = messages(out)
    assert len(per) >= 3 and all(len(m) <= MESSAGE_MAX for m in per)
    assert "".join(per) == text
    starts = [i for i, c in enumerate(out.calls) if c.method == "start_stream"]
    for i in starts[1:]:
        assert out.calls[i - 1].method == "stop_stream"  # the full message is closed before the next opens
    assert all(out.calls[i].kwargs["task_display_mode"] == "plan" for i in starts)
    assert not out.of("post_message")


def lines(n: int) -> str:
    """``n`` characters in lines of 100 (99 and a newline), so every 3,800-character append ends on a line."""
    return "".join(f"{i:05d} {'y' * 93}\n" for i in range(n // 100 + 1))[:n]


async def streamed(text: str) -> list[str]:
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_text(text)
    await run_for(clock, 8)
    await stream.finish(TurnOutcome.ok)
    assert "".join(messages(out)) == text and not out.of("post_message")
    return messages(out)


async def test_a_streamed_message_holds_12000_characters_and_never_one_more() -> None:
    # At the limit: three appends of 3,800 and one of 600 fill one message exactly.
    assert [len(m) for m in await streamed(lines(MESSAGE_MAX))] == [MESSAGE_MAX]
    # One past it: the append that would make 12,001 opens the next message instead.
    assert [len(m) for m in await streamed(lines(MESSAGE_MAX + 1))] == [
        3 * APPEND_MAX,
        MESSAGE_MAX + 1 - 3 * APPEND_MAX,
    ]
    assert [len(m) for m in await streamed("z" * (MESSAGE_MAX + 1))] == [
        3 * APPEND_MAX,
        MESSAGE_MAX + 1 - 3 * APPEND_MAX,
    ]


async def test_a_reply_posted_whole_keeps_its_markdown_block_within_the_limit() -> None:
    for size, separate_card in ((MARKDOWN_BLOCK_MAX, False), (MARKDOWN_BLOCK_MAX + 1, True)):
        stream, out, _clock, _ = make(flags=ConnectionFlags(streaming_available=False))
        text = lines(size)
        stream.on_text(text)
        await stream.finish(TurnOutcome.ok)
        posts = out.of("post_message")
        assert posts[-1].kwargs["text"] == text
        blocks = [b for p in posts for b in (p.kwargs["blocks"] or [])]
        assert all(len(b["text"]) <= MARKDOWN_BLOCK_MAX for b in blocks if b["type"] == "markdown")
        if separate_card:  # the card goes first on its own, the reply as plain text after it
            assert len(posts) == 2 and [b["type"] for b in blocks] == ["plan"]
        else:
            assert len(posts) == 1 and [b["type"] for b in blocks] == ["plan", "markdown"]


async def test_a_stream_the_provider_ended_rolls_over_into_a_new_message() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_text("first part. ")
    await run_for(clock, 1.5)
    out.refuse("append_stream", "message_not_in_streaming_state")
    stream.on_text("second part.")
    await run_for(clock, 1.5)
    await stream.finish(TurnOutcome.ok)
    assert [c.method for c in out.calls if c.refused] == ["append_stream"]
    assert len(out.of("start_stream")) == 2
    second = out.of("start_stream")[1]
    assert second.prose == "second part." and task(second, "setup") is not None  # the card goes on there
    assert out.landed_prose() == "first part. second part."
    assert not out.of("post_message")


async def test_a_reply_over_the_limit_is_truncated_with_a_pointer() -> None:
    stream, out, clock, _flags = make(flags=ConnectionFlags(streaming_available=False))
    stream.on_text(words(50_000))
    await stream.finish(TurnOutcome.ok)
    card, post = out.of("post_message")  # past what a markdown block holds, the card goes first on its own
    assert card.kwargs["blocks"][0]["type"] == "plan" and post.kwargs["blocks"] is None
    assert len(post.kwargs["text"]) <= REPLY_MAX and post.kwargs["text"].endswith(LINK)
    assert "too long" in post.kwargs["text"]
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_text(words(25_000))
    stream.on_text(words(25_000))
    await run_for(clock, 15)
    await stream.finish(TurnOutcome.ok)
    landed = out.landed_prose()
    assert len(landed) <= REPLY_MAX and landed.endswith(LINK)


async def test_card_refused_on_an_append_is_retried_at_once_without_it_and_dropped_for_the_connection() -> None:
    stream, out, clock, flags = make()
    await stream.open()
    out.refuse("append_stream", "invalid_chunks", when=has_card)
    stream.on_tool_started("c", "grep", {"pattern": "x"})
    stream.on_text("the answer")
    await run_for(clock, 1.5)
    refused, retried = [c for c in out.calls if c.method == "append_stream"]
    assert refused.refused == "invalid_chunks" and refused.task_updates()
    assert retried.refused is None and retried.at == refused.at
    assert retried.chunks == [{"type": "markdown_text", "text": "the answer"}]
    assert flags.cards_available is False
    stream.on_text(" more")
    await run_for(clock, 1.5)
    await stream.finish(TurnOutcome.ok)
    assert not any(c.task_updates() for c in out.calls[3:])
    assert out.landed_prose() == "the answer more"
    nxt, out2, _, _ = make(flags=flags)
    await nxt.open()
    nxt.on_text("hi")
    await nxt.finish(TurnOutcome.ok)
    (start,) = out2.of("start_stream")
    assert start.kwargs["task_display_mode"] is None and not has_card(start.kwargs)


async def test_prose_refused_too_closes_the_stream_and_posts_the_reply_whole() -> None:
    stream, out, clock, flags = make()
    await stream.open()
    out.refuse("append_stream", "invalid_arguments", times=2)
    stream.on_tool_started("c", "grep", {})
    stream.on_text("the answer")
    await run_for(clock, 1.5)
    assert [c.method for c in out.calls] == ["start_stream", "append_stream", "append_stream", "stop_stream"]
    stream.on_text(" and more")
    await run_for(clock, 2)
    await stream.finish(TurnOutcome.ok)
    (post,) = out.of("post_message")
    assert post.kwargs["text"] == "the answer and more" and post.kwargs["thread_ts"] == "111.000"
    assert post.kwargs["blocks"][0]["type"] == "plan"
    assert flags.cards_available is True


async def test_a_stream_that_breaks_after_part_landed_is_closed_and_nothing_reposted() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_text("landed part. ")
    await run_for(clock, 1.5)
    out.refuse("append_stream", "transport_error")
    stream.on_text("lost part.")
    await run_for(clock, 1.5)
    await stream.finish(TurnOutcome.ok)
    assert [c.method for c in out.calls][-2:] == ["append_stream", "stop_stream"]
    assert not out.of("post_message")
    assert out.landed_prose() == "landed part. "


async def test_streaming_refused_at_call_time_is_remembered_and_the_turn_posted_whole() -> None:
    stream, out, clock, flags = make()
    out.refuse("start_stream", "feature_not_enabled")
    await stream.open()
    assert flags.streaming_available is False
    stream.on_text("the whole answer")
    await run_for(clock, 3)
    await stream.finish(TurnOutcome.ok)
    assert [c.method for c in out.calls] == ["start_stream", "post_message"]
    assert out.calls[1].kwargs["text"] == "the whole answer"
    nxt, out2, _, _ = make(flags=flags)
    await nxt.open()
    nxt.on_text("next")
    await nxt.finish(TurnOutcome.ok)
    assert [c.method for c in out2.calls] == ["post_message"]


async def test_a_missing_recipient_posts_this_turn_whole_only() -> None:
    for code in ("missing_recipient_user_id", "missing_recipient_team_id"):
        stream, out, clock, flags = make()
        out.refuse("start_stream", code)
        await stream.open()
        stream.on_text("answer")
        await run_for(clock, 2)
        await stream.finish(TurnOutcome.ok)
        assert [c.method for c in out.calls] == ["start_stream", "post_message"]
        assert flags.streaming_available is True
    unlinked, out, _, _ = make(ReplyTarget("C1", "111.000"))  # a channel without the member who asked
    await unlinked.open()
    unlinked.on_text("answer")
    await unlinked.finish(TurnOutcome.ok)
    assert [c.method for c in out.calls] == ["post_message"]
    threadless, out, _, _ = make(ReplyTarget("D1", None, is_dm=True))
    await threadless.open()
    await threadless.finish(TurnOutcome.ok)
    assert [c.method for c in out.calls] == ["post_message"]


async def test_an_empty_turn_finishes_the_card_with_a_note() -> None:
    for outcome in TurnOutcome:
        stream, out, clock, _ = make()
        await stream.open()
        stream.on_tool_started("c", "grep", {})
        await run_for(clock, 1.5)
        await stream.finish(outcome)
        stop = out.calls[-1]
        assert stop.method == "stop_stream" and stop.prose == EMPTY_TURN_NOTES[outcome]
        tool = task(stop, "tool-1")
        assert tool is not None and tool["status"] == ("complete" if outcome is TurnOutcome.ok else "error")
        cta = task(stop, "cta")
        assert cta is not None and cta["title"] == CTA_TITLE


async def test_a_wordless_turn_that_never_opened_a_stream_posts_one_message_with_card_and_note() -> None:
    stream, out, clock, _ = make()  # work started in the product: no mention opened a stream
    stream.on_reasoning_started()
    stream.on_reasoning_finished("thought")
    stream.on_tool_started("c", "read_file", {"path": "a.py"})
    await run_for(clock, 3)
    await stream.finish(TurnOutcome.interrupted)
    (post,) = out.calls
    assert post.method == "post_message" and post.kwargs["text"] == EMPTY_TURN_NOTES[TurnOutcome.interrupted]
    plan, note = post.kwargs["blocks"]
    assert [t["status"] for t in plan["tasks"]] == ["complete", "error", "complete"]
    assert plan["tasks"][-1]["title"] == CTA_TITLE
    assert note == {"type": "markdown", "text": EMPTY_TURN_NOTES[TurnOutcome.interrupted]}


async def test_cta_only_at_the_end_and_only_with_a_public_url() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_text("answer")
    await run_for(clock, 3)
    assert not any(task(c, "cta") for c in out.calls)
    await stream.finish(TurnOutcome.ok)
    assert task(out.calls[-1], "cta") is not None
    stream, out, clock, _ = make(link=None)
    await stream.open()
    stream.on_text("answer")
    await stream.finish(TurnOutcome.ok)
    assert not any(task(c, "cta") for c in out.calls)


async def test_thinking_details_go_out_once_and_tool_output_never() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    stream.on_reasoning_started()
    await run_for(clock, 1.5)
    stream.on_reasoning_finished("because " * 100)
    stream.on_tool_started("c", "read_file", {"path": "a.py", "content": "DB_ROW_42"})
    stream.on_tool_finished("c", ok=True)
    await run_for(clock, 1.5)
    stream.on_text("done")
    await stream.finish(TurnOutcome.ok)
    details = [c["details"] for call in out.calls for c in call.task_updates() if "details" in c]
    assert len(details) == 1 and len(details[0]) <= 256
    assert "DB_ROW_42" not in repr([c.kwargs for c in out.calls])
    assert not any("output" in c for call in out.calls for c in call.task_updates())


async def test_the_answer_is_a_later_append_after_the_plan() -> None:
    stream, out, clock, _ = make(DM)
    await stream.open()
    stream.on_text("hello")
    await run_for(clock, 1.5)
    start, append = out.calls
    assert not start.prose and start.chunks[0]["type"] == "plan_update"
    assert append.chunks == [{"type": "markdown_text", "text": "hello"}]


async def test_a_card_change_waiting_for_the_cadence_does_not_hold_back_the_first_words() -> None:
    stream, out, clock, _ = make()
    await stream.open()
    stream.set_setup("Setting up Ada...")  # narration: a card change that waits for the second to pass
    clock.advance(0.2)
    await settle()
    assert len(out.calls) == 1
    stream.on_text("Hello")
    await settle()
    first = out.of("append_stream")
    assert len(first) == 1 and first[0].prose == "Hello" and first[0].at - out.calls[0].at < 1.0
    assert task(first[0], "setup") == {"type": "task_update", "id": "setup", "title": "Setting up Ada...",
                                       "status": "in_progress"}  # fmt: skip
