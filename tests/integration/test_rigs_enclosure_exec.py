"""Real enclosure rigs: exec, PTY, namespaces, limits, parking, death underneath, teardown, the shared pack."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_UID
from hangar.errors import Refused, Unavailable
from hangar.rigs.backends.capabilities import Pty
from hangar.rigs.backends.enclosure import EnclosureBackend, EnclosureRig
from hangar.rigs.backends.enclosure.cgroups import detect, rig_cgroup
from hangar.rigs.images.builder import MARKER, PACK_NAME, ensure_pack
from tests.integration.rigs_enclosure_env import PACKS, enclosure, ready_pack, running_rig, spec

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]


async def test_exec_runs_as_the_rig_user_in_its_own_namespaces() -> None:
    async with running_rig() as rig:
        out = await rig.exec("id -un; id -u; hostname; pwd; echo oops >&2; exit 7", timeout_s=10)
        assert (out.exit_code, out.stdout, out.stderr, out.timed_out) == (
            7,
            f"rig\n{RIG_UID}\nrig\n/home/rig\n",
            "oops\n",
            False,
        )
        assert (await rig.exec("tr a-z A-Z", timeout_s=10, stdin=b"piped in")).stdout == "PIPED IN"
        for ns in ("pid", "ipc", "uts", "net", "mnt"):
            inside = (await rig.exec(f"readlink /proc/self/ns/{ns}", timeout_s=10)).stdout.strip()
            assert inside and inside != os.readlink(f"/proc/self/ns/{ns}"), ns
        ps = await rig.exec("ps -e -o pid=,comm=", timeout_s=10)
        pids = [line.split() for line in ps.stdout.splitlines()]
        assert pids[0] == ["1", "bwrap"] and len(pids) < 10  # the host's processes are invisible
        caps = await rig.exec("grep CapEff /proc/self/status", timeout_s=10)
        assert caps.stdout.split() == ["CapEff:", "0000000000000000"]


async def test_timeout_kills_the_command_and_its_children() -> None:
    async with running_rig() as rig:
        out = await rig.exec("sleep 300 & echo $! > /tmp/child; sleep 300", timeout_s=0.5)
        assert out.timed_out and out.exit_code == 137
        check = await rig.exec("kill -0 $(cat /tmp/child) 2>/dev/null && echo alive || echo gone", timeout_s=10)
        assert check.stdout == "gone\n"
        detached = await rig.exec("nohup sleep 300 >/dev/null 2>&1 & echo started", timeout_s=10)
        assert detached.stdout == "started\n" and not detached.timed_out


async def test_pty_is_an_xterm_and_resizes() -> None:
    async with running_rig() as rig:
        pty = await rig.open_pty(100, 30)
        await pty.write(b"echo T=$TERM; stty size\n")
        out = b""
        while b"30 100\r\n" not in out:
            out += await asyncio.wait_for(pty.read(), 10)
        assert b"T=xterm-256color" in out
        await pty.resize(132, 43)
        await pty.write(b"stty size; exit\n")
        while chunk := await asyncio.wait_for(pty.read(), 10):
            out += chunk
        assert b"43 132\r\n" in out
        assert await pty.read() == b""
        with pytest.raises(Refused):
            await pty.write(b"late")
        await pty.aclose()
        await pty.aclose()


async def test_pty_exit_code_arrives_while_keystrokes_are_in_flight() -> None:
    """The shell exits while the host is still typing: the agent reads and drops those keystrokes and keeps the
    connection until the host has read the exit frame (closed with frames unread, it would reset and lose it)."""
    async with running_rig() as rig:
        for attempt in range(10):
            pty = await rig.open_pty(80, 24)
            # The shell stops reading for a moment: its input queue fills and the keystrokes back up to the host.
            await pty.write(f"sleep 0.2; exit {attempt + 3}\n".encode())

            async def type_on(pty: Pty = pty) -> None:
                with contextlib.suppress(Refused):
                    while True:
                        await pty.write(b"x" * 512)
                        await asyncio.sleep(0)

            typing = asyncio.ensure_future(type_on())
            try:
                while await asyncio.wait_for(pty.read(), 10):
                    pass
            finally:
                typing.cancel()
            assert pty.exit_code == attempt + 3
            await pty.aclose()


async def test_park_freezes_and_wake_resumes_with_memory_resident() -> None:
    async with running_rig() as rig:
        await rig.exec("nohup sh -c 'while :; do date +%s%N >> /tmp/ticks; sleep 0.02; done' >/dev/null 2>&1 &",
                       timeout_s=10)  # fmt: skip
        await asyncio.sleep(0.3)
        await rig.park()
        await rig.park()  # idempotent
        with pytest.raises(Refused):
            await rig.exec("true", timeout_s=5)
        ticks = await _count_lines(rig, "/tmp/ticks")
        await asyncio.sleep(0.4)
        assert await _count_lines(rig, "/tmp/ticks") == ticks  # frozen: nothing ran
        parked_mb = await rig.resident_mb()
        assert parked_mb > 0
        assert rig.alive()
        await rig.wake()
        await asyncio.sleep(0.3)
        assert await _count_lines(rig, "/tmp/ticks") > ticks


async def _count_lines(rig: EnclosureRig, path: str) -> int:
    """Counted from the host, in the rig's disk layer: the rig's own agent is frozen while it is parked."""
    file = rig.run_dir / "disk" / "upper" / path.lstrip("/")
    return file.read_bytes().count(b"\n")


async def test_memory_limit_and_resident_memory() -> None:
    async with running_rig(spec(memory_mb=128)) as rig:
        before = await rig.resident_mb()
        await rig.exec("nohup python3 -c 'b = bytearray(80 << 20); import time; time.sleep(60)' >/dev/null 2>&1 &",
                       timeout_s=10)  # fmt: skip
        for _ in range(100):
            if await rig.resident_mb() >= before + 70:
                break
            await asyncio.sleep(0.05)
        assert await rig.resident_mb() >= before + 70
        hog = await rig.exec("python3 -c 'b = bytearray(400 << 20); print(len(b))'", timeout_s=30)
        assert hog.exit_code == 137 and hog.stdout == ""  # the kernel's OOM killer, inside the rig's limit
        assert (await rig.exec("echo still here", timeout_s=10)).stdout == "still here\n"
        # When the rig then dies, why it failed names the kernel's kill beside the exit status.
        assert rig.pid1 is not None
        os.kill(rig.pid1, signal.SIGKILL)
        await asyncio.wait_for(rig.wait_dead(), 10)
        # (the kernel may take the sleeping 80 MB program too before the hog)
        assert re.search(
            r"; the kernel killed [12] of its processes for going over the rig's memory limit of 128 MB$",
            rig.death_detail(),
        ), rig.death_detail()


async def test_death_underneath_and_teardown(tmp_path: Path) -> None:
    async with enclosure() as backend:
        rig = await backend.start(spec("dies"), lambda _t: None)
        assert isinstance(rig, EnclosureRig)
        run_dir = rig.run_dir
        assert rig.pid1 is not None
        os.kill(rig.pid1, signal.SIGKILL)
        await asyncio.wait_for(rig.wait_dead(), 10)
        assert not rig.alive()
        assert rig.death_detail().startswith("the rig's processes died underneath it (bubblewrap's status ")
        assert "memory" not in rig.death_detail()  # killed from outside, not for its memory limit
        with pytest.raises(Unavailable):
            await rig.exec("true", timeout_s=5)
        await asyncio.gather(rig.aclose(), rig.aclose())  # the second waits for the first teardown
        assert not run_dir.exists()
        await rig.aclose()
        assert rig.cgroup.pids() == []


async def test_second_rigs_reuse_the_pack_and_progress_is_reported() -> None:
    marker = PACKS / PACK_NAME / MARKER
    async with enclosure() as backend:
        mtime = marker.stat().st_mtime_ns
        infos = await asyncio.gather(ensure_pack(PACKS), ensure_pack(PACKS))
        assert [i.built_in_s for i in infos] == [None, None]
        steps: list[str] = []
        rigs = await asyncio.gather(backend.start(spec("a"), steps.append), backend.start(spec("b"), steps.append))
        try:
            assert "starting the rig and its egress gate" in steps and not any("terminal image" in s for s in steps)
            outs = await asyncio.gather(*(r.exec("echo $HOSTNAME-$(id -u)", timeout_s=10) for r in rigs))
            assert [o.stdout for o in outs] == [f"rig-{RIG_UID}\n"] * 2
            await rigs[0].exec("echo mine > /tmp/own", timeout_s=10)
            other = await rigs[1].exec("cat /tmp/own", timeout_s=10)
            assert other.exit_code == 1  # each rig has its own copy-on-write layer
            await rigs[1].exec("nohup python3 -m http.server 8123 >/dev/null 2>&1 &", timeout_s=10)
            for _ in range(100):
                if 8123 in await rigs[1].listening_ports():
                    break
                await asyncio.sleep(0.05)
            assert await rigs[0].listening_ports() == []
            probe = await rigs[0].exec("curl -sS -m 5 http://127.0.0.1:8123/; echo rc=$?", timeout_s=10)
            assert "rc=7" in probe.stdout  # the other rig's listener is not reachable from here
        finally:
            for r in rigs:
                await r.aclose()
        assert marker.stat().st_mtime_ns == mtime


async def test_escapes_from_inside_are_refused_and_the_host_is_unaffected() -> None:
    host_marker = Path("/tmp") / f"hangar-escape-{os.getpid()}"
    async with running_rig() as rig:
        attempts = await rig.exec(
            "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)'"
            " 2>&1 | tail -1;"
            " sh -c 'echo x >> /etc/passwd' 2>&1 | tail -1;"
            " mkdir /hostroot 2>&1;"
            f" echo leak > {host_marker} && echo wrote-rig-tmp;"
            " /usr/sbin/chroot / true 2>&1 | tail -1;"
            " ls /proc/1/root 2>&1 | tail -1;"
            " unshare --user --map-root-user true 2>&1 | tail -1;"
            " python3 -c 'import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall(250, 0, 0, 0, 0);"
            ' print("keyctl", r, os.strerror(ctypes.get_errno()))\'',
            timeout_s=20,
        )
        text = attempts.stdout
        assert "PermissionError: [Errno 1] Operation not permitted" in text
        assert "cannot create /etc/passwd: Permission denied" in text
        assert "cannot create directory ‘/hostroot’: Permission denied" in text
        assert "wrote-rig-tmp" in text
        assert "chroot: cannot change root directory to '/': Operation not permitted" in text
        assert "cannot access '/proc/1/root': Permission denied" in text
        assert "unshare: unshare failed: Operation not permitted" in text  # no user namespaces (seccomp)
        assert "keyctl -1 Operation not permitted" in text
    assert not host_marker.exists()  # the rig's /tmp is its own


async def test_a_first_open_waits_for_the_build_lock_and_does_not_rebuild(tmp_path: Path) -> None:
    """Concurrent first opens: whoever holds the build lock builds; the others wait, then find the pack."""
    pack = await ready_pack()
    packs = tmp_path / "packs"
    packs.mkdir()
    lock_fd = os.open(packs / f"{PACK_NAME}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # another process is "building"
    steps: list[str] = []
    waiter = asyncio.create_task(ensure_pack(packs, steps.append))
    await asyncio.sleep(0.3)
    assert not waiter.done() and steps == ["waiting for the terminal image build lock"]
    (packs / PACK_NAME).symlink_to(pack)  # the other build finished and renamed its pack into place
    os.close(lock_fd)
    info = await asyncio.wait_for(waiter, 10)
    assert info.built_in_s is None and info.path == packs / PACK_NAME


CRASHING_SERVER = """
import asyncio, os, sys
from pathlib import Path
from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend

