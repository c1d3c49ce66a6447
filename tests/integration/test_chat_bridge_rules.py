"""The chat bridge under the spec's rules, end to end: the real server, slack_sdk's real clients, the Slack
emulator over HTTP and WebSocket, and an ``openai`` agent on the scripted model endpoint.

Redelivery and the mention's twin, a removed member, every streaming fallback the emulator can provoke, the rate
limit on an append, runs started in the product, the provider's message limits, a restart in the middle of a
reply, one bad event among good ones, and the deep link a card points to. Nothing here asserts on wall time: the
tests wait for what the provider saw, and the only sleeps are settling pauses before asserting that nothing more
happened.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from hangar.chat.card_records import RESTARTED
from hangar.chat.narration import ACCEPTED
from hangar.chat.replies import APPEND_MAX, MESSAGE_MAX, REPLY_MAX
from tests.peers.slack_emulator import CARD_CHUNKS, SlackEmulator, Stream, running_slack
from tests.support.chat import ALICE, GENERAL, PROVIDER, World, chat_server, chat_spaces, until, world
from tests.support.rpc import RpcClient
from tests.unit.agents.fake_openai import Reply, running_fake_openai, text

PUBLIC = "https://hangar.example"
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def thread_streams(slack: SlackEmulator, thread_ts: str) -> list[Stream]:
    """The streamed messages of one thread, oldest first."""
    found = [s for s in slack.streams.values() if s.thread_ts == thread_ts]
    return sorted(found, key=lambda s: float(s.ts))


def stopped(slack: SlackEmulator, thread_ts: str) -> list[Stream]:
    return [s for s in thread_streams(slack, thread_ts) if s.state == "stopped"]


def thread_posts(slack: SlackEmulator, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in slack.messages if m.get("thread_ts") == thread_ts]


def card_chunks_sent(slack: SlackEmulator, since: int = 0) -> list[dict[str, Any]]:
    """Card chunks carried by stream calls (refused ones included) from call number ``since`` on."""
    sent = []
    for c in slack.calls[since:]:
        if c.method in STREAM_METHODS:
            chunks = c.args.get("chunks")
            chunks = json.loads(chunks) if isinstance(chunks, str) else chunks or []
            sent += [ch for ch in chunks if ch.get("type") in CARD_CHUNKS]
    return sent


def long_text(size: int) -> str:
    """About ``size`` characters of prose in paragraphs and lines, every line numbered so a loss shows."""
    lines, n = [], 0
    while sum(len(x) + 1 for x in lines) < size:
        n += 1
        lines.append(f"line {n:05d} of the long answer, with some words to split on" + ("\n" if n % 7 == 0 else ""))
    return "\n".join(lines)[:size]


async def streamed_whole(slack: SlackEmulator, thread_ts: str, size: int) -> list[Stream]:
    """The thread's streamed messages once every one has stopped and they hold ``size`` characters in all."""

    def done() -> bool:
        streams = thread_streams(slack, thread_ts)
        return all(s.state == "stopped" for s in streams) and sum(len(s.text) for s in streams) >= size

    await until(lambda: bool(slack.calls_of("chat.stopStream")) and done())
    return thread_streams(slack, thread_ts)


async def settle() -> None:
    """A pause before asserting that something did not happen (no assertion depends on its length)."""
    await asyncio.sleep(0.6)


async def answered(w: World, thread_ts: str, n: int) -> list[Stream]:
    return list(await until(lambda: len(stopped(w.slack, thread_ts)) >= n and stopped(w.slack, thread_ts)))


# --- inbound ------------------------------------------------------------------------------------------------------


async def test_a_redelivered_mention_runs_once_and_its_twin_adds_nothing(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("Only once."), text("Again, once."))
        sent = await w.slack.mention(GENERAL, ALICE, "count me")
        # Slack resends what it thinks went unacknowledged: at once (while the reply runs) and later.
        for envelope_id in sent.envelope_ids:
            await w.slack.redeliver(envelope_id)
        await answered(w, sent.ts, 1)
        for envelope_id in sent.envelope_ids:
            await w.slack.redeliver(envelope_id, reason="timeout")
            await w.slack.acked(envelope_id)
        # A mention inside the bridged thread: its twin is a thread reply holding the mention, dropped as a twin.
        await w.slack.mention(GENERAL, ALICE, "once more", thread_ts=sent.ts)
        await answered(w, sent.ts, 2)
        await settle()
        assert len(w.model.requests) == 2
        assert len(thread_streams(w.slack, sent.ts)) == 2
        assert len(await chat_spaces(w)) == 1
        (space,) = await chat_spaces(w)
        msgs = (await w.client.call("messages.list", workspace_id=w.ws, space_id=space["id"]))["messages"]
        prompts = [m["content"] for m in msgs if m["author"]["kind"] == "user"]
        assert prompts == ["count me", "once more"]


