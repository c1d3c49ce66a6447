"""The turn card: rows, statuses, the allow-list, the two wires and the diff against what was sent."""

from __future__ import annotations

from typing import Any

from hangar.chat.cards import CARD_TEXT_MAX, CTA_TITLE, Card, RowStatus, TurnOutcome, tool_title


def statuses(card: Card) -> dict[str, str]:
    return {row.id: row.status.value for row in card.rows}


def send(card: Card) -> list[dict[str, Any]]:
    delta = card.stream_delta()
    card.acknowledge(delta)
    return [dict(c) for c in delta.chunks]


def test_setup_row_is_one_row_whose_title_is_replaced() -> None:
    card = Card("fix the login bug")
    card.set_setup("Working on it...")
    first = send(card)
    assert first[0] == {"type": "plan_update", "title": "fix the login bug"}
    assert first[1] == {"type": "task_update", "id": "setup", "title": "Working on it...", "status": "in_progress"}
    card.set_setup("Cloning acme/web...")
    card.set_setup("Starting the agent...")
    assert [r.id for r in card.rows] == ["setup"]
    assert send(card) == [
        {"type": "task_update", "id": "setup", "title": "Starting the agent...", "status": "in_progress"}
    ]


def test_a_row_completes_when_the_next_starts_and_running_rows_complete_at_the_end() -> None:
    card = Card("q")
    card.set_setup("Working on it...")
    card.start_thinking()
    assert statuses(card) == {"setup": "complete", "thinking-1": "in_progress"}
    card.start_tool("c1", "read_file", {"path": "a.py"})
    card.start_tool("c2", "read_file", {"path": "b.py"})
    assert statuses(card) == {
        "setup": "complete",
        "thinking-1": "complete",
        "tool-2": "complete",
        "tool-3": "in_progress",
    }
    card.finish(TurnOutcome.ok)
    assert set(statuses(card).values()) == {"complete"}


def test_failed_interrupted_and_turn_limit_outcomes_end_in_error() -> None:
    for outcome in (TurnOutcome.failed, TurnOutcome.interrupted, TurnOutcome.turn_limit):
        card = Card("q")
        card.start_thinking()
        card.start_tool("c1", "grep", {})
        card.finish(outcome)
        assert statuses(card) == {"thinking-1": "complete", "tool-2": "error"}
    card = Card("q")
    card.start_tool("c1", "grep", {})
    card.finish_tool("c1", ok=False)
    assert statuses(card) == {"tool-1": "error"}
    card.start_thinking()
    assert statuses(card) == {"tool-1": "error", "thinking-2": "in_progress"}


def test_tool_rows_carry_only_allow_listed_arguments_and_unique_ids() -> None:
    title = tool_title("write_file", {"path": "src/app.py", "content": "SECRET=hunter2", "mode": 420})
    assert title == "write_file: src/app.py"
    assert tool_title("query_db", {"sql": "select * from users"}) == "query_db"
    assert len(tool_title("read_file", {"path": "x" * 1000})) <= CARD_TEXT_MAX
    card = Card("q")
    card.start_tool("a", "read_file", {"path": "a"})
    card.start_tool("b", "read_file", {"path": "a"})
    card.finish_tool("b", ok=True)
    ids = [r.id for r in card.rows]
    assert len(set(ids)) == 2
    chunks = send(card)
    assert "hunter2" not in repr(chunks)


def test_thinking_details_are_capped_and_sent_once() -> None:
    card = Card("q")
    card.start_thinking()
    assert send(card)[1].get("details") is None
    card.finish_thinking("I should look at the login handler first. " * 40)
    second = send(card)
    assert len(second) == 1 and len(second[0]["details"]) <= CARD_TEXT_MAX
    card.start_tool("c", "grep", {"pattern": "login"})
    third = send(card)
    thinking = [c for c in third if c["id"] == "thinking-1"]
    assert thinking == [{"type": "task_update", "id": "thinking-1", "title": "Thinking...", "status": "complete"}]
    card.finish(TurnOutcome.ok)
    assert all("details" not in c for c in send(card))


def test_a_card_that_says_nothing_new_is_not_resent() -> None:
    card = Card("q")
    card.set_setup("Working on it...")
    send(card)
    assert not card.stream_delta()
    card.set_setup("Working on it...")
    assert not card.stream_delta()
    unacknowledged = card.stream_delta()
    card.start_thinking()
    assert not unacknowledged
    assert len(card.stream_delta().chunks) == 2  # setup complete, thinking in progress


def test_cta_row_only_when_finished_and_a_link_is_known() -> None:
    card = Card("q")
    card.start_tool("c", "grep", {})
    assert all(c.get("title") != CTA_TITLE for c in send(card))
    card.finish(TurnOutcome.ok, None)
    assert all(r.title != CTA_TITLE for r in card.rows)
    card = Card("q")
    card.start_tool("c", "grep", {})
    card.finish(TurnOutcome.ok, "https://hangar.example/open/workspaces/w/spaces/s")
    cta = card.rows[-1]
    assert (cta.title, cta.status) == (CTA_TITLE, RowStatus.complete)
    chunk = send(card)[-1]
    assert chunk["sources"] == [{"type": "url", "url": cta.url, "text": CTA_TITLE}]


def test_posted_wire_is_a_plan_block_of_task_cards() -> None:
    card = Card("fix it")
    card.start_thinking()
    card.finish_thinking("look at auth.py")
    card.start_tool("c", "read_file", {"path": "auth.py"})
    card.finish(TurnOutcome.failed, "https://h.example/x")
    block = card.plan_block()
    assert block["type"] == "plan" and block["title"] == "fix it"
    tasks = block["tasks"]
    assert [t["type"] for t in tasks] == ["task_card"] * 3
    assert [t["task_id"] for t in tasks] == ["thinking-1", "tool-2", "cta"]
    assert [t["status"] for t in tasks] == ["complete", "error", "complete"]
    assert tasks[0]["details"]["type"] == "rich_text"
    assert tasks[0]["details"]["elements"][0]["elements"][0]["text"] == "look at auth.py"
    assert tasks[2]["sources"][0]["url"] == "https://h.example/x"


def test_wire_shapes_parse_with_the_providers_sdk_models() -> None:
    from slack_sdk.models.blocks import Block
    from slack_sdk.models.messages.chunk import Chunk

    card = Card("fix it")
    card.start_thinking()
    card.finish_thinking("reason")
    card.finish(TurnOutcome.ok, "https://h.example/x")
    for chunk in card.stream_delta().chunks:
        parsed = Chunk.parse(dict(chunk))
        assert parsed is not None and parsed.to_dict() == dict(chunk)
    block = Block.parse(dict(card.plan_block()))
    assert block is not None and block.to_dict()["tasks"][0]["task_id"] == "thinking-1"
