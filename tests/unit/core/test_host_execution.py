"""Trusted host execution's limits: what a program prints is kept up to ``MAX_OUTPUT`` per stream, a file it
leaves for the server is read up to a limit, never through a symlink or a fifo, and what it leaves running in its
process group ends with it; a read-only scope is refused, since nothing on the host could enforce it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from hangar.core.confine import HOST, MAX_OUTPUT, Job, Scope, read_regular
from hangar.errors import Refused


@pytest.mark.parametrize("size", [MAX_OUTPUT, MAX_OUTPUT + 1])
async def test_output_is_kept_up_to_the_limit(tmp_path: Path, size: int) -> None:
    done = await HOST.run(Scope("t", "ws", tmp_path), Job(("head", "-c", str(size), "/dev/zero")))
    assert done.exit_code == 0 and len(done.stdout) == MAX_OUTPUT


def test_a_result_file_is_read_up_to_the_limit_and_never_through_a_link_or_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "at").write_bytes(b"x" * 8)
    (tmp_path / "past").write_bytes(b"x" * 9)
    assert read_regular(tmp_path / "at", 8) == b"x" * 8
    assert read_regular(tmp_path / "past", 8) == b"x" * 8
    (tmp_path / "link").symlink_to(tmp_path / "at")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular(tmp_path / "link") is None and read_regular(tmp_path / "fifo") is None


async def test_results_are_read_back_and_files_removed(tmp_path: Path) -> None:
    job = Job(("sh", "-c", "cat given > left"), files={"given": b"hello"}, results=("left", "absent"))
    done = await HOST.run(Scope("t", "ws", tmp_path), job)
    assert done.files == {"left": b"hello"}
    assert not (tmp_path / "given").exists() and not (tmp_path / "left").exists()


async def test_what_a_program_leaves_in_its_group_ends_with_it(tmp_path: Path) -> None:
    done = await HOST.run(Scope("t", "ws", tmp_path), Job(("sh", "-c", "sleep 300 & echo $!")))
    left = int(done.stdout)
    for _ in range(100):
        if not Path(f"/proc/{left}").exists() or "Z" in Path(f"/proc/{left}/stat").read_text().split(")")[-1][:3]:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the background process outlived the program")


@pytest.mark.parametrize("read_only", [True, False])
async def test_a_read_only_scope_is_refused_on_the_host(tmp_path: Path, read_only: bool) -> None:
    # Nothing on the host can mount the folder read-only: the program is not started (and writes nothing).
    job = Job(("sh", "-c", "touch made"))
    scope = Scope("t", "ws", tmp_path, read_only=read_only)
    if read_only:
        with pytest.raises(Refused, match="cannot mount the working folder read-only"):
            await HOST.run(scope, job)
        assert not (tmp_path / "made").exists()
    else:
        assert (await HOST.run(scope, job)).exit_code == 0 and (tmp_path / "made").exists()
