"""Two real ``hangar serve`` processes on one PostgreSQL database (and on SQLite, on one data directory), one
Slack workspace (the emulator): exactly one of them dials; kill -9 the holder and the other takes the connection
over; a message after the kill gets one reply; the provider's redelivery of an event the dead holder handled is
not handled again; the status either server shows names the holder."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hangar.chat.links import CODE_REFUSAL
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, SlackEmulator, running_slack
from tests.support.chat import ALICE, GENERAL, PROVIDER, until
from tests.support.dialects import DIALECTS, database_url
from tests.support.processes import ServeProcess, hangar_serve, owner_token
from tests.support.rpc import RpcClient
from tests.unit.agents.fake_openai import FakeOpenAI, running_fake_openai, text

pytestmark = pytest.mark.slow

TTL_S = 3  # the claim's lease in these servers: a dead holder's connection is taken over within 4 s


@dataclass
class Pair:
    a: ServeProcess
    b: ServeProcess
    token: str
    ws: str
    slack: SlackEmulator
    model: FakeOpenAI


@pytest.fixture(params=DIALECTS)
async def pair(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Pair]:
    """Server a connects the workspace; b starts after, with the credentials stored (as any restart would). On
    PostgreSQL both use one database; on SQLite, the files of the one data directory."""
    data = tmp_path / "data"
    url = database_url(str(request.param), request)
    first = ("--database-url", url) if url else ()
    async with running_slack() as slack, running_fake_openai() as model:
        env = {"HANGAR_CHATPROVIDER_API_URL": slack.api_url, "HANGAR_CHAT_CLAIM_TTL_SECONDS": str(TTL_S)}
        with hangar_serve(data, *first, "--no-prepare-pack", env=env) as a:
            token = owner_token(data)
            async with RpcClient(a.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="acme"))["id"]
                adapter = {"type": "openai", "baseUrl": model.url, "model": "m", "apiKey": "sk-test"}
                await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter)
                creds = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
                await c.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=creds)
                await slack.wait_hellos(1, timeout=60)
                code = (await c.call("chat.beginUserLink", workspace_id=ws, provider=PROVIDER))["code"]
                answer = await slack.acked(await slack.slash("/hangar", f"link {code.lower()}", ALICE, GENERAL))
                assert answer is not None and "Linked" in answer["text"], answer
            with hangar_serve(data, "--no-prepare-pack", env=env) as b:  # the database the data directory records
                yield Pair(a, b, token, ws, slack, model)


async def status(srv: ServeProcess, p: Pair) -> dict[str, Any]:
    async with RpcClient(srv.ws_url, p.token) as c:
        return dict(await c.call("chat.status", workspace_id=p.ws, provider=PROVIDER))


def dials(slack: SlackEmulator) -> int:
    return len(slack.calls_of("apps.connections.open"))


def replies_in(slack: SlackEmulator, thread_ts: str) -> list[Any]:
    return [s for s in slack.streams.values() if s.thread_ts == thread_ts and s.state == "stopped"]


async def settle(looks: int = 3) -> None:
    """Long enough for each server to look at the claims ``looks`` times (a look every third of the lease)."""
    await asyncio.sleep(looks * TTL_S / 3 + 0.5)


async def test_one_server_dials_and_the_other_takes_over_when_it_is_killed(pair: Pair) -> None:
    p = pair
    await settle()
    assert dials(p.slack) == 1 and p.slack.hellos == 1 and len(p.slack.links) == 1  # only one of the two dialled
    holder = {"host": socket.gethostname(), "pid": p.a.proc.pid}
    for srv in (p.a, p.b):  # either server names the holder, read from the database
        seen = await status(srv, p)
        assert seen["owner"] == holder and seen["state"] == "connected", seen

    p.a.kill9()
    await p.slack.wait_hellos(2, timeout=60)  # the lease ran out and b dialled (the bound: 4/3 of the lease)
    taken = await status(p.b, p)
    assert taken["owner"] == {"host": socket.gethostname(), "pid": p.b.proc.pid}, taken
    await until(lambda: len(p.slack.links) == 1, timeout=30)

    p.model.script("m", text("Answered once."))
    sent = await p.slack.mention(GENERAL, ALICE, "still there?")
    await until(lambda: replies_in(p.slack, sent.ts), timeout=60)
    await settle()
    (reply,) = replies_in(p.slack, sent.ts)
    assert "Answered once." in reply.text
    assert dials(p.slack) == 2  # nobody dials a third time


async def test_an_event_redelivered_across_the_hand_over_is_handled_once(pair: Pair) -> None:
    p = pair
    p.model.script("m", text("First and only answer."), text("A second answer must never come."))
    sent = await p.slack.mention(GENERAL, ALICE, "what is up?")
    await until(lambda: replies_in(p.slack, sent.ts), timeout=60)

    p.a.kill9()
    await p.slack.wait_hellos(2, timeout=60)
    await until(lambda: len(p.slack.links) == 1, timeout=30)
    # The provider saw no ack in time (as it would when the holder died first) and sends the event again: it
    # reaches the server that took over.
    mention_envelope = sent.envelope_ids[0]
    await p.slack.redeliver(mention_envelope)
    await p.slack.acked(mention_envelope, timeout=30)
    await settle()
    assert len(replies_in(p.slack, sent.ts)) == 1
    assert [s for s in p.slack.streams.values() if s.thread_ts == sent.ts and s.state != "stopped"] == []
    assert len(p.model.bodies_for("m")) == 1  # the agent ran once


async def test_a_link_code_minted_through_one_server_is_redeemed_once_by_the_holder_of_the_connection(
    pair: Pair,
) -> None:
    """The code is minted through b, which does not hold the connection; the slash commands that redeem it reach
    a, the holder. Two chat accounts send it at once: exactly one is linked. Neither server logs the code."""
    p = pair
    await settle()
    assert (await status(p.a, p))["owner"] == {"host": socket.gethostname(), "pid": p.a.proc.pid}
    async with RpcClient(p.b.ws_url, p.token) as c:
        me = (await c.call("users.me"))["id"]
        code = (await c.call("chat.beginUserLink", workspace_id=p.ws, provider=PROVIDER))["code"]
    sent = [await p.slack.slash("/hangar", f"link {code}", user, GENERAL) for user in ("U0BOB", "U0CAROL")]
    answers = [await p.slack.acked(envelope, timeout=30) for envelope in sent]
    texts = [a["text"] if a else "" for a in answers]
    assert sorted("Linked" in t for t in texts) == [False, True], texts
    assert any(t == CODE_REFUSAL for t in texts), texts
    winner = "U0BOB" if "Linked" in texts[0] else "U0CAROL"
    async with RpcClient(p.b.ws_url, p.token) as c:
        links = await c.call("chat.listUserLinks", workspace_id=p.ws, provider=PROVIDER)
    assert [(k["userId"], k["externalUserId"]) for k in links] == [(me, winner)]
    again = await p.slack.acked(await p.slack.slash("/hangar", f"link {code}", "U0DAVE", GENERAL), timeout=30)
    assert again is not None and again["text"] == CODE_REFUSAL
    for srv in (p.a, p.b):
        assert code not in srv.log_text()


async def test_a_message_whose_holder_is_killed_between_receiving_and_replying_is_answered_by_the_other(
    pair: Pair,
) -> None:
    """The holder acks the event, records it, and is killed -9 before its reply (it waits on the provider: a
    rate-limited channel look-up): the server that takes the connection over handles it, once."""
    p = pair
    p.model.script("m", text("Answered by the server that took over."), text("A second answer must never come."))
    p.slack.ratelimit("conversations.info", times=1, retry_after=120)
    sent = await p.slack.mention(GENERAL, ALICE, "anyone home?")
    await p.slack.acked(sent.envelope_ids[0], timeout=30)
    await until(lambda: p.slack.calls_of("conversations.info"), timeout=30)  # a is handling it, stalled
    p.a.kill9()
    await p.slack.wait_hellos(2, timeout=60)
    await until(lambda: replies_in(p.slack, sent.ts), timeout=60)
    await settle()
    (reply,) = replies_in(p.slack, sent.ts)
    assert "Answered by the server that took over." in reply.text
    assert len(p.model.bodies_for("m")) == 1  # the agent ran once
    assert "was left unhandled: handling it" in p.b.log_text()
