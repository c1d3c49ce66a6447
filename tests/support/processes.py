"""Real ``hangar`` processes on one data directory: ``hangar serve`` on an ephemeral port, and the CLI."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HANGAR = str(Path(sys.executable).parent / "hangar")


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
def hangar_serve(data_dir: Path, *extra: str, log: Path | None = None) -> Iterator[ServeProcess]:
    """``hangar serve`` (no website) on an ephemeral loopback port; stopped (TERM, then KILL) at the end."""
    log = log or data_dir.parent / f"serve-{os.getpid()}-{len(list(data_dir.parent.glob('serve-*.log')))}.log"
    with open(log, "w") as errors:
        proc = subprocess.Popen(
            [HANGAR, "serve", "--port", "0", "--no-site", *extra],
            env=hangar_env(data_dir),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # its own group: kill9 takes what it started too
        )
    try:
        assert proc.stdout is not None
        url = None
        for line in proc.stdout:
            name, _, value = line.strip().partition(": ")
            if name == "server":
                url = value
                break
        if url is None:
            proc.wait(30)
            raise RuntimeError(f"hangar serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        yield ServeProcess(proc, url, log)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
