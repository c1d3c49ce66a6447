"""The product MCP endpoint against the RPC socket, in one run on one server process (``hangar serve``):

- a tool call (``server.info`` as a tool, one request in flight, in a session and sessionless) against the same op
  over the socket, sequential round trips with p50/p99, and the ratio (target: at most 1.3), with a lean HTTP
  client so the figure is the server's; and the call asking for progress, which the SDK's transport serves;
- the listener's floor: a trivial route (``GET /healthz``) with the same client, the least any HTTP answer costs;
- beside each of these, the server's CPU time per call (what a call costs the server, however loaded the machine);
- the same tool call through the official SDK client (what an agent client pays, client included);
- ``tools/list`` (about a hundred tools with their schemas): time per call;
- 500 concurrent sessions held open on the server (over several credentials, each under its cap): its resident
  memory before and after, per session.

Run: .venv/bin/python bench/bench_mcp.py [--seconds 5] [--sessions 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from bench_rpc import BIN, cpu_seconds, socket_load, start_server
from hangar.config import MCP_SESSIONS_PER_CREDENTIAL

VERSION = "2025-06-18"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def headers(token: str, session: str | None = None) -> dict[str, str]:
    out = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
    }
    if session is not None:
        out["mcp-session-id"] = session
    return out


async def open_session(http: httpx.AsyncClient, url: str, token: str) -> str:
    r = await http.post(url, json=INIT, headers=headers(token))
    r.raise_for_status()
    session = r.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=note, headers=headers(token, session))
    return session


class RawHttp:
    """A keep-alive HTTP/1.1 client of a few lines: the load generator's own cost stays out of the figure
    (httpx alone costs more per request than the server's whole answer)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    async def __aenter__(self) -> RawHttp:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()

    async def post(self, path: str, body: dict[str, Any], head: dict[str, str]) -> tuple[dict[str, str], bytes]:
        return await self.request("POST", path, json.dumps(body).encode(), head)

    async def request(self, method: str, path: str, raw: bytes, head: dict[str, str]) -> tuple[dict[str, str], bytes]:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(raw)}"]
        lines += [f"{k}: {v}" for k, v in head.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + raw)
        await self.writer.drain()
        await self.reader.readline()  # status line
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        if "content-length" in headers:
            return headers, await self.reader.readexactly(int(headers["content-length"]))
        chunks = b""
        while size := int((await self.reader.readline()).strip(), 16):
            chunks += (await self.reader.readexactly(size + 2))[:-2]
        await self.reader.readline()
        return headers, chunks


