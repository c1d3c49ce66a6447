"""Browser rigs through the real server, per engine, each beside the same engine launched directly on this host
in the same run (``hostlaunch.host_engine``: the recipe's own processes, a temporary profile, no rig):

- open: ``rig.open {surface: "browser", engine}`` to the first ``browser_use screenshot`` result (warm pack),
  versus ``host_engine(engine)`` to its first ``screenshot`` (target: at most 1.3x the raw engine). Runs
  alternate between the two so a change in the machine's load falls on both; the first of each is a warm-up
  (the server makes its dev-domain CA on the first browser open, the engine's files come into the page cache)
  and is not counted;
- memory: an idle browser rig's resident memory (its cgroup, as ``rig_list`` reports it after ``rigs.status``
  refreshed it) after the open and one navigation to the product site's home page, settled for a few seconds,
  versus the proportional set size of the same engine's process tree on the host in the same state, whole and
  the processes' own part (the rig's figure counts its processes' anonymous memory and the file cache charged to
  its cgroup);
- live view (engine A): a page that flips colour on a timer, watched through ``rig.liveViewUrl``; see
  ``live_view`` for what is timed.

The server runs as its own process (``hangar serve``, with the website on a free port: the site is on every
browser rig's allowlist and is what the rig navigates to) over a fresh data directory whose packs are the shared
warm ones (``HANGAR_TEST_PACKS``, default ``~/.cache/hangar-test/packs``). An engine whose recipe this code does
not register yet is skipped, saying so. Run as root: ``.venv/bin/python bench/bench_rigs_browser.py [engine...]``
(``BENCH_RUNS`` sets the counted runs per engine, default 7).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets

from bench_rpc import server_env
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.engines.hostlaunch import host_engine
from hangar.rigs.engines.registry import RECIPES
from hangar.rigs.images.builder import pack_ready
from hangar.rigs.images.recipes import BROWSERS
from hangar.rigs.lanes.fence import unfence

BIN = Path(sys.executable).parent / "hangar"
PACKS = Path(os.environ.get("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")))
ENGINES = ("engine-a", "engine-b", "engine-c")
RUNS = int(os.environ.get("BENCH_RUNS", "7"))
IDLE_RIGS = 3
SETTLE_S = 5.0
TARGET_RATIO = 1.3
STILL = (1280, 800)


class Rpc:
    def __init__(self, conn: websockets.ClientConnection, ws: str) -> None:
        self.conn = conn
        self.ws = ws
        self.n = 0

    async def call(self, op: str, *, server: bool = False, **args: Any) -> Any:
        """``op`` in the bench's workspace, or a server-scoped op."""
        self.n += 1
        scoped = args if server or not self.ws else {"workspace_id": self.ws, **args}
        await self.conn.send(json.dumps({"id": self.n, "op": op, "args": scoped}))
        reply = json.loads(await self.conn.recv())
        if not reply["ok"]:
            raise RuntimeError(f"{op}: {reply['error']}")
        return reply["result"]

    async def space(self, title: str) -> str:
        return str((await self.call("spaces.create", title=title))["id"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path, site_port: int, log: Path) -> tuple[subprocess.Popen[str], str, str]:
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", str(data_dir)], check=True, capture_output=True, text=True
    ).stdout.strip()
    argv = [str(BIN), "serve", "--no-prepare-pack", "--port", "0", "--site-port", str(site_port)]
    argv += ["--data-dir", str(data_dir)]
    with log.open("w") as errors:  # the server's log (the egress gate's refusals among it)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=server_env(), text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip(), token
    raise RuntimeError("server did not start")


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.0f} (min {min(xs):.0f}, max {max(xs):.0f})"


# -- open to the first still ----------------------------------------------------------------------------------