async def main():
    backend = EnclosureBackend(Path(sys.argv[1]), packs_root=Path(sys.argv[2]))
    rig = await backend.start(RigSpec("orphan", "ws", "terminal", 256, 1, frozenset(), None, None), print)
    await rig.exec("nohup sleep 600 >/dev/null 2>&1 &", timeout_s=10)
    print("RUN_DIR", rig.run_dir, flush=True)
    os._exit(1)  # the server dies without closing its rig

asyncio.run(main())
"""


async def test_a_crashed_servers_rigs_die_with_it_and_are_cleared(tmp_path: Path) -> None:
    await ready_pack()
    rigs_root = tmp_path / "rigs"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CRASHING_SERVER, str(rigs_root), str(PACKS), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    run_dir = Path(out.decode().split("RUN_DIR ", 1)[1].split()[0])
    assert run_dir.is_dir()
    version, _ = detect()
    assert version is not None
    orphan = rig_cgroup(version, run_dir.name)
    for _ in range(200):  # bubblewrap's --die-with-parent: the rig dies with the server
        if orphan.pids() == []:
            break
        await asyncio.sleep(0.01)
    assert orphan.pids() == []
    backend = EnclosureBackend(rigs_root, packs_root=PACKS)
    rig = await backend.start(spec("next"), lambda _t: None)
    try:
        assert not run_dir.exists()  # the leftover disk is gone, and its cgroup
        assert not orphan.exists()
    finally:
        await rig.aclose()


async def test_a_request_the_agent_cannot_carry_out_is_named_not_dropped() -> None:
    """The agent answers a request it could not carry out with what went wrong (here a command whose argument
    list is one short), where it used to close the connection and leave the host guessing; the rig runs on."""
    async with running_rig() as rig:
        assert isinstance(rig, EnclosureRig)
        whole = {"op": "exec", "argc": 2, "arg.0": "echo", "arg.1": "whole", "cwd": "/home/rig"}
        assert (await rig.channel._exec(whole, 10, None, None)).stdout == "whole\n"
        with pytest.raises(Unavailable) as failed:
            await rig.channel._exec({**whole, "argc": 3}, 10, None, None)
        assert failed.value.message == "the rig's agent could not run the command: KeyError: 'arg.2'"
        assert rig.alive() and (await rig.exec("echo still", timeout_s=10)).stdout == "still\n"


@pytest.mark.parametrize("size", [0, 1, 4_000_000])
async def test_a_command_that_exits_without_reading_its_input_still_answers(size: int) -> None:
    """Input the command never reads (it exits at once) is read to its end and dropped by the agent, which answers
    with the exit status: a connection closed with the host's frames still unread would be reset, and the host's
    stream would drop the answer it had already received (as it did under load for a command agent's prompt)."""
    async with running_rig() as rig:
        for _ in range(3):
            out = await rig.exec("exit 3", timeout_s=30, stdin=b"p" * size)
            assert (out.exit_code, out.stdout, out.timed_out) == (3, "", False)
        assert (await rig.exec("wc -c", timeout_s=30, stdin=b"p" * size)).stdout.strip() == str(size)
