"""The Slack transport against the emulator over real HTTP and WebSocket, with slack_sdk's real clients.

Time that the transport measures (backoff, Retry-After) runs on a FakeClock the tests move; the emulator stamps
every Web API call with that clock, so dial times are asserted in clock seconds, never wall time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from hangar.chat.errors import TRANSPORT_CODE, ChatProviderError
from hangar.chat.inbound import InboundEvent, InboundMessage, SlashCommand
from hangar.chat.providers.slack import connection as connection_module
from hangar.chat.providers.slack.api import SlackApi
from hangar.chat.providers.slack.connection import ConnectionState, SlackConnection
from hangar.core.clock import FakeClock
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, BOT_USER_ID, TEAM_ID, SlackEmulator, running_slack
from tests.support.chat import until

SAFETY = 10.0  # seconds a test may wait for the peer before it is a failure; never asserted on


@dataclass
class Bridge:
    """What a bridge would be for the connection: it collects events and states."""

    emu: SlackEmulator
    clock: FakeClock
    api: SlackApi
    conn: SlackConnection
    events: list[InboundEvent] = field(default_factory=list)
    states: list[tuple[ConnectionState, str | None]] = field(default_factory=list)
    answer: Callable[[InboundEvent], Awaitable[str | None]] | None = None

    def dial_times(self) -> list[float]:
        return [c.at or 0.0 for c in self.emu.calls_of("apps.connections.open")]

    async def advance_to_next_dial(self, expected_delay: float) -> None:
        """The supervisor is asleep for exactly ``expected_delay``: wake it and see it dial."""
        dials = len(self.dial_times())
        await until(lambda: self.clock.pending_sleepers == 1, SAFETY)
        self.clock.advance(expected_delay - 1e-6)
        await asyncio.sleep(0.05)
        assert len(self.dial_times()) == dials, "dialled before its backoff was over"
        self.clock.advance(1e-6)
        await until(lambda: len(self.dial_times()) == dials + 1, SAFETY)


@pytest.fixture
async def emu() -> AsyncIterator[SlackEmulator]:
    async with running_slack(FakeClock()) as fake:
        yield fake


def make_bridge(emu: SlackEmulator, rand: Callable[[], float] = lambda: 1.0) -> Bridge:
    clock = emu.clock
    assert isinstance(clock, FakeClock)
    api = SlackApi(BOT_TOKEN, clock=clock, api_url=emu.api_url)
    holder: list[Bridge] = []

    async def on_event(event: InboundEvent) -> str | None:
        bridge = holder[0]
        bridge.events.append(event)
        return await bridge.answer(event) if bridge.answer else None

    conn = SlackConnection(api, APP_TOKEN, clock, on_event, lambda s, m: holder[0].states.append((s, m)), rand=rand)
    holder.append(Bridge(emu, clock, api, conn))
    return holder[0]


@pytest.fixture
async def bridge(emu: SlackEmulator) -> AsyncIterator[Bridge]:
    b = make_bridge(emu)
    yield b
    await b.conn.stop()
    await b.api.aclose()


async def connect(b: Bridge) -> None:
    b.conn.start()
    await until(lambda: b.conn.state == "connected", SAFETY)


async def test_connected_on_hello(bridge: Bridge) -> None:
    await connect(bridge)
    assert bridge.states == [("connecting", None), ("connected", None)]
    assert bridge.conn.bot_user_id == BOT_USER_ID and bridge.conn.team_id == TEAM_ID
    assert [c.method for c in bridge.emu.calls] == ["auth.test", "apps.connections.open"]
    assert bridge.emu.calls[0].token == BOT_TOKEN and bridge.emu.calls[1].token == APP_TOKEN
    await bridge.conn.stop()
    assert bridge.conn.state == "disconnected"


async def test_events_arrive_normalized_twin_dropped_redelivery_deduped(bridge: Bridge) -> None:
    emu = bridge.emu
    emu.add_channel("D0ALICE", "")
    await connect(bridge)
    mention = await emu.mention("C0GENERAL", "U0ALICE", "fix the build", thread_ts="1.1")
    plain = await emu.message("C0GENERAL", "U0ALICE", "lunch?")
    dm = await emu.dm("D0ALICE", "U0ALICE", "hello bot")
    dropped = [
        await emu.message("C0GENERAL", "U0OTHERBOT", "beep", bot_id="B0OTHER"),
        await emu.message("C0GENERAL", "U0ALICE", "edited", subtype="message_changed"),
        await emu.message("C0GENERAL", BOT_USER_ID, "our own post"),
    ]
    for sent in (mention, plain, dm, *dropped):
        for envelope_id in sent.envelope_ids:
            assert await emu.acked(envelope_id) is None  # an empty ack, for every envelope
    await emu.redeliver(mention.envelope_ids[0])
    await emu.acked(mention.envelope_ids[0])
    last = await emu.dm("D0ALICE", "U0ALICE", "last")
    await until(lambda: any(isinstance(e, InboundMessage) and e.ts == last.ts for e in bridge.events), SAFETY)
    await asyncio.sleep(0.05)

    got = [(e.kind, e.channel_id, e.text) for e in bridge.events if isinstance(e, InboundMessage)]
    assert sorted(got) == sorted(
        [
            ("mention", "C0GENERAL", f"<@{BOT_USER_ID}> fix the build"),
            ("message", "C0GENERAL", "lunch?"),
            ("dm", "D0ALICE", "hello bot"),
            ("dm", "D0ALICE", "last"),
        ]
    )
    first = next(e for e in bridge.events if isinstance(e, InboundMessage) and e.kind == "mention")
    assert (first.team_id, first.user_id, first.ts, first.thread_ts) == (TEAM_ID, "U0ALICE", mention.ts, "1.1")
    assert emu.envelopes[mention.envelope_ids[0]].body["retry_attempt"] == 1


async def test_ack_comes_before_the_handler_and_a_failing_handler_kills_nothing(bridge: Bridge) -> None:
    release = asyncio.Event()

    async def answer(event: InboundEvent) -> str | None:
        if isinstance(event, InboundMessage) and event.text == "boom":
            raise RuntimeError("handler bug")
        await release.wait()
        return None

    bridge.answer = answer
    await connect(bridge)
    held = await bridge.emu.message("C0GENERAL", "U0ALICE", "slow")
    await bridge.emu.acked(held.envelope_ids[0])  # acked while its handler is still waiting
    await bridge.emu.message("C0GENERAL", "U0ALICE", "boom")
    after = await bridge.emu.message("C0GENERAL", "U0ALICE", "after")
    await until(lambda: any(isinstance(e, InboundMessage) and e.ts == after.ts for e in bridge.events), SAFETY)
    assert bridge.conn.state == "connected"
    release.set()


async def test_rotation_reconnects_at_once_without_backoff_growth(bridge: Bridge) -> None:
    emu = bridge.emu
    await connect(bridge)
    for n, reason in enumerate(["refresh_requested", "warning"], start=2):
        await emu.rotate(reason)
        await emu.wait_hellos(n)
        await until(lambda: bridge.conn.state == "connected" and len(emu.links) == 1, SAFETY)
    assert bridge.dial_times() == [1000.0, 1000.0, 1000.0]  # no clock time passed: nobody slept
    assert bridge.clock.pending_sleepers == 0
    assert [s for s, _ in bridge.states] == ["connecting", "connected"] * 3
    # The backoff was not escalated by the rotations: a drop now waits the first step (1 s at full jitter).
    await emu.drop()
    await bridge.advance_to_next_dial(1.0)
    await until(lambda: bridge.conn.state == "connected", SAFETY)
    # A failing streak ended by a hello leaves nothing behind: a rotation whose new socket is refused backs off
    # from the first step again.
    emu.refuse_connections(3)
    await emu.drop()
    for delay in [1.0, 2.0, 4.0, 8.0]:
        await bridge.advance_to_next_dial(delay)
    await until(lambda: bridge.conn.state == "connected", SAFETY)
    emu.refuse_connections(1)
    await emu.rotate("refresh_requested")
    await until(lambda: bridge.clock.pending_sleepers == 1, SAFETY)  # the prompt dial was refused
    await bridge.advance_to_next_dial(1.0)
    await until(lambda: bridge.conn.state == "connected", SAFETY)
    sent = await emu.message("C0GENERAL", "U0ALICE", "still here")
    await until(lambda: len(bridge.events) == 1, SAFETY)
    assert isinstance(bridge.events[0], InboundMessage) and bridge.events[0].ts == sent.ts


async def test_drop_reconnects_with_capped_exponential_backoff_reset_after_hello(bridge: Bridge) -> None:
    emu = bridge.emu
    await connect(bridge)
    emu.refuse_connections(6)
    await emu.drop()
    await until(lambda: bridge.conn.state == "connecting", SAFETY)
    for delay in [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]:  # rand() = 1: the top of each jitter range
        await bridge.advance_to_next_dial(delay)
    await until(lambda: bridge.conn.state == "connected", SAFETY)
    gaps = [b - a for a, b in zip(bridge.dial_times(), bridge.dial_times()[1:], strict=False)]
    assert gaps == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    # After the hello the backoff starts over.
    await emu.drop()
    await bridge.advance_to_next_dial(1.0)
    await until(lambda: bridge.conn.state == "connected", SAFETY)


async def test_backoff_jitter_stays_within_its_range(emu: SlackEmulator) -> None:
    draws = iter([0.5, 0.25, 0.9])
    b = make_bridge(emu, rand=lambda: next(draws))
    try:
        await connect(b)
        emu.refuse_connections(2)
        await emu.drop()
        for delay in [0.5 * 1, 0.25 * 2, 0.9 * 4]:
            await b.advance_to_next_dial(delay)
        await until(lambda: b.conn.state == "connected", SAFETY)
    finally:
        await b.conn.stop()
        await b.api.aclose()


@pytest.mark.parametrize("token, code", [(APP_TOKEN, "token_revoked"), (BOT_TOKEN, "invalid_auth")])
async def test_refused_credentials_are_terminal(bridge: Bridge, token: str, code: str) -> None:
    bridge.emu.refuse_token(token, code)
    bridge.conn.start()
    await until(lambda: bridge.conn.state == "error", SAFETY)
    assert bridge.conn.error is not None and bridge.conn.error.provider_code == code
    assert bridge.states[-1] == ("error", str(bridge.conn.error))
    assert "xoxb-" not in str(bridge.conn.error) and "xapp-" not in str(bridge.conn.error)
    dials = len(bridge.emu.calls)
    bridge.clock.advance(3600)
    await asyncio.sleep(0.05)
    assert len(bridge.emu.calls) == dials and bridge.clock.pending_sleepers == 0


async def test_missing_scope_names_the_scope(bridge: Bridge) -> None:
    bridge.emu.refuse_token(APP_TOKEN, "missing_scope", needed="connections:write", provided="")
    bridge.conn.start()
    await until(lambda: bridge.conn.state == "error", SAFETY)
    assert "connections:write" in (bridge.states[-1][1] or "")


async def test_revoked_bot_token_on_a_later_call_ends_the_connection(bridge: Bridge) -> None:
    await connect(bridge)
    bridge.emu.refuse_token(BOT_TOKEN, "token_revoked")
    with pytest.raises(ChatProviderError) as refused:
        await bridge.api.post_message(channel="C0GENERAL", text="hi")
    assert refused.value.terminal
    await until(lambda: bridge.conn.state == "error" and not bridge.emu.links, SAFETY)


async def test_link_disabled_is_terminal_with_a_clear_message(bridge: Bridge) -> None:
    await connect(bridge)
    await bridge.emu.rotate("link_disabled")
    await until(lambda: bridge.conn.state == "error", SAFETY)
    assert "Socket Mode is turned off" in (bridge.states[-1][1] or "")
    assert len(bridge.dial_times()) == 1


async def test_ratelimited_socket_url_waits_retry_after(bridge: Bridge) -> None:
    bridge.emu.ratelimit("apps.connections.open", times=1, retry_after=7)
    bridge.conn.start()
    await until(lambda: len(bridge.dial_times()) == 1, SAFETY)
    await bridge.advance_to_next_dial(7.0)
    await until(lambda: bridge.conn.state == "connected", SAFETY)


async def test_429_waited_out_and_the_reply_lands(bridge: Bridge) -> None:
    emu = bridge.emu
    emu.ratelimit("chat.postMessage", times=3, retry_after=2)
    posting = asyncio.create_task(bridge.api.post_message(channel="C0GENERAL", text="the answer"))
    for _ in range(3):
        await until(lambda: bridge.clock.pending_sleepers == 1, SAFETY)
        bridge.clock.advance(2)
    ts = await asyncio.wait_for(posting, SAFETY)
    times = [c.at for c in emu.calls_of("chat.postMessage")]
    assert times == [1000.0, 1002.0, 1004.0, 1006.0]
    assert [m["ts"] for m in emu.messages] == [ts] and emu.messages[0]["text"] == "the answer"


async def test_slash_command_answered_in_the_ack(bridge: Bridge) -> None:
    async def answer(event: InboundEvent) -> str | None:
        return f"you said {event.text}" if isinstance(event, SlashCommand) else None

    bridge.answer = answer
    await connect(bridge)
    envelope_id = await bridge.emu.slash("/hangar", " help ", "U0ALICE", "C0GENERAL")
    assert await bridge.emu.acked(envelope_id) == {"response_type": "ephemeral", "text": "you said help"}
    command = bridge.events[0]
    assert isinstance(command, SlashCommand)
    assert (command.command, command.user_id, command.channel_id, command.team_id) == (
        "/hangar",
        "U0ALICE",
        "C0GENERAL",
        TEAM_ID,
    )


async def test_late_slash_answer_is_posted_ephemerally(bridge: Bridge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "SLASH_ACK_SECONDS", 0.01)
    release = asyncio.Event()

    async def answer(event: InboundEvent) -> str | None:
        await release.wait()
        return "late answer"

    bridge.answer = answer
    await connect(bridge)
    envelope_id = await bridge.emu.slash("/hangar", "ticket x", "U0ALICE", "C0GENERAL")
    assert await bridge.emu.acked(envelope_id) is None
    release.set()
    await until(lambda: len(bridge.emu.ephemerals) == 1, SAFETY)
    assert bridge.emu.ephemerals[0] | {} == {"channel": "C0GENERAL", "user": "U0ALICE", "text": "late answer"}


async def test_stream_calls_recorded_and_refusals_surface_as_provider_codes(bridge: Bridge) -> None:
    emu, api = bridge.emu, bridge.api
    with pytest.raises(ChatProviderError) as missing:
        await api.start_stream(channel="C0GENERAL", thread_ts="1.1", markdown_text="hi")
    assert missing.value.provider_code == "missing_recipient_user_id"
    card = [
        {"type": "plan_update", "title": "fix"},
        {"type": "task_update", "id": "s", "title": "Working on it...", "status": "in_progress"},
    ]
    ts = await api.start_stream(
        channel="C0GENERAL",
        thread_ts="1.1",
        recipient_user_id="U0ALICE",
        recipient_team_id=TEAM_ID,
        chunks=card,
        task_display_mode="plan",
    )
    await api.append_stream(channel="C0GENERAL", ts=ts, chunks=[{"type": "markdown_text", "text": "Hello "}])
    await api.append_stream(channel="C0GENERAL", ts=ts, markdown_text="world")
    with pytest.raises(ChatProviderError) as too_long:
        await api.append_stream(channel="C0GENERAL", ts=ts, markdown_text="x" * 12_001)
    assert too_long.value.provider_code == "msg_too_long"
    emu.refuse_chunks_with = "invalid_chunks"
    with pytest.raises(ChatProviderError) as refused:
        await api.append_stream(channel="C0GENERAL", ts=ts, chunks=card)
    assert refused.value.provider_code == "invalid_chunks"
    emu.break_stream_calls = 1
    with pytest.raises(ChatProviderError) as broken:
        await api.append_stream(channel="C0GENERAL", ts=ts, markdown_text="!")
    assert (broken.value.provider_code, broken.value.status) == (TRANSPORT_CODE, 500)
    await api.stop_stream(channel="C0GENERAL", ts=ts)
    stream = emu.streams[ts]
    assert (stream.state, stream.text, stream.task_display_mode) == ("stopped", "Hello world", "plan")
    assert stream.chunks[:2] == card
    with pytest.raises(ChatProviderError) as ended:
        await api.append_stream(channel="C0GENERAL", ts=ts, markdown_text="more")
    assert ended.value.provider_code == "message_not_in_streaming_state"
    assert [c.method for c in emu.calls].count("chat.appendStream") == 6

    emu.refuse_streaming_with = "streaming_not_supported"
    with pytest.raises(ChatProviderError) as unsupported:
        await api.start_stream(channel="D0ALICE", thread_ts="2.2")
    assert unsupported.value.provider_code == "streaming_not_supported"

    await api.set_thread_status(channel="D0ALICE", thread_ts="2.2", status="is thinking...")
    await api.set_thread_title(channel="D0ALICE", thread_ts="2.2", title="Fix the build")
    status = emu.calls_of("assistant.threads.setStatus")[0].args
    assert (status["channel_id"], status["status"]) == ("D0ALICE", "is thinking...")
    assert emu.calls_of("assistant.threads.setTitle")[0].args["title"] == "Fix the build"


async def test_lookups_rotation_and_manifest(bridge: Bridge) -> None:
    emu, api = bridge.emu, bridge.api
    identity = await api.auth_test()
    assert (identity.team_id, identity.bot_user_id, identity.app_id) == (TEAM_ID, BOT_USER_ID, "A0APP")
    alice = await api.users_info("U0ALICE")
    assert (alice.label, alice.email) == ("alice", "alice@example.com")
    emu.add_user("U0BOB", "bob", "bob@example.com", confirmed=False)
    assert (await api.users_info("U0BOB")).email is None
    assert await api.conversations_info("C0GENERAL") == "general"
    with pytest.raises(ChatProviderError) as unknown:
        await api.conversations_info("C0NOPE")
    assert unknown.value.provider_code == "channel_not_found"

    refresh = emu.issue_refresh_token()
    access, refresh2 = await api.rotate_config_token(refresh)
    assert access.startswith("xoxe.xoxp-") and refresh2 != refresh
    with pytest.raises(ChatProviderError) as spent:
        await api.rotate_config_token(refresh)
    assert spent.value.provider_code == "invalid_refresh_token"
    assert all(refresh not in str(c.args.values()) or c.method == "tooling.tokens.rotate" for c in emu.calls)

    manifest = {"display_information": {"name": "Hangar"}, "oauth_config": {"scopes": {"bot": ["chat:write"]}}}
    created = await api.manifest_create(access, manifest)
    assert created["app_id"] == "A0APP" and emu.manifest == manifest
    await api.manifest_validate(access, manifest)
    grown = {**manifest, "oauth_config": {"scopes": {"bot": ["chat:write", "commands"]}}}
    assert (await api.manifest_update(access, "A0APP", grown))["permissions_updated"] is True
    assert await api.manifest_export(access, "A0APP") == grown
    emu.manifest_errors = [{"message": "bad", "pointer": "/settings"}]
    with pytest.raises(ChatProviderError) as invalid:
        await api.manifest_validate(access, manifest)
    assert invalid.value.provider_code == "invalid_manifest"
    with pytest.raises(ChatProviderError) as wrong_token:
        await api.manifest_export(BOT_TOKEN, "A0APP")
    assert wrong_token.value.provider_code == "not_allowed_token_type"


async def test_unreachable_provider_is_a_transport_error(emu: SlackEmulator) -> None:
    clock = FakeClock()
    api = SlackApi(BOT_TOKEN, clock=clock, api_url="http://127.0.0.1:9/api/")
    try:
        with pytest.raises(ChatProviderError) as unreachable:
            await api.post_message(channel="C0GENERAL", text="x")
        assert unreachable.value.provider_code == TRANSPORT_CODE and not unreachable.value.terminal
    finally:
        await api.aclose()


async def test_tokens_stay_out_of_logs_and_errors(bridge: Bridge, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    emu = bridge.emu
    refresh = emu.issue_refresh_token()
    access, _ = await bridge.api.rotate_config_token(refresh)
    await bridge.api.manifest_validate(access, {"display_information": {"name": "x"}})
    await connect(bridge)
    emu.refuse_token(BOT_TOKEN, "token_revoked")
    with pytest.raises(ChatProviderError) as refused:
        await bridge.api.post_message(channel="C0GENERAL", text="hi")
    await until(lambda: bridge.conn.state == "error", SAFETY)
    for secret in (BOT_TOKEN, APP_TOKEN, refresh, access):
        assert secret not in caplog.text and secret not in str(refused.value)
    assert "token_revoked" in caplog.text