async def rig_open_ms(rpc: Rpc, engine: str, run: int) -> float:
    space = await rpc.space(f"{engine} open {run}")
    started = time.perf_counter()
    reply = await rpc.call("rig.open", space_id=space, surface="browser", engine=engine)
    assert reply["phase"] == "ready", reply
    shot = await rpc.call("browser_use", rigId=reply["rigId"], action={"action": "screenshot"})
    elapsed = (time.perf_counter() - started) * 1000
    assert shot["image"]["base64"], shot
    await rpc.call("rig_close", rigId=reply["rigId"])
    return elapsed


async def host_open_ms(engine: str) -> float:
    started = time.perf_counter()
    async with host_engine(engine, width=STILL[0], height=STILL[1]) as session:
        still = await session.screenshot(False, *STILL)
        elapsed = (time.perf_counter() - started) * 1000
    assert still.data
    return elapsed


async def opens(rpc: Rpc, engine: str) -> tuple[list[float], list[float]]:
    in_rig: list[float] = []
    on_host: list[float] = []
    for run in range(RUNS + 1):
        rig_ms = await rig_open_ms(rpc, engine, run)
        host_ms = await host_open_ms(engine)
        if run:  # the first of each is the warm-up
            in_rig.append(rig_ms)
            on_host.append(host_ms)
        print(f"  {engine} run {run}: rig {rig_ms:.0f} ms, host {host_ms:.0f} ms", file=sys.stderr)
    return in_rig, on_host


# -- memory ---------------------------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def tree_pss_mb(root: int) -> tuple[float, float]:
    """The proportional set size of every process below ``root`` (not ``root`` itself), in MB: all of it, and
    the part that is the processes' own (anonymous and shared memory, without the mapped files)."""
    tree = _children()
    todo, kb = list(tree.get(root, [])), {"Pss:": 0, "Pss_Anon:": 0, "Pss_Shmem:": 0}
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                key, _, rest = line.partition(" ")
                if key in kb:
                    kb[key] += int(rest.split()[0])
        except OSError:
            continue
    return kb["Pss:"] / 1024, (kb["Pss_Anon:"] + kb["Pss_Shmem:"]) / 1024


async def rig_idle_mb(rpc: Rpc, engine: str, site: str, run: int) -> int:
    space = await rpc.space(f"{engine} idle {run}")
    rig = (await rpc.call("rig.open", space_id=space, surface="browser", engine=engine))["rigId"]
    try:
        page = await rpc.call("browser_use", rigId=rig, action={"action": "navigate", "url": site})
        assert page["url"] == site and page.get("status") in (200, None), page  # engine C reports no status
        await asyncio.sleep(SETTLE_S)
        await rpc.call("rigs.status", server=True)  # measures every rig's cgroup now
        rows = await rpc.call("rig_list")
        return int(next(r for r in rows if r["rigId"] == rig)["residentMb"])
    finally:
        await rpc.call("rig_close", rigId=rig)


async def host_idle_mb(engine: str, site: str) -> tuple[float, float]:
    async with host_engine(engine, width=STILL[0], height=STILL[1]) as session:
        await session.navigate(site)
        await asyncio.sleep(SETTLE_S)
        return await asyncio.to_thread(tree_pss_mb, os.getpid())


async def memory(rpc: Rpc, engine: str, site: str) -> tuple[list[int], list[tuple[float, float]]]:
    in_rig, on_host = [], []
    for run in range(IDLE_RIGS):
        in_rig.append(await rig_idle_mb(rpc, engine, site, run))
        on_host.append(await host_idle_mb(engine, site))
    return in_rig, on_host


# -- the run --------------------------------------------------------------------------------------------------


