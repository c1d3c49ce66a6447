"""Every QEMU Hangar starts runs in a bubblewrap sandbox that sees almost nothing of the host: a stand-in for QEMU
(a shell script put first on the server's PATH) is launched by the real launch paths (an image import through the
server's RPC, a machine, the KVM probe) and says what it sees; the server's database, the host's network and
devices, the test's own files are not there, ``/dev/kvm`` only under KVM, and the limits hold (both sides)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.errors import Unavailable
from hangar.rigs.backends import qemubox
from hangar.rigs.backends.fullvm.machine import MEMORY_MIB, start_machine
from hangar.rigs.backends.kvmprobe import probe_kvm
from tests.support.desktopimage import needs_qemu, sha256_of
from tests.support.liveprocs import running_with
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

pytestmark = [pytest.mark.asyncio, needs_qemu]

# What the stand-in prints (on one line, to stderr, which the launch paths quote in their refusals) about the
# host it finds; ``probe`` is a host path it must not see.
REPORT = """#!/bin/sh
seen() {{ if [ -e "$1" ]; then echo seen; else echo hidden; fi; }}
writable() {{ if touch "$1" 2>/dev/null; then echo yes; else echo no; fi; }}
echo "<<root=$(ls / | tr '\\n' ' ')|dev=$(ls /dev | tr '\\n' ' ')|net=$(tail -n +3 /proc/net/dev | cut -d: -f1 \
| tr -d ' ' | tr '\\n' ' ')|uid=$(id -u)|probe=$(seen {probe})|hostdir=$(seen {hostdir})|etc=$(seen /etc/passwd)\
|image=$(seen /image/base.qcow2)|imagew=$(writable /image/base.qcow2)|vmw=$(writable /vm/x)\
|procs=$(ls /proc | grep -c '^[0-9]')\
|as=$(grep 'Max address space' /proc/self/limits | tr -s ' ' | cut -d' ' -f4,5)\
|nproc=$(grep 'Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3,4)>>" >&2
exit 1
"""


def stand_in(bindir: Path, probe: Path) -> Path:
    bindir.mkdir(exist_ok=True)
    path = bindir / "qemu-system-x86_64"
    path.write_text(REPORT.format(probe=probe, hostdir=bindir))
    path.chmod(0o755)  # run by the QEMU user
    return path


def report(said: str) -> dict[str, str]:
    found = re.search(r"<<(.*?)>>", said, re.S)
    assert found is not None, said
    return dict(part.split("=", 1) for part in found.group(1).split("|") if "=" in part)


def assert_confined(seen: dict[str, str], *, kvm: bool) -> None:
    assert seen["probe"] == "hidden" and seen["hostdir"] == "hidden" and seen["etc"] == "hidden", seen
    assert seen["net"].split() == ["lo"], seen  # no interface but loopback: no network
    assert seen["dev"].split() == (["kvm", "null"] if kvm else ["null"]), seen
    assert seen["uid"] == str(qemubox.NOBODY), seen
    assert int(seen["procs"]) <= 10, seen  # bubblewrap, the stand-in and its pipelines: no host process
    assert "qmp.sock" not in seen["root"] and "qga.sock" not in seen["root"], seen


def qcow2(path: Path, size: str = "1G") -> Path:
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), size], check=True)
    return path


@contextlib.asynccontextmanager
async def server() -> AsyncIterator[tuple[RunningServer, RpcClient]]:
    with tempfile.TemporaryDirectory(prefix="hq-", dir="/tmp") as short:  # unix socket paths are short
        async with running_server(Path(short)) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
            yield srv, owner


async def test_an_imported_images_qemu_sees_neither_the_data_directory_nor_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = qcow2(tmp_path / "a.qcow2")
    async with server() as (srv, owner):
        database = srv.ctx.datadir.server_db
        assert database.is_file()
        stand_in(tmp_path / "bin", database)
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
        with pytest.raises(RpcError) as refused:
            await owner.call(
                "rigs.importImage", name="d", backend="fullvm-tcg", source=str(image), sha256=sha256_of(image)
            )
        assert refused.value.code == "refused" and "QEMU did not start" in refused.value.message
        seen = report(refused.value.message)
        assert_confined(seen, kvm=False)
        assert seen["image"] == "seen" and seen["imagew"] == "no" and seen["vmw"] == "yes"
        assert str(srv.ctx.datadir.root) not in refused.value.message  # nothing there names a host path
        assert not list((srv.ctx.datadir.root / "rigs" / "run").iterdir())  # its run directory is gone


async def test_a_machine_sees_its_image_read_only_and_kvm_only_under_kvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("host")
    stand_in(tmp_path / "bin", secret)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    image = qcow2(tmp_path / "a.qcow2")
    for backend, kvm in (("fullvm-tcg", False), ("fullvm-kvm", True)):
        with pytest.raises(Unavailable) as failed:
            # /dev/null stands for the KVM device: whatever the host's KVM does, the sandbox shows it as /dev/kvm
            await start_machine(image, tmp_path / "run", backend, agent_deadline_s=10, kvm_device="/dev/null")
        seen = report(failed.value.message)
        assert_confined(seen, kvm=kvm)
        assert seen["image"] == "seen" and seen["imagew"] == "no" and seen["vmw"] == "yes"
        address_space = qemubox.address_space(MEMORY_MIB, "kvm" if kvm else "tcg")
        assert seen["as"] == f"{address_space} {address_space}", seen
        assert seen["nproc"] == f"{qemubox.MAX_PROCESSES} {qemubox.MAX_PROCESSES}", seen
        assert not (tmp_path / "run").exists()


async def test_the_kvm_probes_qemu_is_confined_and_sees_kvm_only_when_probing_it(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("host")
    qemu = stand_in(tmp_path / "bin", secret)
    for accel, kvm in (("kvm", True), ("tcg", False)):
        verdict = await probe_kvm(qemu=str(qemu), device="/dev/null", accel=accel)
        assert not verdict.usable and verdict.reason is not None
        assert_confined(report(verdict.reason), kvm=kvm)


async def test_qemu_img_reads_an_image_header_confined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # qemu-img parses the image maker's bytes: a stand-in for it says what it sees, quoted in the refusal.
    image = qcow2(tmp_path / "a.qcow2")
    async with server() as (srv, owner):
        stand_in(tmp_path / "bin", srv.ctx.datadir.server_db).rename(tmp_path / "bin" / "qemu-img")
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
        with pytest.raises(RpcError) as refused:
            await owner.call(
                "rigs.importImage", name="d", backend="fullvm-tcg", source=str(image), sha256=sha256_of(image)
            )
        assert "header cannot be read" in refused.value.message
        seen = report(refused.value.message)
        assert_confined(seen, kvm=False)
        assert seen["image"] == "seen" and seen["imagew"] == "no"  # the image alone, read-only
        assert seen["vmw"] == "no"


PYTHON = shutil.which("python3", path="/usr/bin")
needs_python = pytest.mark.skipif(PYTHON is None, reason="no /usr/bin/python3 to run inside the sandbox")


async def run_boxed(code: str, *, address_space: int) -> tuple[int, str]:
    assert PYTHON is not None
    box = qemubox.sandboxed([PYTHON, "-I", "-S", "-c", code], [], address_space=address_space)
    proc = await qemubox.start(box, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


@needs_python
async def test_the_address_space_limit_holds_on_both_sides() -> None:
    limit = 512 << 20
    grab = "import mmap, sys; m = mmap.mmap(-1, int(sys.argv[1]) if len(sys.argv) > 1 else {}); print('mapped')"
    code, said = await run_boxed(grab.format(limit // 2), address_space=limit)
    assert code == 0 and "mapped" in said, said
    code, said = await run_boxed(grab.format(limit + (1 << 20)), address_space=limit)
    assert code != 0 and "mapped" not in said and "Cannot allocate memory" in said, said


@needs_python
async def test_the_process_limit_holds_on_both_sides() -> None:
    # The sandbox's processes count against it (bubblewrap's own inside, python): room is left for them.
    spawn = (
        "import os, signal\n"
        "kids = []\n"
        "try:\n"
        "    for _ in range({}):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            signal.pause()\n"
        "        kids.append(pid)\n"
        "    print('spawned', len(kids))\n"
        "except OSError as exc:\n"
        "    print('refused after', len(kids), exc.strerror)\n"
        "for pid in kids:\n"
        "    os.kill(pid, signal.SIGKILL)\n"
    )
    code, said = await run_boxed(spawn.format(qemubox.MAX_PROCESSES - 8), address_space=1 << 30)
    assert code == 0 and f"spawned {qemubox.MAX_PROCESSES - 8}" in said, said
    code, said = await run_boxed(spawn.format(qemubox.MAX_PROCESSES), address_space=1 << 30)
    assert code == 0 and "refused after" in said and "Resource temporarily unavailable" in said, said


@needs_python
async def test_the_sandbox_dies_with_the_server() -> None:
    # A server that dies without closing its VMs (killed) takes them along: here a stand-in server process.
    assert PYTHON is not None
    marker = f"hangar-sandbox-{secrets.token_hex(6)}"
    box = qemubox.sandboxed([PYTHON, "-I", "-S", "-c", f"import time; time.sleep(3600)  # {marker}"], [],
                            address_space=1 << 30)  # fmt: skip
    launcher = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen({box.argv!r}, stdout=subprocess.DEVNULL, start_new_session=True)\n"
        "print('started', flush=True)\n"
        "time.sleep(3600)\n"
    )
    parent = await asyncio.create_subprocess_exec(sys.executable, "-c", launcher, stdout=asyncio.subprocess.PIPE)
    box.close()
    assert parent.stdout is not None
    assert await parent.stdout.readline() == b"started\n"
    # The sandboxed program comes up (prlimit, bubblewrap twice, then python): the parent is killed only once
    # python runs, since a chain killed before bubblewrap started has nothing yet that dies with its parent.
    # Both waits are bounds against hangs only (a loaded machine starts the chain slowly).
    inner = f"{PYTHON}\0-I\0-S\0".encode()
    async with asyncio.timeout(60):
        while not any(line.startswith(inner) for line in running_with(marker)):
            await asyncio.sleep(0.02)
    parent.kill()
    await parent.wait()
    for _ in range(3000):
        if not running_with(marker):
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError(f"the sandbox outlived its parent: {running_with(marker)}")


@pytest.mark.skipif(os.geteuid() != 0, reason="the QEMU user and its device group exist for a root server only")
async def test_a_root_servers_qemu_opens_kvm_only_through_a_group_other_than_roots(tmp_path: Path) -> None:
    # A KVM device node of our own (the null device's numbers), with the modes and groups hosts give /dev/kvm.
    qemu = tmp_path / "bin" / "qemu-system-x86_64"
    qemu.parent.mkdir()
    qemu.write_text("#!/bin/sh\n[ -r /dev/kvm ] && [ -w /dev/kvm ] && exit 99\necho '<<no access>>' >&2; exit 1\n")
    qemu.chmod(0o755)
    device = tmp_path / "kvm"
    os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    for mode, group, usable in ((0o600, 0, False), (0o660, 0, False), (0o660, 4321, True), (0o666, 0, True)):
        os.chown(device, 0, group)
        os.chmod(device, mode)
        verdict = await probe_kvm(qemu=str(qemu), device=str(device))
        assert verdict.usable is usable, (oct(mode), group, verdict)
        if not usable:
            assert verdict.reason is not None and "a group other than root's" in verdict.reason
        assert qemubox.device_group(str(device)) == (group if (mode, group) == (0o660, 4321) else None)
