"""A chat-bridge world for tests: the real server, the Slack emulator and the scripted model endpoint, with an
``openai`` agent, the workspace connected, and (by default) the emulator's alice linked to the server owner."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, SlackEmulator, running_slack
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.unit.agents.fake_openai import FakeOpenAI, running_fake_openai
from tests.unit.agents.support import server_parts

PROVIDER = "chatprovider"
ALICE = "U0ALICE"
GENERAL = "C0GENERAL"


@dataclass
class World:
    srv: RunningServer
    client: RpcClient
    ws: str
    slack: SlackEmulator
    model: FakeOpenAI
    agent_id: str


async def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Poll ``check`` (plain or async) until it answers something true; that answer."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = check()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def world(
    tmp_path: Path,
    *,
    link: bool = True,
    connect: bool = True,
    slack: SlackEmulator | None = None,
    model: FakeOpenAI | None = None,
    **settings: Any,
) -> AsyncIterator[World]:
    """``slack`` and ``model`` given by the caller outlive this server (a test that restarts it passes them)."""
    async with contextlib.AsyncExitStack() as peers:
        if slack is None:
            slack = await peers.enter_async_context(running_slack())
        if model is None:
            model = await peers.enter_async_context(running_fake_openai())
        async with _world(tmp_path, slack, model, link=link, connect=connect, **settings) as w:
            yield w


def chat_server(
    data_dir: Path, slack: SlackEmulator, **settings: Any
) -> contextlib.AbstractAsyncContextManager[RunningServer]:
    """The real server with the agents' parts, its chat provider the emulator (again on ``data_dir`` to restart)."""
    return running_server(data_dir, parts=server_parts(), chatprovider_api_url=slack.api_url, **settings)


@contextlib.asynccontextmanager
async def _world(
    tmp_path: Path, slack: SlackEmulator, model: FakeOpenAI, *, link: bool, connect: bool, **settings: Any
) -> AsyncIterator[World]:
    async with chat_server(tmp_path / "data", slack, **settings) as srv:
        ws = await srv.new_workspace("acme")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            agent = await client.call(
                "agents.create",
                workspace_id=ws,
                name="Ada",
                adapter={"type": "openai", "baseUrl": model.url, "model": "m", "apiKey": "sk-test"},
            )
            w = World(srv, client, ws, slack, model, agent["id"])
            if not connect:
                yield w
                return
            connected = await client.call(
                "chat.connect",
                workspace_id=ws,
                provider=PROVIDER,
                credentials={"botToken": BOT_TOKEN, "appToken": APP_TOKEN},
            )
            assert connected["state"] in ("connecting", "connected")
            await slack.wait_hellos(1)
            if link:
                code = (await client.call("chat.beginUserLink", workspace_id=ws, provider=PROVIDER))["code"]
                answer = await slack.acked(await slack.slash("/hangar", f"link {code.lower()}", ALICE, GENERAL))
                assert answer is not None and "Linked" in answer["text"], answer
            yield w


async def chat_spaces(w: World) -> list[dict[str, Any]]:
    spaces = (await w.client.call("spaces.list", workspace_id=w.ws))["spaces"]
    return [s for s in spaces if s["kind"] == PROVIDER]
