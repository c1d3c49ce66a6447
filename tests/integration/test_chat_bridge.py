"""The chat bridge end to end: the real server, slack_sdk's real clients, the Slack emulator over HTTP and
WebSocket, and an ``openai`` agent on the scripted model endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa

from hangar.agents import ABANDONED
from hangar.chat.answers import ANSWER_TRIES
from hangar.chat.inbound import InboundEvent
from hangar.chat.providers.slack.live import LiveSlack
from hangar.chat.service import ChatService
from tests.peers.slack_emulator import SlackEmulator
from tests.support.chat import ALICE, GENERAL, PROVIDER, chat_spaces, until, world
from tests.unit.agents.fake_openai import text


def stopped_streams(slack: SlackEmulator) -> list[Any]:
    return [s for s in slack.streams.values() if s.state == "stopped"]


async def test_a_mention_opens_a_thread_and_a_space_and_the_agent_answers_there(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("Hello from Ada."), text("Still here."))
        sent = await w.slack.mention(GENERAL, ALICE, "what is up?")
        await until(lambda: stopped_streams(w.slack))
        (stream,) = stopped_streams(w.slack)
        assert stream.thread_ts == sent.ts and stream.channel == GENERAL
        assert stream.recipient_user_id == ALICE and stream.recipient_team_id
        assert stream.task_display_mode == "plan"
        assert "Hello from Ada." in stream.text
        assert any(c.get("type") == "plan_update" for c in stream.chunks)
        (space,) = await chat_spaces(w)
        assert space["title"] == "#general · what is up?"
        events = await w.client.call("events.list", workspace_id=w.ws, types=["workspace.spaceProvisioningChanged"])
        setup = [(e["payload"]["state"], e["payload"].get("step"), e["payload"].get("detail")) for e in events]
        assert setup == [("provisioning", "agent", "Ada"), ("ready", None, None)], setup
        msgs = (await w.client.call("messages.list", workspace_id=w.ws, space_id=space["id"]))["messages"]
        prompt = msgs[0]
        assert prompt["content"] == "what is up?" and prompt["author"]["kind"] == "user"
        assert prompt["metadata"]["chat"] == {
            "provider": PROVIDER,
            "teamId": "T0TEAM",
            "channelId": GENERAL,
            "threadId": sent.ts,
            "messageId": sent.ts,
            "userId": ALICE,
            "userLabel": prompt["author"]["name"],
        }
        # A reply in the thread continues the same space, no mention needed.
        await w.slack.message(GENERAL, ALICE, "and then?", thread_ts=sent.ts)
        await until(lambda: len(stopped_streams(w.slack)) == 2)
        assert len(await chat_spaces(w)) == 1
        assert "Still here." in stopped_streams(w.slack)[1].text
        # A plain channel message is not ours: no space, no run, no reply.
        posted = len(w.slack.messages)
        await w.slack.message(GENERAL, ALICE, "lunch anyone?")
        await asyncio.sleep(0.5)
        assert len(await chat_spaces(w)) == 1 and len(w.slack.messages) == posted


async def test_someone_not_linked_is_refused_in_the_thread_and_nothing_runs(tmp_path: Path) -> None:
    async with world(tmp_path, link=False) as w:
        w.slack.add_user("U0BOB", "bob", "bob@elsewhere.example")
        sent = await w.slack.mention(GENERAL, "U0BOB", "do something")
        refusal = await until(lambda: [m for m in w.slack.messages if m.get("thread_ts") == sent.ts])
        assert "not linked" in refusal[0]["text"] and "/hangar link" in refusal[0]["text"]
        assert await chat_spaces(w) == [] and w.model.requests == []


async def test_a_person_typing_in_the_product_is_mirrored_and_chat_messages_are_not_echoed(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("Answer."))
        sent = await w.slack.mention(GENERAL, ALICE, "mirror me")
        await until(lambda: stopped_streams(w.slack))
        (space,) = await chat_spaces(w)
        before = len(w.slack.messages)
        await w.client.call("messages.post", workspace_id=w.ws, space_id=space["id"], content="From the product")
        mirrored = await until(lambda: w.slack.messages[before:])
        assert mirrored[0]["thread_ts"] == sent.ts and mirrored[0]["text"].endswith(": From the product")
        await asyncio.sleep(0.3)
        # The chat's own message (the prompt) never came back, nor did the agent's reply as a plain message.
        assert all("mirror me" not in m["text"] and "Answer." not in m["text"] for m in w.slack.messages)


async def test_a_dm_gets_one_space_a_title_and_a_thinking_status(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.slack.add_channel("D0ALICE", "alice")
        w.model.script("m", text("Hi in private."), text("Again."))
        first = await w.slack.dm("D0ALICE", ALICE, "private question")
        await until(lambda: stopped_streams(w.slack))
        await w.slack.dm("D0ALICE", ALICE, "second one")
        await until(lambda: len(stopped_streams(w.slack)) == 2)
        (space,) = await chat_spaces(w)
        assert space["title"] == "Slack DM · private question"
        titles = w.slack.calls_of("assistant.threads.setTitle")
        assert titles and titles[0].args["thread_ts"] == first.ts
        statuses = [c.args["status"] for c in w.slack.calls_of("assistant.threads.setStatus")]
        assert statuses[:2] == ["is thinking...", ""]


async def test_slash_commands_answer_help_unknown_and_file_tickets(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        helped = await w.slack.acked(await w.slack.slash("/ask", "", ALICE, GENERAL))
        assert helped is not None and "`/ask link <code>`" in helped["text"]
        unknown = await w.slack.acked(await w.slack.slash("/ask", "dance", ALICE, GENERAL))
        assert unknown is not None and "`/ask dance` is not something I know" in unknown["text"]
        filed = await w.slack.acked(
            await w.slack.slash("/ask", "ticket Broken build | it fails | badly", ALICE, GENERAL)
        )
        assert filed is not None and "Broken build" in filed["text"]
        tickets = await w.client.call("tickets.list", workspace_id=w.ws)
        (ticket,) = tickets["tickets"] if isinstance(tickets, dict) else tickets
        assert ticket["title"] == "Broken build" and ticket["description"] == "it fails | badly"
        bad = await w.slack.acked(await w.slack.slash("/ask", "link ZZZZZZ", "U0BOB", GENERAL))
        assert bad is not None and "not valid" in bad["text"]


async def test_a_new_conversation_narrates_its_setup_on_the_card(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        # The model takes its time: the card's setup row shows where the request is meanwhile.
        w.model.script("m", text("Ready now.", stall_seconds=2.5))
        await w.slack.mention(GENERAL, ALICE, "narrate please")
        (stream,) = await until(lambda: stopped_streams(w.slack))
        setup = [c for c in stream.chunks if c.get("type") == "task_update" and c.get("id") == "setup"]
        titles = [c["title"] for c in setup]
        assert titles[0] == "Working on it..."
        # Narrated after the accepted card: the agent joining the new space, then starting.
        assert set(titles[1:]) & {"Setting up Ada...", "Starting the agent..."}, titles
        assert setup[-1]["status"] == "complete" and "Ready now." in stream.text


async def test_a_chat_account_guessing_link_codes_is_stopped_after_five_wrong_ones(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        code = (await w.client.call("chat.beginUserLink", workspace_id=w.ws, provider=PROVIDER))["code"]
        wrong = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"
        # Five wrong guesses are answered as wrong; the sixth attempt is refused unread, even the right code.
        for _ in range(5):
            answer = await w.slack.acked(await w.slack.slash("/ask", f"link {wrong}", "U0MALLORY", GENERAL))
            assert answer is not None and "not valid" in answer["text"]
        refused = await w.slack.acked(await w.slack.slash("/ask", f"link {code}", "U0MALLORY", GENERAL))
        assert refused is not None and "Too many wrong link codes" in refused["text"], refused
        # Another chat account is not held to it: the code still links the person who holds it.
        linked = await w.slack.acked(await w.slack.slash("/ask", f"link {code}", "U0CAROL", GENERAL))
        assert linked is not None and "Linked" in linked["text"], linked


async def test_a_message_handled_again_after_its_run_was_dispatched_is_answered_by_that_run(tmp_path: Path) -> None:
    """A handler that died after dispatching the message's run and before marking the message handled leaves it
    to be handled again (``InboundSeen``): the second handling follows the run the first dispatched, and
    dispatches another only when that run was closed because its driver died, up to ``ANSWER_TRIES`` runs."""
    async with world(tmp_path) as w:
        w.model.script("m", text("Only once."), text("Second try."), text("Third try."))
        live = cast(LiveSlack, w.srv.ctx.service(ChatService).registry.get(w.ws, PROVIDER))
        handled: list[InboundEvent] = []
        original = live.bridge.on_event

        async def recording(event: InboundEvent) -> str | None:
            handled.append(event)
            return await original(event)

        live.bridge.on_event = recording  # type: ignore[method-assign]
        await w.slack.mention(GENERAL, ALICE, "once please")
        await until(lambda: stopped_streams(w.slack))
        (event,) = handled

        async def runs() -> list[dict[str, Any]]:
            return list((await w.client.call("runs.list", workspace_id=w.ws))["runs"])

        async def again(expected: str, streams: int) -> None:
            await original(event)  # what the next holder of the connection does with an unhandled message
            await until(lambda: len(stopped_streams(w.slack)) == streams)
            assert expected in stopped_streams(w.slack)[-1].text

        await again("Only once.", 2)  # the same run's answer, replayed from its events
        assert len(await runs()) == 1 and len(w.model.requests) == 1

        async def abandon(run_id: str) -> None:
            engine = await w.srv.ctx.dbs.workspace(w.ws)
            async with engine.begin() as conn:
                t = sa.table("agent_runs", sa.column("id"), sa.column("error"))
                await conn.execute(sa.update(t).where(t.c.id == run_id).values(error=ABANDONED))

        for n, answer in ((2, "Second try."), (3, "Third try.")):
            await abandon((await runs())[0]["id"])  # its driver died with the first handler: it answered nothing
            await again(answer, 2 + n - 1)
            assert len(await runs()) == n and len(w.model.requests) == n
        await abandon((await runs())[0]["id"])
        await again("Third try.", 5)  # no fourth run: the last try is followed whatever became of it
        assert len(await runs()) == ANSWER_TRIES == 3 and len(w.model.requests) == 3
