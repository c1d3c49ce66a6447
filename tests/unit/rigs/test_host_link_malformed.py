"""What a rig host sends over its link is not trusted: a message that is not of the wire's shape (not an object, a
channel that is not a number, a byte count that is a string, an answer that is not an object, JSON nested past
the parser's depth) ends the link with a reason naming what was wrong, never a traceback out of its reader; and
the server opens at most ``LANES_MAX`` stream lanes on one link (at the limit the rig host is asked, one past
refused without asking), whatever the rig host would allow."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from hangar.errors import Refused, Unavailable
from hangar.rigs.hosts import streams, wire
from hangar.rigs.hosts.link import HostLink

LANE = streams.SERVER_CHANNELS + 1


class FakeSocket:
    """A rig host's side of the link: the messages it sends, then silence; what the server sends is kept."""

    def __init__(self, texts: list[str]) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for text in texts:
            self.incoming.put_nowait({"type": "websocket.receive", "text": text})
        self.sent: list[str] = []

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send_text(self, text: str) -> None:
        self.sent.append(text)
        raise OSError("the fake rig host answers nothing")

    async def send_bytes(self, data: bytes) -> None:
        return None


def _link(texts: list[str]) -> HostLink:
    credential = SimpleNamespace(id="h1", name="host one")
    return HostLink(FakeSocket(texts), credential, 1024, frozenset())  # type: ignore[arg-type]


MALFORMED = [
    ("[]", "not a json object"),
    ('"text"', "not a json object"),
    ("5", "not a json object"),
    ('{"event": "ptyAck", "channel": [], "bytes": 1}', "'channel'"),
    ('{"event": "ptyEnd", "channel": "1"}', "'channel'"),
    (f'{{"event": "streamAck", "channel": {LANE}, "bytes": "x"}}', "'bytes'"),
    (f'{{"event": "streamAck", "channel": {LANE}, "bytes": -5}}', "'bytes'"),
    ('{"event": "streamEof", "channel": {}}', "'channel'"),
    ('{"re": [1], "ok": {}}', "'re'"),
    ('{"re": 1, "ok": [1, 2]}', "not an object"),
    ('{"re": 1, "error": "boom"}', "not an object"),
    ("[" * 100_000, "recursion"),
]


@pytest.mark.parametrize(("text", "named"), MALFORMED)
async def test_a_malformed_message_ends_the_link_with_its_reason(
    text: str, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    link = _link([text])
    link.streams[LANE] = streams.StreamLane(LANE, link.send_bytes, link.send_event)
    with caplog.at_level(logging.WARNING, logger="hangar.rigs.hosts.link"):
        await asyncio.wait_for(link.serve(_no_event), 10)  # returns: nothing escapes the reader
    assert link.closed.is_set()
    [record] = [r for r in caplog.records if "ended" in r.getMessage()]
    assert named in record.getMessage().lower()


async def test_a_well_formed_answer_still_reaches_its_request() -> None:
    link = _link([])
    link.ws.send_text = _accept  # type: ignore[method-assign]
    served = asyncio.create_task(link.serve(_no_event))
    asking = asyncio.create_task(link.call("residentMb", rig="r1"))
    await asyncio.sleep(0)
    link.ws.incoming.put_nowait({"type": "websocket.receive", "text": '{"re": 1, "ok": {"mb": 3}}'})  # type: ignore[attr-defined]
    assert await asyncio.wait_for(asking, 10) == {"mb": 3}
    link.end()
    link.ws.incoming.put_nowait({"type": "websocket.disconnect"})  # type: ignore[attr-defined]
    await asyncio.wait_for(served, 10)


async def test_the_server_opens_at_most_lanes_max_lanes_on_one_link() -> None:
    link = _link([])
    for k in range(streams.LANES_MAX):
        link.streams[LANE + k] = streams.StreamLane(LANE + k, link.send_bytes, link.send_event)
    # One past: refused without asking the rig host.
    with pytest.raises(Refused, match=f"at most {streams.LANES_MAX}"):
        await link.open_stream("r1", 8080)
    assert link.ws.sent == []  # type: ignore[attr-defined]
    # At the limit: the rig host is asked (this fake one fails to hear it).
    link.streams.pop(LANE)
    with pytest.raises(Unavailable):
        await link.open_stream("r1", 8080)
    assert any('"streamOpen"' in sent for sent in link.ws.sent)  # type: ignore[attr-defined]


async def _accept(text: str) -> None:
    return None


async def _no_event(body: dict[str, Any]) -> None:
    raise AssertionError(f"no event reaches the server: {body}")


@pytest.mark.parametrize(
    "answer",
    [
        {"exitCode": "0", "stdout": "", "stderr": "", "timedOut": False},
        {"exitCode": 0, "stdout": [], "stderr": "", "timedOut": False},
        {"exitCode": 0, "stdout": "", "stderr": "", "timedOut": "no"},
        {},
    ],
)
def test_an_exec_answer_of_the_wrong_kind_is_unavailable(answer: dict[str, Any]) -> None:
    with pytest.raises(Unavailable, match="answered exec wrongly"):
        wire.result_of(answer)
    good = {"exitCode": 3, "stdout": "o", "stderr": "e", "timedOut": False}
    assert wire.result_of(good).exit_code == 3
