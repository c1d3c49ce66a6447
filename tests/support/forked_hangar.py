"""The ``hangar`` command line run many times cheaply: each run is a process forked from one that imported the
command once, so a test that runs it dozens of times (the upgrade tests kill a migration after each of its steps)
does not pay for the imports at every run (about 1.5 s of CPU each). A run is a real process of its own: it can be
killed, and what it leaves is on disk; its exit status, stdout and stderr are reported as ``hangar`` reports them.

``ForkedHangar`` starts the forking process (``python -m tests.support.forked_hangar``), which reads one JSON line
per run (``argv``, ``env``) and answers one (``returncode``: negative for a signal, ``stdout``, ``stderr``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


class ForkedHangar:
    """A context manager: ``run(argv, env)`` runs ``hangar argv`` with exactly ``env`` as its environment."""

    def __enter__(self) -> ForkedHangar:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forked_hangar"],
            cwd=CHECKOUT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        return self

    def run(self, argv: list[str], env: dict[str, str]) -> Ran:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps({"argv": argv, "env": env}) + "\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            raise RuntimeError(f"the forking process ended ({self.proc.wait(30)})")
        return Ran(**json.loads(answer))

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def __exit__(self, *exc: object) -> None:
        stdin, stdout = self._pipes()
        stdin.close()
        self.proc.wait(60)
        stdout.close()


def _run_one(request: dict[str, Any], main: Any) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the run: the command's own code in a process of its own
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                os.environ.clear()
                os.environ.update(request["env"])
                sys.argv = ["hangar", *request["argv"]]
                try:
                    main()
                    code = 0
                except SystemExit as exit_:
                    code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.seek(0)
        err.seek(0)
        return {"returncode": returncode, "stdout": out.read().decode(), "stderr": err.read().decode()}


def serve_forever() -> None:
    from hangar.cli import main
    from hangar.server.parts import all_parts

    # What the commands import as they run, imported once here (importing starts no thread, so forking is safe).
    for module in ("hangar.identity.tables", "hangar.server.context_factory"):
        importlib.import_module(module)
    all_parts()
    for line in sys.stdin:
        sys.stdout.write(json.dumps(_run_one(json.loads(line), main)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve_forever()
