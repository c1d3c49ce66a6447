"""Ports on the command line: a port ``hangar serve`` or ``hangar site`` cannot have is one line naming it and what
to do, with a non-zero exit and no traceback (the server's port, the website's, a privileged one, an address this
machine lacks), before anything starts; ``make run HOST=… PORT=… SITE_PORT=…`` passes them on as flags."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.processes import HANGAR, hangar_env

CHECKOUT = Path(__file__).resolve().parents[2]


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HANGAR, *args], env=hangar_env(data_dir), capture_output=True, text=True, timeout=120)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The whole of what a refused start said: one line on stderr, nothing on stdout, a non-zero exit."""
    assert done.returncode != 0, done
    assert done.stdout == "" and "Traceback" not in done.stderr, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_busy_server_port_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    with held_port() as port:
        line = one_line(run(tmp_path, "serve", "--port", str(port), "--site-port", "0", "--no-prepare-pack"))
    assert line == (
        f"the server cannot listen: port {port} on 127.0.0.1 is already in use; stop what listens there, or "
        "choose another port with --port PORT (make run PORT=PORT)"
    )
    assert not (tmp_path / "server.db").exists()  # refused before anything started


def test_a_busy_website_port_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    with held_port() as port:
        served = one_line(run(tmp_path, "serve", "--port", "0", "--site-port", str(port), "--no-prepare-pack"))
        alone = one_line(run(tmp_path, "site", "--port", str(port)))
    assert served == (
        f"the website cannot listen: port {port} on 127.0.0.1 is already in use; stop what listens there, or "
        "choose another port with --site-port PORT (make run SITE_PORT=PORT), or serve no website with --no-site"
    )
    assert alone == (
        f"the website cannot listen: port {port} on 127.0.0.1 is already in use; stop what listens there, or "
        "choose another port with --port PORT"
    )


def test_an_address_this_machine_lacks_and_a_privileged_port_are_one_line_too(tmp_path: Path) -> None:
    elsewhere = one_line(run(tmp_path, "serve", "--host", "192.0.2.1", "--port", "0", "--no-site"))
    assert elsewhere.startswith("the server cannot listen: 192.0.2.1 is not an address of this machine")
    assert "give --host an address of this machine" in elsewhere
    unknown = one_line(run(tmp_path, "site", "--host", "no-such-host.invalid"))
    assert "'no-such-host.invalid' is not a host name or address this machine resolves" in unknown
    if os.geteuid() != 0:
        privileged = one_line(run(tmp_path, "site", "--port", "80"))
        assert "port 80 on 127.0.0.1 is privileged" in privileged and "--port PORT" in privileged


@pytest.mark.parametrize(
    ("variables", "flags"),
    [
        ([], ""),
        (["PORT=9999"], " --port 9999"),
        (
            ["HOST=0.0.0.0", "PORT=9001", "SITE_PORT=9002", "DATA_DIR=/srv/hangar"],
            " --data-dir /srv/hangar --host 0.0.0.0 --port 9001 --site-port 9002",
        ),
    ],
)
def test_make_run_passes_host_and_ports_to_hangar_serve(variables: list[str], flags: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT", "SITE_PORT", "DATA_DIR")}
    shown = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", *variables],
        cwd=CHECKOUT, env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    serve = [line for line in shown.stdout.splitlines() if "/hangar serve" in line]
    assert len(serve) == 1 and serve[0].endswith("/hangar serve" + flags), shown.stdout