async def test_a_member_removed_after_linking_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        bob_token = await w.srv.new_user_token(w.ws, "member", name="bob")
        w.slack.add_user("U0BOB", "bob", "bob@elsewhere.example")
        async with RpcClient(w.srv.ws_url, bob_token) as bob:
            code = (await bob.call("chat.beginUserLink", workspace_id=w.ws, provider=PROVIDER))["code"]
        linked = await w.slack.acked(await w.slack.slash("/hangar", f"link {code}", "U0BOB", GENERAL))
        assert linked is not None and "Linked" in linked["text"]
        links = await w.client.call("chat.listUserLinks", workspace_id=w.ws)
        (bob_id,) = [k["userId"] for k in links if k["externalUserId"] == "U0BOB"]
        await w.client.call("members.remove", workspace_id=w.ws, user_id=bob_id)
        sent = await w.slack.mention(GENERAL, "U0BOB", "do something")
        refusal = await until(lambda: thread_posts(w.slack, sent.ts))
        assert refusal[0]["text"] == "You are no longer a member of this Hangar workspace."
        await settle()
        assert await chat_spaces(w) == [] and w.model.requests == [] and w.slack.streams == {}


async def test_one_bad_event_does_not_stop_the_next_mention(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("Still answering."))
        # users.info answers a user that is not an object: the handler itself fails on this event.
        w.slack.users["U0ODD"] = "not a user"
        await w.slack.mention(GENERAL, "U0ODD", "break please")
        # Envelopes that are not events the bridge can read at all.
        await w.slack._event({"type": "app_mention", "channel": 5, "user": None, "text": ["x"]})
        await w.slack._envelope("events_api", {"event": "garbage", "event_id": "Ev-bad"})
        await w.slack._envelope("interactive", {"type": "block_actions"})
        sent = await w.slack.mention(GENERAL, ALICE, "are you there?")
        (stream,) = await answered(w, sent.ts, 1)
        assert "Still answering." in stream.text
        assert len(w.model.requests) == 1


# --- reply fallbacks ----------------------------------------------------------------------------------------------


