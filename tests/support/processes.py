"""Real ``hangar`` processes on one data directory: ``hangar serve`` on an ephemeral port, and the CLI."""

from __future__ import annotations

import contextlib
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HANGAR = str(Path(sys.executable).parent / "hangar")
CHECKOUT = Path(__file__).resolve().parents[2]


def hangar_env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "HANGAR_DATA_DIR": str(data_dir)}


def cli(data_dir: Path, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``hangar <args>`` on ``data_dir`` to the end."""
    return subprocess.run(
        [HANGAR, *args], env=hangar_env(data_dir), capture_output=True, text=True, check=check, timeout=timeout
    )


def owner_token(data_dir: Path) -> str:
    return cli(data_dir, "admin", "owner-token").stdout.strip()


@dataclass
class ServeProcess:
    proc: subprocess.Popen[str]
    url: str
    log: Path
    site_url: str | None = None

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/rpc"

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def hangar_serve(
    data_dir: Path,
    *extra: str,
    log: Path | None = None,
    site: bool = False,
    env: dict[str, str] | None = None,
    descriptors: int | None = None,
) -> Iterator[ServeProcess]:
    """``hangar serve`` on an ephemeral loopback port (and its website on another when ``site``); stopped (TERM,
    then KILL) at the end. ``env`` adds to its environment; ``descriptors`` sets its descriptor limit."""
    log = log or data_dir.parent / f"serve-{os.getpid()}-{len(list(data_dir.parent.glob('serve-*.log')))}.log"
    listeners = ["--site-port", "0"] if site else ["--no-site"]

    def limit() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    with open(log, "w") as errors:
        proc = subprocess.Popen(
            [HANGAR, "serve", "--port", "0", *listeners, *extra],
            env={**hangar_env(data_dir), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # its own group: kill9 takes what it started too
            preexec_fn=limit if descriptors is not None else None,
        )
    try:
        assert proc.stdout is not None
        urls: dict[str, str] = {}
        for line in proc.stdout:
            name, _, value = line.strip().partition(": ")
            if name in ("server", "website"):
                urls[name] = value
            if "server" in urls and ("website" in urls or not site):
                break
        if "server" not in urls:
            proc.wait(30)
            raise RuntimeError(f"hangar serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        yield ServeProcess(proc, urls["server"], log, urls.get("website"))
    finally:
        stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a process started in its own group: TERM, then KILL of its group after 30 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


@contextlib.contextmanager
def serve_from_checkout(
    data_dir: Path, *extra: str, until: str, env: dict[str, str] | None = None, site: bool = False
) -> Iterator[dict[str, str]]:
    """``hangar serve`` run from the checkout as ``make run`` runs it (without the website or the pack preparation
    unless ``site``: then with both, on a port of the system's choosing), and the ``name: value`` lines it printed,
    by name, read up to the first whose name starts with ``until``; stopped at the end."""
    listeners = ["--site-port", "0"] if site else ["--no-site", "--no-prepare-pack"]
    proc = subprocess.Popen(
        [HANGAR, "serve", "--port", "0", *listeners, "--data-dir", str(data_dir), *extra],
        cwd=CHECKOUT, env={**hangar_env(data_dir), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    said: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # a thread, so a line that never comes fails the test instead of hanging it
        assert proc.stdout is not None
        for line in proc.stdout:
            said.put(line)
        said.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        lines: dict[str, str] = {}
        while not any(name.startswith(until) for name in lines):
            try:
                line = said.get(timeout=120)
            except queue.Empty:
                raise RuntimeError(f"hangar serve printed no {until!r} line in 120 s: {lines}") from None
            if line is None:
                raise RuntimeError(f"hangar serve exited with {proc.wait(30)} having printed {lines}")
            name, _, value = line.strip().partition(": ")
            lines[name] = value
        yield lines
    finally:
        proc.terminate()
        proc.wait(30)
        reader.join(30)  # it ends at the output's end, before the pipe is closed under it
        if proc.stdout is not None:
            proc.stdout.close()
