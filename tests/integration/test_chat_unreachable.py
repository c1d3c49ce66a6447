"""A chat provider that cannot be reached, against the real server: ``chat.status`` says what is wrong (the last
error, the network's own words, never a token, and when the next attempt is due), the log has one line per failed
attempt, a restart keeps the last error until the new process's first attempt answers, and the connection comes
up by itself once the provider is back (the Slack emulator started on the port the server was told).

Backoff runs on a FakeClock the test moves, so attempts happen when the test says and times are exact."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, running_slack
from tests.support.chat import PROVIDER, until
from tests.support.ports import free_port
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.unit.agents.support import server_parts

CONNECTION_LOG = "hangar.chat.providers.slack.connection"
FIRST_BACKOFF_S = 1.0  # the ceiling of the first jittered backoff (connection.BACKOFF_BASE_SECONDS)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def failed_attempts(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == CONNECTION_LOG and r.levelno == logging.WARNING]


@contextlib.asynccontextmanager
async def chat_server(
    data: Path, port: int, clock: FakeClock, **settings: Any
) -> AsyncIterator[tuple[RunningServer, RpcClient]]:
    """The server with the chat part, its provider said to be at ``port`` of loopback."""
    api_url = f"http://127.0.0.1:{port}/api/"
    async with (
        running_server(data, parts=server_parts(), chatprovider_api_url=api_url, clock=clock, **settings) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as client,
    ):
        yield srv, client


async def status_when(client: RpcClient, ws: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    async def look() -> dict[str, Any] | None:
        got = dict(await client.call("chat.status", workspace_id=ws, provider=PROVIDER))
        return got if check(got) else None

    found: dict[str, Any] = await until(look)
    return found


def moved_on(before: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """A status after the next attempt failed too: a newer error, and a next time again."""
    return lambda s: "nextRetryAt" in s and s["lastError"]["at"] != before["lastError"]["at"]


async def next_attempt(clock: FakeClock, status: dict[str, Any]) -> None:
    """Move the clock to the status's next attempt (the supervisor sleeps until then)."""
    due = at(status["nextRetryAt"])
    await until(lambda: clock.pending_sleepers >= 1)
    clock.advance((due - clock.now()).total_seconds() + 1e-3)


async def connect(client: RpcClient, ws: str) -> dict[str, Any]:
    credentials = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
    return dict(await client.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=credentials))


async def test_an_unreachable_provider_says_why_and_when_it_tries_next_then_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port, clock = free_port(), FakeClock()
    async with chat_server(tmp_path / "data", port, clock) as (srv, client):
        ws = await srv.new_workspace("acme")
        assert (await connect(client, ws))["state"] == "connecting"

        first = await status_when(client, ws, lambda s: "lastError" in s)
        assert first["state"] == "connecting" and "error" not in first
        message = first["lastError"]["message"]
        assert message.startswith("auth.test: the chat provider could not be reached (ClientConnectorError: ")
        assert f"127.0.0.1:{port}" in message  # the network's own words: where it tried
        failed_at, due = at(first["lastError"]["at"]), at(first["nextRetryAt"])
        assert failed_at == clock.now()
        assert failed_at <= due <= failed_at + timedelta(seconds=FIRST_BACKOFF_S)
        assert len(failed_attempts(caplog)) == 1
        line = failed_attempts(caplog)[0]
        assert line.startswith(f"chat connection of workspace {ws} ({PROVIDER}): auth.test: ")
        assert "next attempt in" in line

        # Each further attempt that fails: the status moves on, one more line in the log.
        for attempt in (2, 3):
            before = await status_when(client, ws, lambda s: "nextRetryAt" in s)
            await next_attempt(clock, before)
            await status_when(client, ws, moved_on(before))
            assert len(failed_attempts(caplog)) == attempt

        # The provider comes back where the server was told it is: the next attempt connects, the error goes.
        async with running_slack(clock, port=port) as slack:
            waiting = await status_when(client, ws, lambda s: "nextRetryAt" in s)
            await next_attempt(clock, waiting)
            await slack.wait_hellos(1)
            up = await status_when(client, ws, lambda s: s["state"] == "connected")
            assert "lastError" not in up and "nextRetryAt" not in up
            assert len(failed_attempts(caplog)) == 3
    for secret in (BOT_TOKEN, APP_TOKEN):
        assert secret not in caplog.text


async def test_a_restart_keeps_the_last_error_until_its_first_attempt_answers(tmp_path: Path) -> None:
    port, data = free_port(), tmp_path / "data"
    async with chat_server(data, port, FakeClock()) as (srv, client):
        ws = await srv.new_workspace("acme")
        await connect(client, ws)
        before = (await status_when(client, ws, lambda s: "lastError" in s))["lastError"]

    # While the restarted server's first attempt hangs (a listener that accepts and never answers), the status says
    # what failed before the restart, with no next time: it is trying now.
    held: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    listener = await asyncio.start_server(silent, "127.0.0.1", port)
    later = FakeClock(start=datetime(2026, 1, 2, tzinfo=UTC))
    async with chat_server(data, port, later) as (srv, client):
        await until(lambda: held)  # the first attempt is under way
        kept = await client.call("chat.status", workspace_id=ws, provider=PROVIDER)
        assert kept["state"] == "connecting"
        assert kept["lastError"] == before and "nextRetryAt" not in kept

        # That attempt fails: its own error replaces the kept one, with the next time.
        listener.close()  # no new connection is taken (the client's one retry of a dropped call is refused)
        for writer in held:
            writer.close()
        await listener.wait_closed()
        fresh = await status_when(client, ws, lambda s: s.get("lastError", before) != before)
        assert at(fresh["lastError"]["at"]) == later.now() and "nextRetryAt" in fresh
        assert fresh["lastError"]["message"].startswith("auth.test: the chat provider could not be reached")

        async with running_slack(later, port=port) as slack:
            await next_attempt(later, fresh)
            await slack.wait_hellos(1)
            await status_when(client, ws, lambda s: s["state"] == "connected" and "lastError" not in s)
            # Connected: nothing is kept for the next start to show.
            assert not list(data.rglob(f"{PROVIDER}_failure.json"))
