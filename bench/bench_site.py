"""Benchmark of the website: requests per second and latency (p50, p99) for a manual page as HTML and as its
markdown twin, and for the docs tool server's search_pages, measured with wrk on loopback.

The peer is nginx (Debian's nginx-light) serving the same pre-rendered bytes from files in the same run, so the
result is a ratio on this machine, not an absolute claim. A second peer, when installed, is granian (PyPI, a Rust
HTTP server) running the very same site app (`hangar.cli.website:build_site`): the other way to a faster listener,
measured beside the one Hangar runs (uvicorn's httptools protocol with Hangar's head bounds). Every server runs
one worker process: the site as `hangar site` (one uvicorn process), nginx with `worker_processes 1`, granian with
`--workers 1`.

The target (issue 30): the HTML page at least 0.8x nginx; the bench says which rows fall below it.

With ``--peer-src DIR`` (a checkout's ``src``, e.g. the code before a change, from ``git archive REV src``), that
code serves the site too, as ``before``, measured in the same alternating rounds. Each Hangar row also gives the
server's CPU time per request (from ``/proc``), which the machine's other work moves far less than the rates.

    .venv/bin/python bench/bench_site.py [--duration 3] [--connections 32] [--rounds 3] [--no-granian] [--peer-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TARGET = 0.8  # of nginx, for the HTML page
SEARCH_TARGET = 2000  # req/s of search_pages with distinct queries

PAGE = "/manual/concepts/pipelines"
SEARCH_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
     "params": {"name": "search_pages", "arguments": {"query": "pipeline retry backoff", "limit": 5}}}
)  # fmt: skip
NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{ text/html html; text/markdown md; application/json json; }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ try_files $uri.html $uri =404; }}
        location = /search {{ default_type application/json; try_files /search.json =404; }}
        error_page 405 =200 $uri;
    }}
}}
"""
WRK_POST = """
wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def fetch(
    url: str, accept: str | None = None, data: bytes | None = None, headers: dict[str, str] | None = None
) -> bytes:
    req = urllib.request.Request(url, data=data, headers={**(headers or {}), **({"Accept": accept} if accept else {})})
    with urllib.request.urlopen(req, timeout=10) as r:
        return bytes(r.read())


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    if not m:
        raise ValueError(f"cannot read latency {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def pinned(cpu: int) -> list[str]:
    """Pin a process to one CPU when the machine has two or more, so server and load generator do not trade
    cores during a run (both servers get the same core, the load generator the other)."""
    if (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        return []
    return ["taskset", "-c", str(cpu)]


def wrk(url: str, duration: int, connections: int, script: Path | None = None) -> dict[str, float]:
    cmd = [*pinned(1), "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        cmd += ["-s", str(script)]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    requests = float(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} non-2xx responses\n{out}")
    return {"rps": rps, "p50": p50, "p99": p99, "requests": requests}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


WRK_DISTINCT = """
local n = 0
local words = {words}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
request = function()
    n = n + 1
    local q = words[(n % #words) + 1] .. " " .. words[((n * 7) % #words) + 1] .. " " .. n
    local body = '{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "search_pages", '
        .. '"arguments": {{"query": "' .. q .. '", "limit": 5}}}}}}'
    return wrk.format(nil, nil, nil, body)
end
"""
WORDS = ["pipeline", "retry", "backoff", "rig", "browser", "space", "agent", "token", "backup", "workspace",
         "secret", "review", "chat", "slack", "worker", "lease", "audit", "guardrail", "sign", "scim"]  # fmt: skip


def start_granian(port: int) -> subprocess.Popen[bytes] | None:
    """granian serving the same site app in one worker, or None when granian is not installed."""
    granian = Path(sys.executable).with_name("granian")
    if not granian.exists():
        return None
    cmd = [*pinned(0), str(granian), "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", "1", "--runtime-mode", "st", "--loop", "uvloop", "--no-ws", "--log-level", "warning"]
    cmd += ["--factory", "hangar.cli.website:build_site"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=32, help="concurrent connections per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per workload (medians reported)")
    parser.add_argument("--no-granian", action="store_true", help="leave the granian peer out")
    parser.add_argument("--peer-src", help="a checkout's src/ served as a second site, 'before', in the same rounds")
    args = parser.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            hint = "install Debian's wrk and nginx-light (make apt-bench-deps, which make bench runs)"
            print(f"{tool} is missing: {hint}", file=sys.stderr)
            return 2
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    hangar = str(Path(sys.executable).with_name("hangar"))
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmpdir:
        tmp = Path(tmpdir)
        tmp.chmod(0o755)  # nginx's worker drops to an unprivileged user when started as root
        site_port, nginx_port, granian_port = free_port(), free_port(), free_port()
        site_url = f"http://127.0.0.1:{site_port}"
        site = subprocess.Popen([*pinned(0), hangar, "site", "--port", str(site_port)], stdout=subprocess.DEVNULL)
        procs: list[subprocess.Popen[bytes]] = [site]
        servers: dict[str, str] = {"hangar": site_url}
        pids = {"hangar": site.pid}
        try:
            wait_http(site_url + "/healthz")
            if args.peer_src:
                before_port = free_port()
                entry = "from hangar.cli import main; main()"
                before = subprocess.Popen(
                    [*pinned(0), sys.executable, "-c", entry, "site", "--port", str(before_port)],
                    stdout=subprocess.DEVNULL,
                    env={**os.environ, "PYTHONPATH": str(Path(args.peer_src).resolve())},
                )
                procs.append(before)
                servers["before"] = f"http://127.0.0.1:{before_port}"
                pids["before"] = before.pid
                wait_http(servers["before"] + "/healthz")
            # nginx serves the very bytes the site serves (fetched from it, same origin in the canonical URLs).
            root = tmp / "root"
            (root / PAGE.strip("/")).parent.mkdir(parents=True)
            html = fetch(site_url + PAGE)
            markdown = fetch(site_url + PAGE + ".md")
            search = fetch(
                site_url + "/mcp",
                data=SEARCH_BODY.encode(),
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            (root / (PAGE.strip("/") + ".html")).write_bytes(html)
            (root / (PAGE.strip("/") + ".md")).write_bytes(markdown)
            (root / "search.json").write_bytes(search)
            conf = tmp / "nginx.conf"
            conf.write_text(NGINX_CONF.format(tmp=tmp, port=nginx_port, root=root))
            ngx = subprocess.Popen([*pinned(0), nginx, "-c", str(conf), "-p", str(tmp)])
            procs.append(ngx)
            nginx_url = f"http://127.0.0.1:{nginx_port}"
            wait_http(nginx_url + PAGE)
            assert fetch(nginx_url + PAGE) == html and fetch(nginx_url + PAGE + ".md") == markdown
            servers["nginx"] = nginx_url
            gran = None if args.no_granian else start_granian(granian_port)
            if gran is not None:
                procs.append(gran)
                servers["granian"] = f"http://127.0.0.1:{granian_port}"
                wait_http(servers["granian"] + "/healthz")

            post = tmp / "post.lua"
            post.write_text(WRK_POST.format(body=json.dumps(SEARCH_BODY)))
            distinct = tmp / "distinct.lua"
            distinct.write_text(WRK_DISTINCT.format(words="{" + ", ".join(json.dumps(w) for w in WORDS) + "}"))
            workloads = (
                ("manual page, HTML", PAGE, PAGE, None),
                ("manual page, markdown", PAGE + ".md", PAGE + ".md", None),
                ("search_pages, one query", "/mcp", "/search", post),
                ("search_pages, distinct", "/mcp", "/search", distinct),
            )
            rows = []
            for label, path, nginx_path, script in workloads:
                urls = {name: url + (nginx_path if name == "nginx" else path) for name, url in servers.items()}
                for url in urls.values():
                    wrk(url, 1, args.connections, script)  # warm up
                runs: dict[str, list[dict[str, float]]] = {name: [] for name in urls}
                # Alternate short rounds so a load spike from elsewhere on the machine hits every server alike.
                for _ in range(args.rounds):
                    for name, url in urls.items():
                        cpu = cpu_seconds(pids[name]) if name in pids else 0.0
                        run = wrk(url, args.duration, args.connections, script)
                        if name in pids:
                            run["cpu_us"] = (cpu_seconds(pids[name]) - cpu) / max(run["requests"], 1) * 1e6
                        runs[name].append(run)
                # Latency without queueing: one connection, one request at a time.
                one = {
                    name: median([wrk(url, args.duration, 1, script) for _ in range(args.rounds)])
                    for name, url in urls.items()
                }
                rows.append((label, {name: median(r) for name, r in runs.items()}, one))
        finally:
            for p in reversed(procs):
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

    names = list(servers)
    print(
        f"wrk -t1 -c{args.connections} -d{args.duration}s on loopback, median of {args.rounds} alternating rounds; "
        f"{os.cpu_count()} CPUs, load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after; "
        "one worker process each" + (", servers on CPU 0 and wrk on CPU 1" if pinned(0) else "")
    )
    head = f"{'workload':<24}" + "".join(f" {n + ' req/s':>14} {'p50':>6} {'p99':>6}" for n in names)
    head += "".join(f" {n + '/nginx':>14}" for n in names if n != "nginx") + f" | {'1-conn p50 ' + '/'.join(names):>30}"
    print(head)
    print("-" * len(head))
    below = []
    for label, many, one in rows:
        line = f"{label:<24}" + "".join(
            f" {many[n]['rps']:>14.0f} {many[n]['p50']:>6.2f} {many[n]['p99']:>6.2f}" for n in names
        )
        for n in names:
            if n != "nginx":
                line += f" {many[n]['rps'] / many['nginx']['rps']:>14.2f}"
        singles = " / ".join(f"{one[n]['p50']:.2f}" for n in names)
        line += f" | {singles:>30}"
        print(line)
        cpu = [f"{n} {many[n]['cpu_us']:.0f} us" for n in names if "cpu_us" in many[n]]
        print(f"{'':<24} server CPU per request: " + ", ".join(cpu))
        if label == "manual page, HTML" and many["hangar"]["rps"] / many["nginx"]["rps"] < TARGET:
            below.append(f"{label}: {many['hangar']['rps'] / many['nginx']['rps']:.2f} of nginx (target {TARGET})")
        if label == "search_pages, distinct" and many["hangar"]["rps"] < SEARCH_TARGET:
            below.append(f"{label}: {many['hangar']['rps']:.0f} req/s (target {SEARCH_TARGET})")
    print(f"latencies in ms; req/s and the first latencies with {args.connections} connections")
    print("(nginx's search rows serve one response's bytes as a static file: a ceiling, not a search engine)")
    for line in below:
        print(f"BELOW TARGET: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
