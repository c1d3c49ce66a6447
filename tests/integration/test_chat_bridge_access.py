"""What the chat bridge does for a person is held to the rules the ops hold them to: the role each op needs, and the
guardrails (read-only mode, ask-first), checked by the dispatcher's own checks. End to end: the real server,
slack_sdk's real clients, the Slack emulator over HTTP and WebSocket, and an ``openai`` agent on the scripted model
endpoint. Nothing asserts on wall time; the only sleeps are settling pauses before asserting nothing happened."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.integration.test_chat_bridge_rules import answered, thread_posts
from tests.support.chat import ALICE, GENERAL, PROVIDER, World, chat_spaces, until, world
from tests.support.rpc import RpcClient
from tests.unit.agents.fake_openai import text

GUEST = "U0GUS"
DM = "D0GUS"


async def settle() -> None:
    """A pause before asserting that something did not happen (no assertion depends on its length)."""
    await asyncio.sleep(0.6)


async def refusal_in(w: World, thread_ts: str) -> str:
    posts = await until(lambda: thread_posts(w.slack, thread_ts))
    return str(posts[0]["text"])


async def reply_answered(w: World, thread_ts: str, user: str, text: str) -> str:
    """What the bridge says in the thread next, once ``user`` replied ``text`` there."""
    posted = len(thread_posts(w.slack, thread_ts))
    await w.slack.message(GENERAL, user, text, thread_ts=thread_ts)
    said = await until(lambda: thread_posts(w.slack, thread_ts)[posted:])
    return str(said[0]["text"])


async def nothing_ran(w: World) -> None:
    await settle()
    assert await chat_spaces(w) == [] and w.model.requests == [] and w.slack.streams == {}
    assert (await w.client.call("tickets.list", workspace_id=w.ws))["tickets"] == []


async def linked_guest(w: World, *, by: str) -> None:
    """A guest of the workspace linked to the emulator's ``GUEST``: by their verified email (at their first
    message), or by a link code they minted as a member before their role was lowered to guest (a guest may
    not mint one)."""
    token = await w.srv.new_user_token(w.ws, "guest" if by == "email" else "member", name="gus")
    w.slack.add_user(GUEST, "gus", "gus@example.test" if by == "email" else "gus@elsewhere.example")
    if by == "code":
        async with RpcClient(w.srv.ws_url, token) as gus:
            code = (await gus.call("chat.beginUserLink", workspace_id=w.ws, provider=PROVIDER))["code"]
            user_id = (await gus.call("users.me"))["id"]
        linked = await w.slack.acked(await w.slack.slash("/hangar", f"link {code}", GUEST, GENERAL))
        assert linked is not None and "Linked" in linked["text"]
        await w.client.call("members.setRole", workspace_id=w.ws, user_id=user_id, role="guest")


async def test_a_member_lowered_to_guest_opens_no_space_runs_no_agent_and_files_no_ticket(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await linked_guest(w, by="code")
        sent = await w.slack.mention(GENERAL, GUEST, "open a space for me")
        said = await refusal_in(w, sent.ts)
        assert "spaces.create needs the member role" in said and "guest" in said
        w.slack.add_channel(DM, "gus")
        dm = await w.slack.dm(DM, GUEST, "a private question")
        assert "spaces.create needs the member role" in await refusal_in(w, dm.ts)
        filed = await w.slack.acked(await w.slack.slash("/hangar", "ticket Sneaky | from a guest", GUEST, GENERAL))
        assert filed is not None and "tickets.create needs the member role" in filed["text"]
        await nothing_ran(w)


async def test_a_guest_linked_by_verified_email_is_held_to_the_same_rules(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await linked_guest(w, by="email")
        sent = await w.slack.mention(GENERAL, GUEST, "open a space for me")
        assert "spaces.create needs the member role" in await refusal_in(w, sent.ts)
        links = await w.client.call("chat.listUserLinks", workspace_id=w.ws)
        assert [k["method"] for k in links if k["externalUserId"] == GUEST] == ["email"]  # it was linked, then held
        filed = await w.slack.acked(await w.slack.slash("/hangar", "ticket Sneaky", GUEST, GENERAL))
        assert filed is not None and "tickets.create needs the member role" in filed["text"]
        await nothing_ran(w)


async def test_a_guest_replying_in_a_members_thread_runs_nothing(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("Answered the owner."))
        sent = await w.slack.mention(GENERAL, ALICE, "start a thread")
        await answered(w, sent.ts, 1)
        await linked_guest(w, by="code")
        assert "agents.run needs the member role" in await reply_answered(w, sent.ts, GUEST, "now me")
        await settle()
        assert len(w.model.requests) == 1
        (space,) = await chat_spaces(w)
        msgs = (await w.client.call("messages.list", workspace_id=w.ws, space_id=space["id"]))["messages"]
        assert "now me" not in [m["content"] for m in msgs]


async def test_read_only_mode_refuses_even_the_owner_from_chat(tmp_path: Path) -> None:
    async with world(tmp_path) as w:  # alice is linked to the server owner, the workspace's owner
        await w.client.call("guardrails.set", workspace_id=w.ws, readOnly=True)
        sent = await w.slack.mention(GENERAL, ALICE, "change something")
        assert "read-only mode" in await refusal_in(w, sent.ts)
        filed = await w.slack.acked(await w.slack.slash("/hangar", "ticket Blocked", ALICE, GENERAL))
        assert filed is not None and "read-only mode" in filed["text"]
        await nothing_ran(w)
        # Out of read-only mode, the same mention opens its space and runs.
        await w.client.call("guardrails.set", workspace_id=w.ws, readOnly=False)
        w.model.script("m", text("Now I may."))
        sent = await w.slack.mention(GENERAL, ALICE, "change something now")
        await answered(w, sent.ts, 1)


async def test_a_space_put_in_read_only_mode_takes_no_more_chat_turns(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", text("First answer."))
        sent = await w.slack.mention(GENERAL, ALICE, "first")
        await answered(w, sent.ts, 1)
        (space,) = await chat_spaces(w)
        await w.client.call("guardrails.set", workspace_id=w.ws, space_id=space["id"], readOnly=True)
        assert "this space is in read-only mode" in await reply_answered(w, sent.ts, ALICE, "second")
        await settle()
        assert len(w.model.requests) == 1


async def test_ask_first_is_honoured_from_chat(tmp_path: Path) -> None:
    """Nobody can be asked in the middle of a chat turn: an op the policy demotes to ask-first is refused, naming
    the rule, before anything is made."""
    async with world(tmp_path) as w:
        await w.client.call("guardrails.set", workspace_id=w.ws, askFirst=["processSpawn"])
        sent = await w.slack.mention(GENERAL, ALICE, "run something")
        said = await refusal_in(w, sent.ts)
        assert "agents.run refused" in said and "asks first for processSpawn" in said
        # Filing a ticket runs nothing: ask-first about spawning processes does not hold it.
        filed = await w.slack.acked(await w.slack.slash("/hangar", "ticket Still allowed", ALICE, GENERAL))
        assert filed is not None and "Filed ticket 'Still allowed'" in filed["text"]
        await settle()
        assert await chat_spaces(w) == [] and w.model.requests == []
        tickets = (await w.client.call("tickets.list", workspace_id=w.ws))["tickets"]
        assert [(t["title"], t["reporter"]) for t in tickets] == [("Still allowed", f"user:{w.srv.owner_id}")]
        target = f"ticket:{tickets[0]['id']}"
        audit: list[dict[str, Any]] = await w.client.call("audit.list", workspace_id=w.ws, target=target)
        assert [(e["action"], e["principal"], e["door"]) for e in audit] == [
            ("tickets.create", f"user:{w.srv.owner_id}", "chat")
        ]