async def test_streaming_refused_at_call_time_posts_whole_and_is_remembered(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.slack.refuse_streaming_with = "streaming_not_supported"
        w.model.script("m", text("Whole first."), text("Whole second."))
        sent = await w.slack.mention(GENERAL, ALICE, "post it whole")
        (first,) = await until(lambda: [m for m in thread_posts(w.slack, sent.ts) if "Whole first." in m["text"]])
        assert first["text"] == "Whole first."
        (plan, prose) = first["blocks"]
        assert plan["type"] == "plan" and all(t["status"] == "complete" for t in plan["tasks"])
        assert prose == {"type": "markdown", "text": "Whole first."}
        status = await w.client.call("chat.status", workspace_id=w.ws)
        assert status["streamingAvailable"] is False and status["state"] == "connected"
        starts = len(w.slack.calls_of("chat.startStream"))
        assert starts == 1
        await w.slack.message(GENERAL, ALICE, "and again", thread_ts=sent.ts)
        await until(lambda: [m for m in thread_posts(w.slack, sent.ts) if m["text"] == "Whole second."])
        # The later turn on this connection did not try to stream.
        assert len(w.slack.calls_of("chat.startStream")) == starts and w.slack.streams == {}


async def test_cards_refused_prose_still_streams_and_later_turns_send_no_cards(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.slack.refuse_chunks_with = "invalid_blocks"
        w.model.script("m", text("Prose without a card."), text("Second, no card."))
        sent = await w.slack.mention(GENERAL, ALICE, "no cards here")
        (stream,) = await answered(w, sent.ts, 1)
        assert stream.text == "Prose without a card." and stream.chunks == [
            c for c in stream.chunks if c["type"] == "markdown_text"
        ]
        assert w.slack.messages == []  # nothing posted whole beside the stream
        mark = len(w.slack.calls)
        await w.slack.message(GENERAL, ALICE, "again", thread_ts=sent.ts)
        second = (await answered(w, sent.ts, 2))[1]
        assert second.text == "Second, no card."
        assert card_chunks_sent(w.slack, mark) == []
        assert all(c.args.get("task_display_mode") is None for c in w.slack.calls_of("chat.startStream")[1:])


async def test_a_rate_limited_append_waits_and_drops_nothing(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        reply = long_text(5_000)
        w.slack.ratelimit("chat.appendStream", times=2, retry_after=1)
        w.model.script("m", text(reply, chunk_size=200))
        sent = await w.slack.mention(GENERAL, ALICE, "a long one, slowly")
        (stream,) = await answered(w, sent.ts, 1)
        assert stream.text == reply
        appends = w.slack.calls_of("chat.appendStream")
        assert len(appends) >= 3  # two answered 429, then the same append again, and the rest


# --- runs started in the product ----------------------------------------------------------------------------------


async def test_a_product_run_streams_to_the_bridge_creator_until_they_unlink(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("From chat."), text("Started in Hangar."), text("Posted whole now."))
        sent = await w.slack.mention(GENERAL, ALICE, "open the bridge")
        await answered(w, sent.ts, 1)
        (space,) = await chat_spaces(w)
        run_args = {"workspace_id": w.ws, "agent_id": w.agent_id, "space_id": space["id"]}
        await w.client.call("agents.run", **run_args, prompt="continue from the product")
        second = (await answered(w, sent.ts, 2))[1]
        assert second.text == "Started in Hangar."
        assert second.recipient_user_id == ALICE and second.recipient_team_id == "T0TEAM"
        # The person typed that prompt in the product: it is mirrored to the thread with their name.
        assert any(m["text"].endswith(": continue from the product") for m in thread_posts(w.slack, sent.ts))
        unlinked = await w.client.call("chat.unlinkUser", workspace_id=w.ws, provider=PROVIDER)
        assert unlinked == {"unlinked": True}
        starts = len(w.slack.calls_of("chat.startStream"))
        await w.client.call("agents.run", **run_args, prompt="and once more")
        (whole,) = await until(lambda: [m for m in thread_posts(w.slack, sent.ts) if m["text"] == "Posted whole now."])
        assert whole["blocks"][0]["type"] == "plan"
        assert len(w.slack.calls_of("chat.startStream")) == starts


# --- limits -------------------------------------------------------------------------------------------------------


async def test_a_reply_past_one_message_rolls_over_and_nothing_is_lost(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        reply = long_text(MESSAGE_MAX + 2_500)
        w.model.script("m", text(reply, chunk_size=500))
        sent = await w.slack.mention(GENERAL, ALICE, "write a lot")
        await until(lambda: w.slack.calls_of("chat.stopStream") and all(
            s.state == "stopped" for s in thread_streams(w.slack, sent.ts)
        ) and len(thread_streams(w.slack, sent.ts)) >= 2 and sum(
            len(s.text) for s in thread_streams(w.slack, sent.ts)) >= len(reply))  # fmt: skip
        streams = thread_streams(w.slack, sent.ts)
        assert len(streams) == 2
        assert all(len(s.text) <= MESSAGE_MAX for s in streams)
        assert "".join(s.text for s in streams) == reply
        assert all(s.recipient_user_id == ALICE for s in streams)
        assert w.slack.messages == []


async def test_a_streamed_message_never_passes_the_providers_limit(tmp_path: Path) -> None:
    """At the limit a reply fills one streamed message; one character more opens a second message rather than
    make one of 12,001 (the emulator caps each append, not the message: the bridge must count)."""
    async with world(tmp_path) as w:
        one_past = [3 * APPEND_MAX, MESSAGE_MAX + 1 - 3 * APPEND_MAX]  # the append that would pass it goes on
        for size, sizes in ((MESSAGE_MAX, [MESSAGE_MAX]), (MESSAGE_MAX + 1, one_past)):
            reply = "z" * size  # no line or word to split on: the bridge cuts by count alone
            w.model.script("m", text(reply, chunk_size=size))
            sent = await w.slack.mention(GENERAL, ALICE, f"write {size} characters")
            streams = await streamed_whole(w.slack, sent.ts, size)
            assert [len(s.text) for s in streams] == sizes
            assert "".join(s.text for s in streams) == reply


async def test_a_reply_over_the_limit_is_truncated_with_a_pointer(tmp_path: Path) -> None:
    async with world(tmp_path, public_url=PUBLIC) as w:
        reply = long_text(REPLY_MAX + 1_000)
        w.model.script("m", text(reply, chunk_size=2_000))
        sent = await w.slack.mention(GENERAL, ALICE, "write far too much")
        await until(lambda: w.slack.calls_of("chat.stopStream") and all(
            s.state == "stopped" for s in thread_streams(w.slack, sent.ts)
        ) and "too long for chat" in "".join(s.text for s in thread_streams(w.slack, sent.ts)), timeout=60)  # fmt: skip
        (space,) = await chat_spaces(w)
        streams = thread_streams(w.slack, sent.ts)
        whole = "".join(s.text for s in streams)
        link = f"{PUBLIC}/open/workspaces/{w.ws}/spaces/{space['id']}"
        assert whole.endswith(f"The reply was too long for chat and was cut here. The whole reply is in Hangar: {link}")
        assert len(whole) <= REPLY_MAX
        kept = whole[: whole.index("\n\n… The reply was too long")]
        assert reply.startswith(kept) and len(kept) > REPLY_MAX - 1_000
        assert len(streams) == 4 and all(len(s.text) <= MESSAGE_MAX for s in streams)


# --- restart ------------------------------------------------------------------------------------------------------


async def test_a_reply_streaming_when_the_server_stops_is_finished_after_the_restart(tmp_path: Path) -> None:
    async with running_slack() as slack, running_fake_openai() as model:
        model.script("m", text("never heard", stall_seconds=15))
        async with world(tmp_path, slack=slack, model=model, public_url=PUBLIC) as w:
            sent = await slack.mention(GENERAL, ALICE, "take your time")
            (stream,) = await until(lambda: thread_streams(slack, sent.ts))
            await until(lambda: model.requests)  # the agent waits on the model
            ws = w.ws
            (space,) = await chat_spaces(w)
        assert stream.state == "streaming"
        assert [c for c in stream.chunks if c["type"] == "task_update"][-1]["title"] == ACCEPTED
        hellos = slack.hellos
        async with chat_server(tmp_path / "data", slack, public_url=PUBLIC) as srv:
            stop = await until(lambda: [c for c in slack.calls_of("chat.stopStream") if c.args["ts"] == stream.ts])
            await slack.wait_hellos(hellos + 1)  # and the connection is live again
            assert srv.ctx is not None
        assert stream.state == "stopped"
        blocks = stop[0].args["blocks"]
        blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
        (plan,) = blocks
        assert plan["type"] == "plan" and plan["title"] == "take your time"
        statuses = {t["title"]: t["status"] for t in plan["tasks"]}
        assert ACCEPTED not in statuses
        (setup,) = [t for t in plan["tasks"] if t["title"].startswith(RESTARTED)]
        assert setup["status"] == "error"
        link = f"{PUBLIC}/open/workspaces/{ws}/spaces/{space['id']}"
        assert any(s.get("url") == link for t in plan["tasks"] for s in t.get("sources", []))


# --- the deep link ------------------------------------------------------------------------------------------------


async def test_the_deep_link_a_card_points_to_opens_the_space(tmp_path: Path) -> None:
    async with world(tmp_path, public_url=PUBLIC) as w:
        w.model.script("m", text("Look in Hangar."))
        sent = await w.slack.mention(GENERAL, ALICE, "where is it?")
        (stream,) = await answered(w, sent.ts, 1)
        urls = [s["url"] for c in stream.chunks for s in c.get("sources", []) if c["type"] == "task_update"]
        (space,) = await chat_spaces(w)
        assert urls == [f"{PUBLIC}/open/workspaces/{w.ws}/spaces/{space['id']}"]
        async with httpx.AsyncClient(base_url=w.srv.url) as http:
            page = await http.get(urls[0].removeprefix(PUBLIC))
            assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
            assert page.headers["content-type"].startswith("text/html")
            assert f'href="hangar://workspaces/{w.ws}/spaces/{space["id"]}"' in page.text
            for bad in (f"{space['id']}$", "x" * 129, "a%20b", "..%2Fetc"):
                missing = await http.get(f"/open/workspaces/{w.ws}/spaces/{bad}")
                assert missing.status_code == 404, bad


async def test_a_card_refused_on_an_append_is_dropped_and_the_prose_goes_on(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        # The card opens with the mention; the model is slow to start, and meanwhile the provider turns cards off.
        w.model.script("m", Reply(reasoning="weighing it", text="Thought, then wrote.", stall_seconds=1.0))
        sent = await w.slack.mention(GENERAL, ALICE, "think first")
        (stream,) = await until(lambda: thread_streams(w.slack, sent.ts))
        assert any(c["type"] == "plan_update" for c in stream.chunks)
        mark = len(w.slack.calls)
        w.slack.refuse_chunks_with = "invalid_blocks"
        await answered(w, sent.ts, 1)
        assert stream.text == "Thought, then wrote."
        # One offer of the card was refused; the same append went again at once without it, and no call after
        # that carried a card (the stop included).
        offered = [c for c in w.slack.calls[mark:] if c.method in STREAM_METHODS and card_chunks_sent_in(c)]
        assert len(offered) == 1 and offered[0].method == "chat.appendStream"
        at = w.slack.calls.index(offered[0])
        retry = w.slack.calls[at + 1]
        assert retry.method == "chat.appendStream" and not card_chunks_sent_in(retry)
        assert w.slack.calls_of("chat.stopStream")[-1].args.get("chunks") in (None, "", "[]")


def card_chunks_sent_in(call: Any) -> bool:
    chunks = call.args.get("chunks")
    chunks = json.loads(chunks) if isinstance(chunks, str) else chunks or []
    return any(ch.get("type") in CARD_CHUNKS for ch in chunks)


async def test_two_turns_running_at_once_in_one_thread_each_finish_their_card(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("First, slowly.", stall_seconds=1.5), text("Second, quickly."))
        sent = await w.slack.mention(GENERAL, ALICE, "first question")
        await until(lambda: w.model.requests)  # the first turn's model call is under way
        await w.slack.message(GENERAL, ALICE, "second question", thread_ts=sent.ts)
        await until(lambda: len(w.model.requests) == 2)
        streams = await answered(w, sent.ts, 2)
        await settle()
        assert sorted(s.text for s in streams) == ["First, slowly.", "Second, quickly."]
        assert all(s.state == "stopped" for s in thread_streams(w.slack, sent.ts))
        assert len(thread_streams(w.slack, sent.ts)) == 2


async def test_a_restart_after_a_roll_over_finishes_the_open_message_and_keeps_the_first(tmp_path: Path) -> None:
    async with running_slack() as slack, running_fake_openai() as model:
        reply = long_text(MESSAGE_MAX + 4_000)
        # The model streams slowly, so the server stops while the second message is open.
        model.script("m", text(reply, chunk_size=400, delay_between_chunks=0.25))
        async with world(tmp_path, slack=slack, model=model) as w:
            sent = await slack.mention(GENERAL, ALICE, "a long one, then a restart")
            first, second = await until(
                lambda: len(thread_streams(slack, sent.ts)) >= 2 and thread_streams(slack, sent.ts)
            )
            del w
        assert first.state == "stopped" and second.state == "streaming"
        kept = first.text
        hellos = slack.hellos
        async with chat_server(tmp_path / "data", slack):
            await until(lambda: second.state == "stopped")
            await slack.wait_hellos(hellos + 1)
        assert [c.args["ts"] for c in slack.calls_of("chat.update")] == []
        (stop,) = [c for c in slack.calls_of("chat.stopStream") if c.args["ts"] == second.ts]
        assert RESTARTED in json.dumps(stop.args["blocks"])
        assert first.text == kept and len(kept) > 0


async def test_a_restart_finishes_a_card_the_provider_ended_meanwhile_with_an_update(tmp_path: Path) -> None:
    async with running_slack() as slack, running_fake_openai() as model:
        model.script("m", text("never heard", stall_seconds=15))
        async with world(tmp_path, slack=slack, model=model) as w:
            sent = await slack.mention(GENERAL, ALICE, "slow again")
            (stream,) = await until(lambda: thread_streams(slack, sent.ts))
            await until(lambda: model.requests)
            del w
        stream.state = "ended"  # the provider closed the stream on its side while the server was down
        hellos = slack.hellos
        async with chat_server(tmp_path / "data", slack):
            (update,) = await until(lambda: slack.calls_of("chat.update"))
            await slack.wait_hellos(hellos + 1)
        assert update.args["ts"] == stream.ts and update.args["text"].startswith(RESTARTED)
        blocks = update.args["blocks"]
        (plan,) = json.loads(blocks) if isinstance(blocks, str) else blocks
        assert [t["status"] for t in plan["tasks"]] == ["error"] and plan["title"] == "slow again"


async def test_a_slash_command_sent_again_files_one_ticket(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        envelope = await w.slack.slash("/hangar", "ticket Only once", ALICE, GENERAL)
        first = await w.slack.acked(envelope)
        assert first is not None and "Only once" in first["text"]
        await w.slack.redeliver(envelope)
        await asyncio.sleep(0.5)
        tickets = await w.client.call("tickets.list", workspace_id=w.ws)
        listed = tickets["tickets"] if isinstance(tickets, dict) else tickets
        assert [t["title"] for t in listed] == ["Only once"]