def engines_to_run(asked: list[str]) -> list[str]:
    chosen = []
    for engine in asked or list(ENGINES):
        if engine not in ENGINES:
            sys.exit(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        if engine not in RECIPES:
            print(f"{engine}: skipped, its recipe is not registered on this branch yet")
        elif not pack_ready(PACKS, BROWSERS[engine]):
            print(f"{engine}: skipped, its pack is not built under {PACKS} (hangar rigs build-pack)")
        else:
            chosen.append(engine)
    return chosen


async def main(asked: list[str]) -> None:
    reason = EnclosureBackend(PACKS.parent / "probe", packs_root=PACKS).unavailable_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    engines = engines_to_run(asked)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="hbb-", dir="/tmp") as tmp:
        data = Path(tmp) / "data"
        (data / "rigs").mkdir(parents=True)
        (data / "rigs" / "microvm-packs").symlink_to(PACKS)  # the warm packs, shared read-only
        site_port = free_port()
        site = f"http://127.0.0.1:{site_port}/"
        proc, url, token = start_server(data, site_port, Path(tmp) / "server.log")
        try:
            ws_url = url.replace("http://", "ws://") + "/rpc"
            auth = {"Authorization": f"Bearer {token}"}
            async with websockets.connect(ws_url, additional_headers=auth, max_size=64 * 1024 * 1024) as conn:
                ws = (await Rpc(conn, "").call("workspaces.create", server=True, name="bench"))["id"]
                rpc = Rpc(conn, ws)
                for engine in engines:
                    in_rig, on_host = await opens(rpc, engine)
                    idle, host_idle = await memory(rpc, engine, site)
                    report(engine, in_rig, on_host, idle, host_idle)
                if "engine-a" in engines:
                    await live_view(rpc, url, token)
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"(load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores)")


def report(
    engine: str, in_rig: list[float], on_host: list[float], idle: list[int], host_idle: list[tuple[float, float]]
) -> None:
    ratio = statistics.median(in_rig) / statistics.median(on_host)
    verdict = "within" if ratio <= TARGET_RATIO else "over"
    print(f"{engine}: rig.open -> first screenshot through the server (warm pack): {spread(in_rig)} ms over {RUNS}")
    print(f"  peer: {engine} launched on the host -> first screenshot: {spread(on_host)} ms")
    print(f"  ratio {ratio:.2f} ({verdict} the {TARGET_RATIO}x target)")
    print(f"  idle rig resident memory (open, one navigation, {SETTLE_S:.0f} s): {spread([float(x) for x in idle])} MB "
          f"over {len(idle)} rigs")  # fmt: skip
    whole, own = [w for w, _ in host_idle], [o for _, o in host_idle]
    print(f"  peer: the same engine's processes on the host, same state: PSS {spread(whole)} MB, of which their "
          f"own memory (anonymous and shared, no mapped files) {spread(own)} MB")  # fmt: skip


# -- live view ------------------------------------------------------------------------------------------------

# The page the live view watches: it flips between black and white every FLIP_MS, noting each flip's wall-clock
# time (the page and this process read the same clock: an enclosure shares the host's kernel).
FLIP_MS = 400
FLIP_PAGE = f"""<!doctype html><title>flips</title><body style="margin:0;background:#000">
<script>
const stamps = [];
let white = false;
setInterval(() => {{
  white = !white;
  document.body.style.background = white ? '#fff' : '#000';
  stamps.push(performance.timeOrigin + performance.now());
  document.body.dataset.stamps = stamps.map((t) => t.toFixed(1)).join(' ');
}}, {FLIP_MS});
</script></body>"""
WATCH_S = 12.0
PAGE_PORT = 8700


