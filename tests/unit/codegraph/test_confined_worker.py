"""The parsing workers' confinement, attacked from inside: a program in the worker's place (as a parser turned
hostile by a crafted file would be) tries to read the server's data directory and the repository's clone, to
write, to reach the network and to keep root, and is refused each time."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from hangar.codegraph.pool import worker_argv

PROBE = r"""
import json, os, socket, sys
out = {}
for name, path in (("secret", sys.argv[1]), ("clone", sys.argv[2])):
    try:
        open(path).read()
        out[name] = "read"
    except OSError as exc:
        out[name] = type(exc).__name__
try:
    open("/usr/lib/hangar-probe", "w")
    out["write"] = "wrote"
except OSError as exc:
    out["write"] = type(exc).__name__
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2)
    out["net"] = "connected"
except OSError as exc:
    out["net"] = type(exc).__name__
out["uid"] = os.getuid()
out["caps"] = [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1]
out["env"] = sorted(os.environ)
print(json.dumps(out))
"""


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
def test_a_hostile_parser_reaches_no_file_network_or_privilege(tmp_path: Path) -> None:
    secret = tmp_path / "data" / "secrets.json"
    secret.parent.mkdir()
    secret.write_text("{}")
    clone = tmp_path / "data" / "ws" / "repos" / "r.git" / "HEAD"
    clone.parent.mkdir(parents=True)
    clone.write_text("ref: refs/heads/main\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    # Unconfined, the same program reads both files and reaches the port: the probe works.
    plain = worker_argv(False)
    assert plain[-2:] == ["-m", "hangar.codegraph.worker"]
    seen = subprocess.run(
        [*plain[:-2], "-c", PROBE, str(secret), str(clone), str(port)], capture_output=True, text=True, check=True
    )
    assert json.loads(seen.stdout)["secret"] == "read" and json.loads(seen.stdout)["net"] == "connected"
    confined = worker_argv(True)
    done = subprocess.run(
        [*confined[:-2], "-c", PROBE, str(secret), str(clone), str(port)], capture_output=True, text=True, check=True
    )
    listener.close()
    found = json.loads(done.stdout)
    assert found["secret"] == "FileNotFoundError" and found["clone"] == "FileNotFoundError"
    assert found["write"] in ("OSError", "PermissionError", "FileNotFoundError")
    assert found["net"] in ("OSError", "ConnectionRefusedError")  # its own empty network namespace
    assert found["uid"] == 65534 and found["caps"] == "0000000000000000"
    # --clearenv: nothing of the server's, only the sandbox's own PATH=/usr/bin:/bin, HOME=/tmp and LANG=C.UTF-8.
    assert [k for k in found["env"] if k not in ("LC_CTYPE", "PWD")] == ["HOME", "LANG", "PATH"]
