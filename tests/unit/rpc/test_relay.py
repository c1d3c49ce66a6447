"""Relaying a call to the server holding what it names (``hangar.rpc.relay``): the relay token (bound to what it
relays, short-lived, signed with the installation's key), a holder that does not answer, and which process a
rig's row says answers for it (``hangar.rigs.lifecycle.holder``), and a vouched caller's principal on the wire."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from hangar.core.clock import FakeClock
from hangar.core.principal import Principal
from hangar.core.secrets import SecretsFile
from hangar.errors import Elsewhere, Forbidden, InvalidArgs, Unavailable
from hangar.rigs.lifecycle.holder import refuse_if_elsewhere
from hangar.rigs.model import Phase, RigRecord, Surface
from hangar.rpc.relay import (
    RELAY_KEY,
    RELAY_TTL_S,
    OpRelay,
    Relayable,
    RelayTokens,
    principal_of_wire,
    principal_to_wire,
    vouched_target,
)

HERE, THERE = "http://10.0.0.1:8420", "http://10.0.0.2:8420"


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[RelayTokens, FakeClock, SecretsFile]:
    clock = FakeClock()
    secrets = SecretsFile(tmp_path / "secrets.json")
    return RelayTokens(secrets, clock), clock, secrets


def test_a_relay_token_is_for_one_op_and_lives_its_ttl(tokens: tuple[RelayTokens, FakeClock, SecretsFile]) -> None:
    t, clock, secrets = tokens
    token = t.mint("op:rig.exec")
    assert secrets.get(RELAY_KEY) not in token
    t.verify(token, "op:rig.exec")
    with pytest.raises(Forbidden, match="something else"):
        t.verify(token, "op:rig_close")
    with pytest.raises(Forbidden, match="servers of this installation"):
        t.verify(None, "op:rig.exec")
    clock.advance(RELAY_TTL_S - 1)
    t.verify(token, "op:rig.exec")  # its last second
    clock.advance(1)
    with pytest.raises(Forbidden, match="expired"):
        t.verify(token, "op:rig.exec")


def test_a_token_of_another_installation_is_refused(
    tokens: tuple[RelayTokens, FakeClock, SecretsFile], tmp_path: Path
) -> None:
    t, clock, _ = tokens
    other = RelayTokens(SecretsFile(tmp_path / "other.json"), clock)
    with pytest.raises(Forbidden):
        t.verify(other.mint("op:rig.exec"), "op:rig.exec")


async def test_a_holder_that_does_not_answer_is_unavailable_without_its_address(
    tokens: tuple[RelayTokens, FakeClock, SecretsFile],
) -> None:
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        origin = f"http://127.0.0.1:{s.getsockname()[1]}"
        moved = Elsewhere("rig r1 runs on another server of this installation", origin=origin)
        with pytest.raises(Unavailable) as err:
            relay = OpRelay(tokens[0])
            try:
                await relay.call(moved, "rig.exec", Relayable("tok", {"rigId": "r1"}), "socket")
            finally:
                await relay.aclose()
    assert err.value.message.startswith("rig r1 runs on another server of this installation, and that server")
    assert "127.0.0.1" not in err.value.message and "tok" not in repr(Relayable("tok", {}))


def record(phase: Phase, server_url: str | None) -> RigRecord:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return RigRecord(
        "r1", "s1", Surface.terminal, None, "enclosure", phase, "", None, None, "user:u1", 512, 2, None, 0, at, at,
        None, server_url,
    )  # fmt: skip


def test_a_live_rig_of_another_server_is_elsewhere() -> None:
    refuse_if_elsewhere(record(Phase.ready, HERE), HERE)
    with pytest.raises(Elsewhere) as moved:
        refuse_if_elsewhere(record(Phase.ready, THERE), HERE)
    assert moved.value.origin == THERE and THERE not in moved.value.message
    with pytest.raises(Elsewhere):
        refuse_if_elsewhere(record(Phase.ready, THERE), None)  # a process serving nothing relays too
    with pytest.raises(Unavailable, match="serves no calls") as bare:
        refuse_if_elsewhere(record(Phase.parked, None), HERE)
    assert not isinstance(bare.value, Elsewhere)
    for ended in (Phase.closed, Phase.failed):  # an ended rig is answered here, whoever ran it
        refuse_if_elsewhere(record(ended, THERE), HERE)


def test_where_a_server_is_reached_is_an_origin_given_or_its_own_listener() -> None:
    from pydantic import ValidationError

    from hangar.config import Settings

    with pytest.raises(ValidationError, match="--internal-url must start with http:// or https://"):
        Settings(internal_url="10.0.0.2:8420")
    given = Settings(internal_url="https://hangar-2.internal:8420/", port=8420)
    assert given.serving_origin is None  # not serving yet: its rigs would name no server
    given.serve_here()
    assert given.serving_origin == "https://hangar-2.internal:8420"
    own = Settings(host="10.0.0.2", port=9000)
    own.serve_here()
    assert own.serving_origin == "http://10.0.0.2:9000"
    wildcard = Settings(host="0.0.0.0", port=9000)
    wildcard.serve_here()
    assert wildcard.serving_origin == f"http://{socket.getfqdn()}:9000"
    v6 = Settings(host="::1", port=9000)
    v6.serve_here()
    assert v6.serving_origin == "http://[::1]:9000"


async def test_the_kept_client_keeps_no_cookie_from_one_call_for_the_next(
    tokens: tuple[RelayTokens, FakeClock, SecretsFile],
) -> None:
    """A holder's Set-Cookie (none does, but a proxy between the servers might) never rides along with the next
    caller's call: the relaying client is shared by every caller."""
    seen: list[str | None] = []

    async def holder(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        seen.append(headers.get(b"cookie", b"").decode() or None)
        body = json.dumps({"ok": True, "result": len(seen)}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"set-cookie", b"session=alice; Path=/")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    config = uvicorn.Config(holder, host="127.0.0.1", port=0, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    relay = OpRelay(tokens[0])
    moved = Elsewhere("rig r1 runs on another server of this installation", origin=f"http://127.0.0.1:{port}")
    try:
        assert await relay.call(moved, "rig.exec", Relayable("alice", {}), "socket") == 1
        assert await relay.call(moved, "rig.exec", Relayable("bob", {}), "socket") == 2
    finally:
        await relay.aclose()
        server.should_exit = True
        await task
    assert seen == [None, None]


def test_a_vouched_principal_crosses_whole_and_its_token_is_bound_to_it() -> None:
    agent = Principal(
        "u1",
        "d1",
        "Ada",
        False,
        authority=7,
        workspace_id="w1",
        tools=frozenset({"rig.exec", "rig_list"}),
        agent_id="a1",
    )
    wire = json.loads(json.dumps(principal_to_wire(agent)))  # as the holder reads it off the wire
    assert principal_of_wire(wire) == agent
    assert wire["tools"] == ["rig.exec", "rig_list"]  # sorted: the same principal gives the same digest
    assert vouched_target("rig.exec", wire) == vouched_target("rig.exec", principal_to_wire(agent))
    assert vouched_target("rig.exec", wire) != vouched_target("rig_close", wire)
    wider = principal_to_wire(replace(agent, tools=None))
    assert vouched_target("rig.exec", wider) != vouched_target("rig.exec", wire)
    for junk in (None, "u1", {"user_id": "u1"}, {**wire, "is_server_owner": "perhaps"}):
        with pytest.raises(InvalidArgs, match="principal"):
            principal_of_wire(junk)