async def luminance(jpeg: bytes) -> int:
    """The mean grey level of a frame (0 black, 255 white), by the host's ffmpeg, after the run."""
    proc = await asyncio.create_subprocess_exec(
        "ffmpeg", "-loglevel", "error", "-i", "-", "-vf", "scale=1:1", "-f", "rawvideo", "-pix_fmt", "gray", "-",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate(jpeg)
    return out[0]


async def serve_flip_page(rpc: Rpc, space: str) -> str:
    """The page as a dev server in the space's terminal rig, reached by the browser rig under a dev domain."""
    terminal = (await rpc.call("rig.open", space_id=space, surface="terminal"))["rigId"]
    script = (
        f"mkdir -p ~/lv && cat > ~/lv/index.html <<'EOF'\n{FLIP_PAGE}\nEOF\n"
        f"cd ~/lv && setsid -f python3 -m http.server {PAGE_PORT} --bind 127.0.0.1 >/dev/null 2>&1; "
        f"for i in $(seq 100); do ss -ltn | grep -q :{PAGE_PORT} && break; sleep 0.1; done"
    )
    await rpc.call("rig.exec", rigId=terminal, command=script)
    await rpc.call("rig.setDevDomain", space_id=space, domain="flips.test", rigId=terminal, guestPort=PAGE_PORT)
    return terminal


async def live_view(rpc: Rpc, origin: str, token: str) -> None:
    """Live view latency for engine A, from a change on the page to the frame carrying it arriving at the
    person's end of the lane: a WebSocket client on ``rig.liveViewUrl`` (``/rig/live/<rigId>``), as the web
    client's live view tab connects, taking each binary frame's arrival time as it is received (before any
    decoding; the tab's JPEG decode and canvas draw, a few milliseconds, are not included). Which frame carries
    which flip is read afterwards from the frames' pixels; each flip's latency is the arrival of the first frame
    showing it minus the time the page script flipped it. The frame header's capture time splits that into the
    engine (flip to capture) and the lane (capture to arrival: the server, its fan-out and the socket)."""
    space = await rpc.space("live view")
    terminal = await serve_flip_page(rpc, space)
    rig = (await rpc.call("rig.open", space_id=space, surface="browser", engine="engine-a"))["rigId"]
    try:
        page = await rpc.call("browser_use", rigId=rig, action={"action": "navigate", "url": "http://flips.test/"})
        assert page.get("status") == 200, page
        path = (await rpc.call("rig.liveViewUrl", rigId=rig))["path"]
        frames: list[tuple[float, float, bytes]] = []  # arrival (unix ms), capture (unix ms), JPEG
        auth = {"Authorization": f"Bearer {token}"}
        async with websockets.connect(origin.replace("http", "ws", 1) + path, additional_headers=auth) as view:
            began = time.time() * 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WATCH_S):
                    async for message in view:
                        arrived = time.time() * 1000
                        if isinstance(message, bytes):
                            _, _, _, captured = struct.unpack_from(">IHHd", message)
                            frames.append((arrived, captured, message[16:]))
        dom = await rpc.call("browser_use", rigId=rig, action={"action": "extract", "kind": "dom"})
    finally:
        await rpc.call("rig_close", rigId=rig)
        await rpc.call("rig_close", rigId=terminal)
    match = re.search(r'data-stamps="([0-9. ]+)"', unfence(dom["content"]))
    assert match, "the page noted no flips"
    flips = [(float(t), i % 2 == 0) for i, t in enumerate(match.group(1).split())]  # (when, now white)
    white = [await luminance(jpeg) > 128 for _, _, jpeg in frames]
    total, engine, lane = [], [], []
    for when, now_white in flips:
        if when < began:
            continue
        shown = next((f for f, w in zip(frames, white, strict=True) if f[0] >= when and w == now_white), None)
        if shown is None:
            continue
        total.append(shown[0] - when)
        engine.append(shown[1] - when)
        lane.append(shown[0] - shown[1])
    p90 = sorted(total)[int(len(total) * 0.9)]
    print(f"engine-a live view: a change on the page -> its frame at the person's end: {spread(total)} ms "
          f"over {len(total)} changes (target under 100 ms; p90 {p90:.0f} ms)")  # fmt: skip
    print(f"  of which the engine (change -> captured frame) {spread(engine)} ms, the server and the lane "
          f"(captured -> arrived) {spread(lane)} ms; {len(frames)} frames for {len(flips)} changes")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
