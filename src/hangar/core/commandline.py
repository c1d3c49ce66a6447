"""The ``hangar`` command as a person runs it on this host: what the server and the command line print when they
tell someone what to run.

``make install`` puts the entry point in the checkout's virtual environment (``.venv/bin/hangar``), which no shell
finds by its bare name. So a printed command names the entry point of the interpreter running now: ``hangar`` when
the shell's ``PATH`` finds that same file, else its path relative to the current directory when it lies below it
(``.venv/bin/hangar`` from the checkout, where ``make run`` starts the server), else its absolute path. Every word
is quoted for a POSIX shell, so a command runs as printed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def hangar_program(*, executable: str | None = None, cwd: Path | None = None, search_path: str | None = None) -> str:
    """The shell word that runs this installation's ``hangar`` (the arguments stand in for the process's own
    interpreter, working directory and ``PATH``)."""
    entry = Path(executable or sys.executable).parent / "hangar"
    if not entry.is_file():
        return "hangar"  # not an installed entry point (run from a source tree): the name is all there is
    found = shutil.which("hangar", path=search_path if search_path is not None else os.environ.get("PATH"))
    if found is not None and Path(found).resolve() == entry.resolve():
        return "hangar"
    here = (cwd or Path.cwd()).absolute()
    absolute = entry.absolute()
    if absolute.is_relative_to(here):
        return shlex.quote(str(absolute.relative_to(here)))
    return shlex.quote(str(absolute))


def hangar_command(*args: str | os.PathLike[str]) -> str:
    """``hangar <args>`` as a line a shell on this host runs as printed."""
    return " ".join([hangar_program(), *(shlex.quote(os.fspath(a)) for a in args)])
