"""The analysers read hostile files, so they run in a sandbox of their own: no network, no host files beyond
``/usr`` and the server's Python, the skill's files read-only, and a time bound that kills the whole group."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hangar.agents.skills import analysers
from hangar.core import hosttool

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


async def test_the_sandbox_sees_little_and_writes_nothing_of_the_skill(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("x")
    (tmp_path.parent / "beside.txt").write_text("host file")
    script = (
        "touch /skill/new 2>/dev/null && echo wrote-skill; "
        "[ -e /etc/passwd ] && echo sees-host; "
        f"[ -e {tmp_path.parent}/beside.txt ] && echo sees-host; "
        "[ -e /home ] && echo sees-host; "
        # The server's Python is mounted (read-only) to run bandit; its source tree beside it is not.
        f"[ -e {Path(__file__).resolve().parents[3] / 'src'} ] && echo sees-host; "
        "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "
        "id -u; echo done"
    )
    ran = await analysers.run_confined(tmp_path, ["sh", "-c", script])
    lines = ran.stdout.decode().split()
    assert ran.code == 0 and lines[-1] == "done", ran
    assert "wrote-skill" not in lines and "sees-host" not in lines
    assert lines[:-2] == ["lo"]  # no interface but its own loopback
    assert lines[-2] == str(hosttool.NOBODY)
    assert not (tmp_path / "new").exists()


async def test_an_analyser_past_its_time_bound_is_killed_with_what_it_started(tmp_path: Path) -> None:
    ran = await analysers.run_confined(tmp_path, ["sh", "-c", "sleep 30 & sleep 30; echo late"], limit_s=0.5)
    assert ran.code is None and ran.stdout == b""
    # Within the bound, the same kind of job finishes and is read.
    ran = await analysers.run_confined(tmp_path, ["sh", "-c", "sleep 0.1; echo in-time"], limit_s=20)
    assert (ran.code, ran.stdout) == (0, b"in-time\n")


async def test_a_timed_out_analyser_is_a_review_finding_never_a_pass(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "b.py").write_text("print(1)\n")
    (found,) = await analysers.shellcheck(tmp_path, ["a.sh"], limit_s=0.001)
    assert (found.kind, found.severity) == ("analyser", "review")
    assert "shellcheck did not check the skill's scripts: it did not finish within 0.001 s" in found.message
    (found,) = await analysers.bandit(tmp_path, ["b.py"], limit_s=0.001)
    assert "bandit did not check" in found.message
    assert await analysers.shellcheck(tmp_path, ["a.sh"]) == []
    assert await analysers.bandit(tmp_path, ["b.py"]) == []


async def test_script_names_are_never_options(tmp_path: Path) -> None:
    """A skill may name a script ``--help.py`` or ``-x.sh``: the analysers are told where their options end."""
    (tmp_path / "--version.py").write_text("import subprocess\nsubprocess.call(input(), shell=True)\n")
    (tmp_path / "-x.sh").write_text("#!/bin/sh\nif [ 1 ] then\n")
    assert {f.kind for f in await analysers.bandit(tmp_path, ["--version.py"])} == {"bandit"}
    assert {f.file for f in await analysers.shellcheck(tmp_path, ["-x.sh"])} == {"-x.sh"}


async def test_a_missing_analyser_is_a_review_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    (found,) = await analysers.shellcheck(tmp_path, ["a.sh"])
    assert found.severity == "review" and "is not installed" in found.message
