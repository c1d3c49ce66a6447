"""A full VM's guest writes its serial console without limit: a real QEMU booting a guest that floods its serial
port (a boot sector writing one byte to it forever) fills no file and holds at most ``CONSOLE_BYTES`` of it, read
through QMP; the machine keeps the newest ``CONSOLE_BYTES`` of what it read, and its tail is the newest bytes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.backends.fullvm import machine
from hangar.rigs.backends.fullvm.machine import CONSOLE_BYTES, Machine, console_argv, qemu_argv, read_ring
from hangar.rigs.backends.fullvm.qmp import QmpClient
from tests.support.desktopimage import needs_qemu

pytestmark = [pytest.mark.asyncio, needs_qemu]

# Real mode at 0x7c00: mov dx, 0x3f8; mov al, 'A'; then out dx, al forever (the first serial port's data register).
_FLOOD = bytes((0xBA, 0xF8, 0x03, 0xB0, 0x41, 0xEE, 0xEB, 0xFD))
FLOOD_SECTOR = _FLOOD + b"\0" * (510 - len(_FLOOD)) + b"\x55\xaa"


@contextlib.asynccontextmanager
async def flooding_guest(run_dir: Path) -> AsyncIterator[QmpClient]:
    disk = run_dir / "boot.img"
    disk.write_bytes(FLOOD_SECTOR)
    proc = await asyncio.create_subprocess_exec(
        "qemu-system-x86_64", "-accel", "tcg", "-machine", "pc", "-m", "16", "-nodefaults", "-display", "none",
        "-qmp", f"unix:{run_dir / 'qmp.sock'},server=on,wait=off", "-drive", f"file={disk},format=raw,if=ide",
        *console_argv(),
        start_new_session=True,
    )  # fmt: skip
    try:
        async with await QmpClient.connect(run_dir / "qmp.sock") as qmp:
            yield qmp
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def test_a_guest_flooding_its_console_fills_no_file_and_a_bounded_ring(tmp_path: Path) -> None:
    assert not any(a.startswith("file:") for a in qemu_argv("qemu", 3, 4, "tcg", memory_mib=64, cpus=1))
    async with flooding_guest(tmp_path) as qmp:
        read = 0
        biggest = 0
        while read < 4 * CONSOLE_BYTES:  # the guest goes on writing; each read holds at most the ring
            got = await read_ring(qmp)
            assert set(got) <= {ord("A")}
            read += len(got)
            biggest = max(biggest, len(got))
            await asyncio.sleep(0.05)
        assert 0 < biggest <= CONSOLE_BYTES
        assert sorted(p.name for p in tmp_path.iterdir()) == ["boot.img", "qmp.sock"]  # nothing else written


class _Ring:
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def execute(self, command: str, arguments: dict[str, Any] | None = None, **_: Any) -> str:
        assert command == "ringbuf-read" and arguments == {
            "device": machine.CONSOLE,
            "size": CONSOLE_BYTES,
            "format": "base64",
        }
        return base64.b64encode(self.pieces.pop(0)).decode()


async def test_the_machine_keeps_the_newest_console_bytes_it_read(tmp_path: Path) -> None:
    ring = _Ring([b"a" * CONSOLE_BYTES, b"b" * 10 + b"tail"])
    vm = Machine(tmp_path, None, ring, None)  # type: ignore[arg-type]
    assert vm.console_tail() == ""
    await vm.read_console()
    await vm.read_console()
    assert len(vm._console) == CONSOLE_BYTES and vm._console.endswith(b"b" * 10 + b"tail")
    assert vm.console_tail(6) == "bbtail"