def answer_of(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    if headers.get("content-type", "").startswith("application/json"):
        return dict(json.loads(body))
    for line in body.decode().splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    raise RuntimeError(f"no answer in {body[:200]!r}")


async def tool_load(url: str, token: str, seconds: float, *, session: bool, progress: bool = False) -> list[float]:
    """Sequential ``tools/call server.info`` over one connection (in a session, or sessionless). A plain call is
    answered in one exchange; one asking for progress (``progress``) takes the SDK's transport and an SSE answer."""
    parts = urlsplit(url)
    latencies: list[float] = []
    async with RawHttp(parts.hostname or "127.0.0.1", parts.port or 80) as http:
        sid = None
        if session:
            head, _ = await http.post(parts.path, INIT, headers(token))
            sid = head["mcp-session-id"]
            await http.post(parts.path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers(token, sid))
        deadline = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < deadline:
            n += 1
            params: dict[str, Any] = {"name": "server.info"}
            if progress:
                params["_meta"] = {"progressToken": n}
            call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
            t0 = time.perf_counter()
            answer = answer_of(*await http.post(parts.path, call, headers(token, sid)))
            latencies.append(time.perf_counter() - t0)
            assert answer["result"]["structuredContent"]["name"] == "Hangar", answer
    return latencies


async def floor_load(url: str, seconds: float) -> list[float]:
    """The listener's floor: sequential ``GET /healthz`` (a trivial Starlette route answering a small JSON body)
    with the same client over one connection: HTTP parsing, routing and the answer, no MCP and no op."""
    parts = urlsplit(url)
    latencies: list[float] = []
    async with RawHttp(parts.hostname or "127.0.0.1", parts.port or 80) as http:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            _head, body = await http.request("GET", "/healthz", b"", {})
            latencies.append(time.perf_counter() - t0)
            assert json.loads(body)["status"] == "ok", body
    return latencies


async def sdk_load(url: str, token: str, seconds: float) -> list[float]:
    latencies: list[float] = []
    client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            result = await session.call_tool("server.info", {})
            latencies.append(time.perf_counter() - t0)
            assert not result.is_error
    return latencies


async def list_tools(url: str, token: str, rounds: int) -> tuple[list[float], int, int]:
    latencies: list[float] = []
    async with httpx.AsyncClient(timeout=30) as http:
        session = await open_session(http, url, token)
        for n in range(rounds):
            t0 = time.perf_counter()
            r = await http.post(
                url, json={"jsonrpc": "2.0", "id": n + 1, "method": "tools/list"}, headers=headers(token, session)
            )
            answer = answer_of(dict(r.headers), r.content)
            latencies.append(time.perf_counter() - t0)
    return latencies, len(answer["result"]["tools"]), len(r.content)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def more_tokens(data_dir: str, count: int) -> list[str]:
    """Further device credentials of the server owner: one credential holds at most
    ``MCP_SESSIONS_PER_CREDENTIAL`` sessions, so many sessions are opened as many agent clients would (and the
    server is told one person may hold them all: ``main``)."""
    return [
        subprocess.run(
            [str(BIN), "admin", "owner-token", "--data-dir", data_dir], check=True, capture_output=True, text=True
        ).stdout.strip()
        for _ in range(count)
    ]


async def hold_sessions(url: str, tokens: list[str], count: int, pid: int) -> tuple[int, int, float]:
    before = rss_kib(pid)
    limits = httpx.Limits(max_connections=50)
    owners = [tokens[n // MCP_SESSIONS_PER_CREDENTIAL] for n in range(count)]
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        t0 = time.perf_counter()
        sessions = await asyncio.gather(*(open_session(http, url, token) for token in owners))
        opened = time.perf_counter() - t0
        await asyncio.sleep(1.0)
        after = rss_kib(pid)
        for token, s in zip(owners, sessions, strict=True):  # end them, as a well-behaved client does
            await http.delete(url, headers=headers(token, s))
    return before, after, opened


def report(name: str, lat: list[float], cpu_us: float | None = None) -> float:
    lat.sort()
    p50 = statistics.median(lat) * 1000
    p99 = lat[max(int(len(lat) * 0.99) - 1, 0)] * 1000
    cpu = "" if cpu_us is None else f"   server CPU {cpu_us:5.0f} us/call"
    print(f"{name:<44} {len(lat):>7,} calls   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms{cpu}", flush=True)
    return p50


async def costed(pid: int, load: Any) -> tuple[list[float], float]:
    """``load``'s latencies and the server's CPU time per call over it (what a call costs the server, however
    loaded the machine is: the p50 ratios move with the load, this does not)."""
    before = cpu_seconds(pid)
    lat = await load
    return lat, (cpu_seconds(pid) - before) / len(lat) * 1e6


async def main(seconds: float, sessions: int) -> None:
    # The sessions are all the server owner's (over several credentials): let one person hold that many.
    # (and the sessions the latency runs opened before them, still open until they idle out).
    os.environ["HANGAR_MCP_SESSIONS_PER_USER"] = str(max(sessions, 1) + 16)
    with tempfile.TemporaryDirectory() as data_dir:
        proc, ws_url, token = start_server(data_dir)
        url = ws_url.replace("ws://", "http://").removesuffix("/rpc") + "/mcp"
        try:
            await socket_load(ws_url, token, 0.5, 1)
            await tool_load(url, token, 0.5, session=True)  # warm up both doors
            print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
            lat, socket_cpu = await costed(proc.pid, socket_load(ws_url, token, seconds, 1))
            socket_p50 = report("socket: server.info, sequential", lat, socket_cpu)
            lat, floor_cpu = await costed(proc.pid, floor_load(url, seconds))
            floor_p50 = report("http floor: GET /healthz, same listener", lat, floor_cpu)
            lat, session_cpu = await costed(proc.pid, tool_load(url, token, seconds, session=True))
            in_session_p50 = report("mcp: tools/call, in a session", lat, session_cpu)
            lat, sessionless_cpu = await costed(proc.pid, tool_load(url, token, seconds, session=False))
            sessionless_p50 = report("mcp: tools/call, sessionless", lat, sessionless_cpu)
            streamed = await tool_load(url, token, seconds, session=True, progress=True)
            report("mcp: tools/call asking progress (SDK, SSE)", streamed)
            for name, p50, cpu in (
                ("session", in_session_p50, session_cpu),
                ("sessionless", sessionless_p50, sessionless_cpu),
            ):
                ratio = p50 / socket_p50
                verdict = "" if ratio <= 1.3 else ": ABOVE"
                print(
                    f"{'ratio mcp / socket (p50), ' + name:<44} {ratio:>7.2f} (target 1.3{verdict}); "
                    f"server CPU {cpu / socket_cpu:.2f}x"
                )
            print(f"{'ratio http floor / socket (p50)':<44} {floor_p50 / socket_p50:>7.2f}")
            report("mcp via the SDK client (client included)", await sdk_load(url, token, seconds))
            lat, count, size = await list_tools(url, token, 50)
            report(f"mcp: tools/list ({count} tools, {size // 1024} KiB)", lat)
            tokens = more_tokens(data_dir, -(-sessions // MCP_SESSIONS_PER_CREDENTIAL))
            before, after, opened = await hold_sessions(url, tokens, sessions, proc.pid)
            per = (after - before) / sessions
            print(
                f"{sessions} sessions opened in {opened:.1f} s; server RSS {before / 1024:.0f} MiB -> "
                f"{after / 1024:.0f} MiB, {per:.0f} KiB per session"
            )
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sessions", type=int, default=500)
    os.environ.pop("HANGAR_DATA_DIR", None)
    parsed = parser.parse_args()
    asyncio.run(main(parsed.seconds, parsed.sessions))
