"""The chat bridge: (1) the time Hangar adds between a mention's arrival and the first streamed text chunk, beyond
the model's own first token; (2) inbound events per second without a lost or duplicated prompt.

Two processes: the Hangar server (``hangar serve``, pointed at the emulator by ``HANGAR_CHATPROVIDER_API_URL``;
slack_sdk's real Web API and Socket Mode clients inside it) and this one, which runs the Slack emulator
(``tests/peers/slack_emulator.py``: real HTTP and a real WebSocket) with the scripted model endpoint
(``tests/unit/agents/fake_openai.py``) and drives the load.

Mention to first chunk: the emulator sends a mention in a new thread (the ``app_mention`` and its twin
``message``), and the clock stops when a ``chat.startStream``/``appendStream`` call carrying the reply's first
``markdown_text`` reaches the emulator. From that is taken away the model's own time, request arrival to its
first content token as the model server sees it. Two model shapes: one that streams from its first token on (the
common case: the bridge's one-flush-a-second cadence counts from the card it opened on the mention, so the first
text waits for it), and one whose first token comes after more than a second (the cadence is no longer what
holds the text; what is left is the bridge's own path).

Inbound: replies in threads already bridged, at a fixed rate; every reply must become exactly one prompt message
in the product (``workspace.messagePosted`` on ``events.watch``, matched by ``metadata.chat.messageId``).

Run: .venv/bin/python bench/bench_chat.py [--mentions 30] [--rate 200] [--seconds 10] [--threads 20]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, SlackEmulator, Stream, running_slack  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.unit.agents.fake_openai import FakeOpenAI, Reply, running_fake_openai  # noqa: E402


class _Discard(list[Any]):
    """The benchmark's model server keeps no request log."""

    def append(self, _item: Any) -> None:
        return None


BIN = Path(sys.executable).parent / "hangar"
PROVIDER = "chatprovider"
ALICE = "U0ALICE"
GENERAL = "C0GENERAL"
CADENCE = 1.0  # the bridge's flush interval (hangar.chat.replies.FLUSH_INTERVAL)


class TimedSlack(SlackEmulator):
    """The emulator, noting when each thread's streamed message first carried text, and when it opened."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: dict[str, float] = {}
        self.first_text: dict[str, float] = {}

    def _stream_take(self, stream: Stream, args: dict[str, Any]) -> None:
        now = time.perf_counter()
        super()._stream_take(stream, args)
        self.opened.setdefault(stream.thread_ts, now)
        if stream.text:
            self.first_text.setdefault(stream.thread_ts, now)


class TimedModel(FakeOpenAI):
    """The model server, noting per request when it arrived and when its first content token left."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []
        self.first_token: list[float] = []

    async def _completions(self, request: Request) -> Response:
        arrived = time.perf_counter()
        response = await super()._completions(request)
        self.arrived.append(arrived)
        if isinstance(response, StreamingResponse):
            response.body_iterator = self._timed(response.body_iterator)
        return response

    async def _timed(self, body: AsyncIterator[Any]) -> AsyncIterator[Any]:
        seen = False
        async for piece in body:
            if not seen and b'"content"' in (piece if isinstance(piece, bytes) else piece.encode()):
                seen = True
                self.first_token.append(time.perf_counter())
            yield piece


