"""The connection registry: one connection per workspace and provider, honest about having no transport."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from hangar.chat.connections import NO_TRANSPORT, START_FAILED, ChatConnection, ConnectionRegistry
from hangar.chat.space_links import space_title
from hangar.identity import Workspace
from tests.unit.chat.core.recorded import Recorded

WS = Workspace("ws-1", "Acme", datetime(2026, 1, 1, tzinfo=UTC), "u-1")


async def test_without_a_factory_the_state_says_nothing_dials() -> None:
    registry = ConnectionRegistry()
    conn = await registry.restart(WS, "chatprovider", {"botToken": "xoxb-1"})
    assert (conn.state, conn.error, conn.streaming_available) == ("error", NO_TRANSPORT, False)


async def test_a_restart_stops_the_previous_connection_first() -> None:
    made: list[Recorded] = []

    async def factory(ws: Workspace, provider: str, creds: Mapping[str, str]) -> ChatConnection:
        made.append(Recorded(WS, creds))
        return made[-1]

    registry = ConnectionRegistry(factory)
    await registry.restart(WS, "chatprovider", {"botToken": "xoxb-1"})
    await registry.restart(WS, "chatprovider", {"botToken": "xoxb-2"})
    assert [m.stopped for m in made] == [True, False]
    assert registry.get("ws-1", "chatprovider") is made[1] and made[1].credentials == {"botToken": "xoxb-2"}
    await registry.stop_all()
    assert made[1].stopped and registry.get("ws-1", "chatprovider") is None


async def test_a_factory_that_fails_leaves_an_error_state_without_its_message() -> None:
    async def factory(ws: Workspace, provider: str, creds: Mapping[str, str]) -> ChatConnection:
        raise RuntimeError(f"boom {creds['botToken']}")

    conn = await ConnectionRegistry(factory).restart(WS, "chatprovider", {"botToken": "xoxb-secret"})
    assert (conn.state, conn.error) == ("error", START_FAILED)


def test_space_titles_name_the_channel_or_the_dm_within_48_characters() -> None:
    assert space_title("chatprovider", "fix  the build", channel_name="eng") == "#eng · fix the build"
    assert space_title("chatprovider", "hello", channel_name=None) == "Slack DM · hello"
    long = space_title("chatprovider", "please look into the flaky integration tests again", channel_name="eng")
    assert len(long) == 48 and long.startswith("#eng · please") and long.endswith("…")
