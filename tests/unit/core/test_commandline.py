"""The ``hangar`` command as printed for a shell on this host: the bare name only where the PATH finds this very
entry point, else its path from the current directory when it lies below it, else its absolute path; each word
quoted, so the line runs as printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hangar.core import commandline
from hangar.core.commandline import hangar_command, hangar_program


def checkout(tmp_path: Path, name: str = "checkout") -> Path:
    """A checkout with a virtual environment's interpreter and ``hangar`` entry point (a script saying its args)."""
    bin_dir = tmp_path / name / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("")
    entry = bin_dir / "hangar"
    entry.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    entry.chmod(0o755)
    return tmp_path / name


def test_from_the_checkout_the_entry_point_is_named_by_its_path_there(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    python = str(root / ".venv/bin/python")
    assert hangar_program(executable=python, cwd=root, search_path="/usr/bin:/bin") == ".venv/bin/hangar"
    assert hangar_program(executable=python, cwd=root / ".venv", search_path="") == "bin/hangar"


def test_from_elsewhere_it_is_the_absolute_path_quoted(tmp_path: Path) -> None:
    root = checkout(tmp_path, "my checkout")
    python = str(root / ".venv/bin/python")
    printed = hangar_program(executable=python, cwd=tmp_path / "elsewhere", search_path="")
    assert printed == f"'{root}/.venv/bin/hangar'"


def test_the_bare_name_only_where_the_path_finds_this_same_entry_point(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    other = checkout(tmp_path, "other")
    python = str(root / ".venv/bin/python")
    assert hangar_program(executable=python, cwd=tmp_path, search_path=str(root / ".venv/bin")) == "hangar"
    # Another installation's `hangar` first on the PATH would run other code: the path is printed instead.
    found_other = hangar_program(executable=python, cwd=tmp_path, search_path=str(other / ".venv/bin"))
    assert found_other == "checkout/.venv/bin/hangar"


def test_a_printed_command_runs_as_printed_whatever_its_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = checkout(tmp_path, "a checkout")
    data = tmp_path / "data dir; rm -rf x"
    monkeypatch.setattr(commandline.sys, "executable", str(root / ".venv/bin/python"))
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    line = hangar_command("admin", "sign-in-link", "--data-dir", data)
    assert line.startswith(".venv/bin/hangar admin sign-in-link --data-dir ")
    said = subprocess.run(line, shell=True, cwd=root, capture_output=True, text=True, check=True)
    assert said.stdout == f"admin|sign-in-link|--data-dir|{data}|"