def start_hangar(tmp: Path, api_url: str) -> tuple[subprocess.Popen[str], str, str]:
    data = str(tmp / "data")
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", data], check=True, capture_output=True, text=True
    ).stdout.strip()
    env = {**os.environ, "HANGAR_CHATPROVIDER_API_URL": api_url}
    proc = subprocess.Popen(
        [str(BIN), "serve", "--no-prepare-pack", "--no-site", "--port", "0", "--data-dir", data],
        stdout=subprocess.PIPE,
        stderr=(tmp / "hangar.log").open("w"),
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip().replace("http://", "ws://") + "/rpc", token
    raise RuntimeError(f"hangar did not start; see {tmp}/hangar.log")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(v: float) -> str:
    return f"{v * 1000:7.1f} ms"


async def until(check: Any, timeout: float, step: float = 0.005) -> None:
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(step)


async def first_chunk(slack: TimedSlack, model: TimedModel, mentions: int, reply: Reply, label: str) -> None:
    """``mentions`` mentions in new threads, one at a time, each reply finished before the next mention."""
    model.default = reply
    total, model_time, overhead, card, dispatch = [], [], [], [], []
    for i in range(mentions + 2):  # the first two warm the paths and are not counted
        started = time.perf_counter()
        n = len(model.first_token)
        t0 = time.perf_counter()
        sent = await slack.mention(GENERAL, ALICE, f"question {label} {i}")
        ts = sent.ts
        await until(lambda ts=ts, n=n: ts in slack.first_text and len(model.first_token) > n, 30)  # type: ignore[misc]
        await until(lambda ts=ts: any(s.thread_ts == ts and s.state == "stopped" for s in slack.streams.values()), 30)  # type: ignore[misc]
        if i >= 2:
            took = slack.first_text[sent.ts] - t0
            own = model.first_token[n] - model.arrived[n]
            total.append(took)
            model_time.append(own)
            overhead.append(took - own)
            card.append(slack.opened[sent.ts] - t0)
            dispatch.append(model.arrived[n] - t0)
        # Space the mentions so the bridge's per-method pacing (conversations.info: 50 a minute) stays out of it.
        await asyncio.sleep(max(0.0, 1.3 - (time.perf_counter() - started)))
    print(f"mention -> first streamed text chunk, {mentions} mentions in new threads ({label})")
    for name, values in (
        ("mention -> card opened (chat.startStream)", card),
        ("mention -> model request arrives", dispatch),
        ("model: request -> first token", model_time),
        ("mention -> first text chunk at the emulator", total),
        ("added by Hangar beyond the first token", overhead),
    ):
        print(f"  {name:46s} p50 {ms(statistics.median(values))}   p95 {ms(pct(values, 95))}")


async def inbound(
    slack: TimedSlack, c: RpcClient, ws: str, rate: float, seconds: float, threads: int, drain: float, server: int
) -> None:
    """Replies in ``threads`` bridged threads at ``rate`` a second for ``seconds``; each must be one prompt."""
    anchors = []
    for i in range(threads):
        sent = await slack.mention(GENERAL, ALICE, f"load thread {i}")
        anchors.append(sent.ts)
    await until(lambda: all(a in slack.opened for a in anchors), 120, 0.05)
    watch = await c.watch("events.watch", workspace_id=ws, types=["workspace.messagePosted"])
    wanted: set[str] = set()
    landed: Counter[str] = Counter()
    last_landed = 0.0

    async def collect() -> None:
        nonlocal last_landed
        while True:
            frame = await watch.next(3600)
            chat = ((frame.get("payload") or {}).get("message") or {}).get("metadata", {}).get("chat") or {}
            if chat.get("messageId") in wanted:
                landed[chat["messageId"]] += 1
                last_landed = time.perf_counter()

    collector = asyncio.create_task(collect())
    total = int(rate * seconds)
    cpu0 = cpu_seconds(server)
    t0 = time.perf_counter()
    for i in range(total):
        due = t0 + i / rate
        now = time.perf_counter()
        if due > now:
            await asyncio.sleep(due - now)
        sent = await slack.message(GENERAL, ALICE, f"reply {i}", thread_ts=anchors[i % threads])
        wanted.add(sent.ts)
    sent_in = time.perf_counter() - t0
    deadline = time.perf_counter() + drain
    while len(landed) < total and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    busy = (cpu_seconds(server) - cpu0) / (time.perf_counter() - t0)
    await asyncio.sleep(1.0)  # a late duplicate would show up now
    collector.cancel()
    await asyncio.gather(collector, return_exceptions=True)
    await watch.close()
    handled = len(landed)
    dupes = sum(n - 1 for n in landed.values() if n > 1)
    print(f"inbound: {total} replies in {threads} bridged threads at {rate:.0f}/s for {seconds:.0f} s")
    print(f"  sent in {sent_in:.2f} s ({total / sent_in:.1f}/s achieved by the emulator)")
    print(f"  prompts in the product: {handled}; missing at the end {total - handled}; duplicated {dupes}")
    if handled:
        span = last_landed - t0
        print(f"  last prompt handled {span:.2f} s after the first reply was sent ({handled / span:.1f}/s handled)")
        print(f"  lag of the last handled prompt behind the last reply sent: {last_landed - t0 - sent_in:.2f} s")
    print(f"  the server process's CPU meanwhile: {busy:.2f} of a core")
    if handled < total:
        print(f"  (gave up waiting {drain:.0f} s after the last reply was sent)")


async def main(ns: argparse.Namespace) -> None:
    # The emulator's sockets to a server that has stopped are logged by asyncio at every write: not news here.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    slack, model = TimedSlack(), TimedModel()
    model.requests = _Discard()
    model.headers = _Discard()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        async with running_slack(emulator=slack), running_fake_openai(model):
            hangar, url, token = start_hangar(tmp, slack.api_url)
            try:
                async with RpcClient(url, token) as c:
                    ws = (await c.call("workspaces.create", name="bench"))["id"]
                    adapter = {"type": "openai", "baseUrl": model.url, "model": "bench", "apiKey": "sk-bench"}
                    await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter)
                    creds = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
                    await c.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=creds)
                    await slack.wait_hellos(1, 30)
                    code = (await c.call("chat.beginUserLink", workspace_id=ws, provider=PROVIDER))["code"]
                    answer = await slack.acked(await slack.slash("/hangar", f"link {code}", ALICE, GENERAL), 30)
                    assert answer is not None and "Linked" in answer["text"], answer
                    # Streams from its first token on: 12 deltas 0.1 s apart (the first text meets the cadence).
                    streaming = Reply(text="word " * 12, chunk_size=5, delay_between_chunks=0.1)
                    await first_chunk(slack, model, ns.mentions, streaming, "model streams at once")
                    # First token after 1.1 s: the cadence's second has passed, the text goes out when it comes.
                    late = Reply(text="word " * 4, chunk_size=5, stall_seconds=1.1)
                    await first_chunk(slack, model, ns.mentions, late, "model's first token after 1.1 s")
                    model.default = Reply(text="ok")
                    await inbound(slack, c, ws, ns.rate, ns.seconds, ns.threads, ns.drain, hangar.pid)
            finally:
                hangar.terminate()
                hangar.wait(30)
        print(f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mentions", type=int, default=30)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--drain", type=float, default=60, help="seconds to wait for the last prompts")
    asyncio.run(main(parser.parse_args()))
