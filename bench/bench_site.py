"""Benchmark of the website: requests per second and latency (p50, p99) for a manual page as HTML and as its
markdown twin, and for the docs tool server's search_pages, measured with wrk on loopback.

The peer is nginx (Debian's nginx-light) serving the same pre-rendered bytes from files in the same run, so the
result is a ratio on this machine, not an absolute claim. Both servers run one worker process: the site runs as
`hangar site` (one uvicorn process), nginx with `worker_processes 1`.

    .venv/bin/python bench/bench_site.py [--duration 3] [--connections 32] [--rounds 3]
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


def wait_http(url: str, timeout: float = 30.0) -> None:
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
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} non-2xx responses\n{out}")
    return {"rps": rps, "p50": p50, "p99": p99}


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=32, help="concurrent connections per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per workload (medians reported)")
    args = parser.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            hint = "install Debian's wrk and nginx-light (make apt-bench-deps, which make bench runs)"
            print(f"{tool} is missing: {hint}", file=sys.stderr)
            return 2
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    hangar = str(Path(sys.executable).with_name("hangar"))

    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmpdir:
        tmp = Path(tmpdir)
        tmp.chmod(0o755)  # nginx's worker drops to an unprivileged user when started as root
        site_port, nginx_port = free_port(), free_port()
        site_url = f"http://127.0.0.1:{site_port}"
        site = subprocess.Popen([*pinned(0), hangar, "site", "--port", str(site_port)], stdout=subprocess.DEVNULL)
        procs = [site]
        try:
            wait_http(site_url + "/healthz")
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

            post = tmp / "post.lua"
            post.write_text(WRK_POST.format(body=json.dumps(SEARCH_BODY)))
            rows = []
            for label, url_site, url_nginx, script in (
                ("manual page, HTML", site_url + PAGE, nginx_url + PAGE, None),
                ("manual page, markdown", site_url + PAGE + ".md", nginx_url + PAGE + ".md", None),
                ("search_pages (POST /mcp)", site_url + "/mcp", nginx_url + "/search", post),
            ):
                wrk(url_site, 1, args.connections, script)  # warm up
                ours_runs, peer_runs = [], []
                # Alternate short rounds so a load spike from elsewhere on the machine hits both sides alike.
                for _ in range(args.rounds):
                    ours_runs.append(wrk(url_site, args.duration, args.connections, script))
                    peer_runs.append(wrk(url_nginx, args.duration, args.connections, script))
                # Latency without queueing: one connection, one request at a time.
                ours_one = median([wrk(url_site, args.duration, 1, script) for _ in range(args.rounds)])
                peer_one = median([wrk(url_nginx, args.duration, 1, script) for _ in range(args.rounds)])
                rows.append((label, median(ours_runs), median(peer_runs), ours_one, peer_one))
        finally:
            for p in reversed(procs):
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

    print(
        f"wrk -t1 -c{args.connections} -d{args.duration}s on loopback, median of {args.rounds} alternating rounds; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; one worker process each"
        + (", servers on CPU 0 and wrk on CPU 1" if pinned(0) else "")
    )
    head = (
        f"{'workload':<26} {'hangar req/s':>12} {'p50':>6} {'p99':>6} {'nginx req/s':>12} {'p50':>6} {'p99':>6}"
        f" {'ratio':>6} | {'1-conn p50':>10} {'p99':>6} {'nginx p50':>10} {'p99':>6}"
    )
    print(head)
    print("-" * len(head))
    for label, ours, peer, ours_one, peer_one in rows:
        print(
            f"{label:<26} {ours['rps']:>12.0f} {ours['p50']:>6.2f} {ours['p99']:>6.2f} "
            f"{peer['rps']:>12.0f} {peer['p50']:>6.2f} {peer['p99']:>6.2f} {ours['rps'] / peer['rps']:>6.2f} | "
            f"{ours_one['p50']:>10.2f} {ours_one['p99']:>6.2f} {peer_one['p50']:>10.2f} {peer_one['p99']:>6.2f}"
        )
    print(f"latencies in ms; req/s and the first latencies with {args.connections} connections")
    print("(nginx's search row serves the same response bytes as a static file: a ceiling, not a search engine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
