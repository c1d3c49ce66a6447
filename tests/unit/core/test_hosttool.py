"""The confined-tool helper every program fed hostile input runs through (ffmpeg, the skill analysers, the
diarisation's child): what the program sees of the host, and each limit on both sides of its line: the wall-clock
deadline (the whole group killed), the output kept, the size of a file written, CPU time, memory, the process
count, and no network."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hangar.core.hosttool import MiB, ToolLimits, run_tool

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

LIMITS = ToolLimits(seconds=60.0, cpu_s=30, memory=1024 * MiB, file_size=1 * MiB, processes=64, output=1000)


async def sh(script: str, limits: ToolLimits = LIMITS, **kw: object) -> tuple[int | None, str, bool]:
    ran = await run_tool(["sh", "-c", script], limits, **kw)  # type: ignore[arg-type]
    return ran.code, ran.stdout.decode(), ran.overflowed


async def test_only_the_mounts_are_readable_and_only_the_output_folder_writable(tmp_path: Path) -> None:
    given, out, beside = tmp_path / "given.txt", tmp_path / "out", tmp_path / "beside.txt"
    given.write_text("input")
    beside.write_text("host file")
    out.mkdir()
    script = (
        "cat /in/given.txt; echo; (echo x >> /in/given.txt) 2>/dev/null && echo wrote-input; "
        f"[ -e {beside} ] && echo sees-host; [ -e /etc/passwd ] && echo sees-host; [ -e /home ] && echo sees-host; "
        "echo made > /out/made.txt; echo scratch > /tmp/s && echo tmp-ok; id -u"
    )
    code, text, _ = await sh(script, mounts=[(given, "/in/given.txt")], out_dir=out)
    assert code == 0 and text.split() == ["input", "tmp-ok", "65534"], text
    assert (out / "made.txt").read_text() == "made\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beside.txt", "given.txt", "out"]


async def test_there_is_no_network_but_its_own_loopback(tmp_path: Path) -> None:
    script = (
        "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "
        # An outside address: no route, since there is no interface but lo.
        "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=5)' 2>/dev/null "
        "&& echo reached || echo unreachable"
    )
    code, text, _ = await sh(script)
    assert code == 0 and text.split() == ["lo", "unreachable"], text


async def test_past_the_deadline_the_whole_group_is_killed(tmp_path: Path) -> None:
    marker = tmp_path / "out"
    marker.mkdir()
    # In time: it finishes and is kept.
    assert (await sh("sleep 0.2; echo in-time", dataclasses.replace(LIMITS, seconds=30)))[:2] == (0, "in-time\n")
    # Past it: killed with what it started (a background job would otherwise write its file later).
    code, text, _ = await sh("(sleep 3; echo late > /out/late) & sleep 30; echo late",
                             dataclasses.replace(LIMITS, seconds=0.5), out_dir=marker)  # fmt: skip
    assert code is None and text == ""
    await __import__("asyncio").sleep(4)
    assert not (marker / "late").exists()


async def test_output_is_kept_up_to_its_bound_and_the_rest_dropped() -> None:
    at = await sh("head -c 1000 /dev/zero | tr '\\0' a")
    assert at == (0, "a" * 1000, False)
    past = await sh("head -c 1001 /dev/zero | tr '\\0' a")
    assert past == (0, "a" * 1000, True)
    # A program printing far more is read to its end (never blocked on a full pipe), and kept to the bound.
    flood = await sh("head -c 50000000 /dev/zero; echo done >&2")
    assert flood[0] == 0 and len(flood[1]) == 1000 and flood[2]


async def test_a_file_is_written_up_to_the_size_bound_and_no_further(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code, _, _ = await sh("head -c 1048576 /dev/zero > /out/at", out_dir=out)
    assert code == 0 and (out / "at").stat().st_size == MiB
    ran = await run_tool(["sh", "-c", "exec head -c 1048577 /dev/zero > /out/past"], LIMITS, out_dir=out)
    assert ran.ended_by(signal.SIGXFSZ), ran
    assert (out / "past").stat().st_size == MiB
    # The private /tmp is bounded the same way.
    ran = await run_tool(["sh", "-c", "exec head -c 1048577 /dev/zero > /tmp/past"], LIMITS)
    assert ran.ended_by(signal.SIGXFSZ), ran


async def test_cpu_time_past_its_bound_ends_the_program() -> None:
    limits = dataclasses.replace(LIMITS, cpu_s=1)
    ran = await run_tool(["sh", "-c", "sleep 1; echo idle"], limits)  # wall clock is not CPU time
    assert ran.code == 0 and ran.stdout == b"idle\n"
    ran = await run_tool(["sh", "-c", "while :; do :; done"], limits)
    assert ran.ended_by(signal.SIGXCPU), ran


async def test_memory_past_its_bound_is_refused() -> None:
    limits = dataclasses.replace(LIMITS, memory=256 * MiB)
    take = "import sys; b = bytearray({} * 1024 * 1024); print('held')"
    ran = await run_tool(["python3", "-c", take.format(64)], limits)
    assert ran.code == 0 and ran.stdout == b"held\n"
    ran = await run_tool(["python3", "-c", take.format(512)], limits)
    assert ran.code == 1 and b"MemoryError" in ran.stderr


def test_processes_past_their_bound_are_refused() -> None:
    # The bound counts the sandbox's processes (bubblewrap's own init among them), not the server user's; the
    # kernel does not apply it to root's, so this runs as an unprivileged user, as a server should.
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    code = textwrap.dedent(
        """
        import asyncio, sys
        from hangar.core.hosttool import ToolLimits, run_tool
        limits = ToolLimits(seconds=60.0, cpu_s=30, memory=1 << 30, processes=8)
        script = "for i in $(seq %s); do sleep 1 & done; wait; echo all" % sys.argv[1]
        ran = asyncio.run(run_tool(["sh", "-c", script], limits))
        print(ran.stdout.decode().strip() or "refused", ran.stderr.decode().strip()[-200:])
        """
    )

    def spawn(jobs: int) -> str:
        done = subprocess.run(
            ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", sys.executable, "-c", code,
             str(jobs)],
            capture_output=True, text=True, timeout=120, cwd="/",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    # Eight: bubblewrap's init, the shell and six jobs; a seventh is one past.
    assert spawn(6).startswith("all")
    refused = spawn(7)
    assert refused.startswith("refused") and "Cannot fork" in refused, refused


async def test_unconfined_runs_name_the_host_paths_and_keep_the_limits(tmp_path: Path) -> None:
    # Trusted host execution: no sandbox, so a guest path in argv becomes the mount's host path, and the resource
    # limits and the deadline hold as confined.
    given, out = tmp_path / "given.txt", tmp_path / "out"
    given.write_text("input")
    out.mkdir()
    ran = await run_tool(["cat", "/in/given.txt"], LIMITS, mounts=[(given, "/in/given.txt")], confined=False)
    assert ran.code == 0 and ran.stdout == b"input"
    script = "head -c 1048576 /dev/zero > /out/at; exec head -c 1048577 /dev/zero > /out/past"
    ran = await run_tool(["sh", "-c", script.replace("/out", str(out))], LIMITS, out_dir=out, confined=False)
    assert ran.ended_by(signal.SIGXFSZ) and (out / "at").stat().st_size == MiB
    ran = await run_tool(["sh", "-c", "sleep 30"], dataclasses.replace(LIMITS, seconds=0.5), confined=False)
    assert ran.code is None
