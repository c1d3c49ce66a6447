"""The guest agent answers from inside the guest, which runs anyone's code: a fake agent on a unix socket answers
out of the protocol (JSON nested past the parser's depth, a line past the limit of a short answer, an exit code
that is not a number, output that is not base64 or not text, a pid missing, an error that is not an object) and
each is ``Unavailable`` saying the agent answered wrongly, never an internal error; a long ``guest-exec-status``
line (past the short limit) and a well-formed run are taken."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hangar.errors import Unavailable
from hangar.rigs.backends.fullvm import qga
from hangar.rigs.backends.fullvm.qga import GuestAgentClient

Answer = Callable[[dict[str, Any]], bytes]


@asynccontextmanager
async def fake_agent(tmp_path: Path, answer: Answer) -> AsyncIterator[GuestAgentClient]:
    """An agent that answers syncs as the real one does and every other command with ``answer``."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            request = json.loads(line.lstrip(b"\xff"))
            if request["execute"] == "guest-sync-delimited":
                writer.write(b"\xff" + json.dumps({"return": request["arguments"]["id"]}).encode() + b"\n")
            else:
                writer.write(answer(request) + b"\n")
            await writer.drain()

    path = tmp_path / "qga.sock"
    server = await asyncio.start_unix_server(serve, str(path))
    try:
        async with await GuestAgentClient.connect(path) as client:
            yield client
    finally:
        server.close()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _exec(status: dict[str, Any]) -> Answer:
    def answer(request: dict[str, Any]) -> bytes:
        if request["execute"] == "guest-exec":
            return json.dumps({"return": {"pid": 7}}).encode()
        return json.dumps({"return": status}).encode()

    return answer


WRONG: list[tuple[str, Answer, str]] = [
    ("guest-ping", lambda r: b"[" * 60_000, "not json"),  # nested past the parser's depth, within the limit
    ("run", lambda r: b"[" * 100_000 if r["execute"] == "guest-exec-status" else b'{"return": {"pid": 7}}', "not json"),
    ("guest-ping", lambda r: b'{"return": "' + b"x" * qga.SHORT_LINE_LIMIT + b'"}', "longer than"),
    ("guest-ping", lambda r: b'{"error": "boom"}', "error that is not an object"),
    ("guest-ping", lambda r: b"[1]", "not an object"),
    ("run", _exec({"exited": True, "exitcode": "zero"}), "not a number"),
    ("run", _exec({"exited": True, "exitcode": 0, "out-data": 5}), "not text"),
    ("run", _exec({"exited": True, "exitcode": 0, "out-data": "*not base64*"}), "not base64"),
    ("run", _exec([1, 2]), "not an object"),  # type: ignore[arg-type]
    ("run", lambda r: json.dumps({"return": []}).encode(), "no process id"),
    ("spawn", lambda r: json.dumps({"return": {"pid": "7"}}).encode(), "no process id"),
]


@pytest.mark.parametrize(("call", "answer", "said"), WRONG)
async def test_an_answer_out_of_the_protocol_is_unavailable_naming_it(
    tmp_path: Path, call: str, answer: Answer, said: str
) -> None:
    async with fake_agent(tmp_path, answer) as client:
        with pytest.raises(Unavailable, match=r"answered .* wrongly") as caught:
            if call == "guest-ping":
                await client.ping(timeout_s=10)
            elif call == "run":
                await client.run(["/bin/true"], timeout_s=10)
            else:
                await client.spawn(["/bin/true"])
        assert said in caught.value.message.lower()


async def test_a_long_exec_status_and_a_well_formed_run_are_taken(tmp_path: Path) -> None:
    out = b"y" * (2 * qga.SHORT_LINE_LIMIT)  # past the short answers' limit: an exec's output may be long
    status = {"exited": True, "exitcode": 3, "out-data": _b64(out), "err-data": _b64(b"e")}
    async with fake_agent(tmp_path, _exec(status)) as client:
        result = await client.run(["/bin/true"], timeout_s=10)
    assert (result.exit_code, result.stdout, result.stderr, result.truncated) == (3, out, b"e", False)
    killed = {"exited": True, "signal": 9}
    async with fake_agent(tmp_path, _exec(killed)) as client:
        assert (await client.run(["/bin/true"], timeout_s=10)).exit_code == -9


async def test_a_short_answer_at_its_limit_is_taken(tmp_path: Path) -> None:
    def answer(request: dict[str, Any]) -> bytes:
        head = b'{"return": {"pad": "'
        return head + b"x" * (qga.SHORT_LINE_LIMIT - len(head) - 4) + b'"}}'  # with its newline: at the limit

    async with fake_agent(tmp_path, answer) as client:
        await client.ping(timeout_s=10)
    one_past = lambda r: answer(r)[:-3] + b'x"}}'  # noqa: E731
    async with fake_agent(tmp_path, one_past) as client:
        with pytest.raises(Unavailable, match="longer than"):
            await client.ping(timeout_s=10)
