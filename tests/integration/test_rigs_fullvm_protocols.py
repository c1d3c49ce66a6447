"""The QMP and guest-agent clients against the real QEMU: the monitor of a QEMU with no guest at all (commands,
refusals, events, a monitor that goes away), a guest agent nobody answers (refused at its deadline, not waited on),
and the agent of the real desktop image booted under TCG (ping, exec with input, exit codes, a command killed at
its deadline)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.errors import Unavailable
from hangar.rigs.backends.fullvm.machine import GUEST_AGENT_PORT, Machine, start_machine
from hangar.rigs.backends.fullvm.qga import GuestAgentClient
from hangar.rigs.backends.fullvm.qmp import QmpClient, QmpError
from tests.support.desktopimage import TCG_TEST_TIMEOUT_S, desktop_image, needs_qemu, tcg_turn

pytestmark = [pytest.mark.asyncio, needs_qemu]


@contextlib.asynccontextmanager
async def bare_qemu(tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """A QEMU with sockets for both protocols and no guest: the monitor answers, the agent's port stays silent."""
    proc = await asyncio.create_subprocess_exec(
        "qemu-system-x86_64", "-accel", "tcg", "-machine", "pc", "-m", "32", "-nodefaults", "-display", "none",
        "-S", "-qmp", f"unix:{tmp_path / 'qmp.sock'},server=on,wait=off",
        "-chardev", f"socket,id=qga0,path={tmp_path / 'qga.sock'},server=on,wait=off",
        "-device", "virtio-serial-pci", "-device", f"virtserialport,chardev=qga0,name={GUEST_AGENT_PORT}",
        start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(500):
            if (tmp_path / "qmp.sock").exists() and (tmp_path / "qga.sock").exists():
                break
            await asyncio.sleep(0.02)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def test_qmp_negotiates_runs_commands_and_names_a_refusal(tmp_path: Path) -> None:
    async with bare_qemu(tmp_path), await QmpClient.connect(tmp_path / "qmp.sock") as qmp:
        assert "qemu" in qmp.greeting["QMP"]["version"]
        assert (await qmp.execute("query-status"))["status"] == "prelaunch"
        with pytest.raises(QmpError) as refused:
            await qmp.execute("no-such-command")
        assert refused.value.error_class == "CommandNotFound" and "no-such-command" in refused.value.message
        # Overlapping commands are matched to their own answers.
        statuses, name = await asyncio.gather(qmp.execute("query-status"), qmp.execute("query-name"))
        assert statuses["status"] == "prelaunch" and name == {}


async def test_qmp_delivers_events(tmp_path: Path) -> None:
    async with bare_qemu(tmp_path), await QmpClient.connect(tmp_path / "qmp.sock") as qmp:
        await qmp.execute("cont")
        await qmp.execute("stop")
        event = await qmp.next_event("STOP", timeout_s=30)
        assert event["event"] == "STOP"
        assert (await qmp.execute("query-status"))["status"] == "paused"


async def test_qmp_commands_fail_when_qemu_goes_away(tmp_path: Path) -> None:
    async with bare_qemu(tmp_path) as proc, await QmpClient.connect(tmp_path / "qmp.sock") as qmp:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        with pytest.raises(Unavailable, match="monitor"):
            for _ in range(50):  # the reader sees the end of the stream within moments
                await qmp.execute("query-status", timeout_s=5)
                await asyncio.sleep(0.05)


async def test_a_guest_agent_that_never_answers_is_refused_at_its_deadline(tmp_path: Path) -> None:
    async with bare_qemu(tmp_path), await GuestAgentClient.connect(tmp_path / "qga.sock") as agent:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"did not answer guest-ping within 3 s"):
            await agent.wait_ready(3)
        assert time.monotonic() - started < 60  # refused, never waited on forever (a bound, not a measure)


async def test_a_qmp_socket_that_is_not_there_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match="cannot be reached"):
        await QmpClient.connect(tmp_path / "nothing.sock", timeout_s=2)


@pytest.fixture
async def machine(tmp_path: Path) -> AsyncIterator[Machine]:
    image = await desktop_image()
    async with tcg_turn():
        vm = await start_machine(image, tmp_path / "vm", "fullvm-tcg", agent_deadline_s=900)  # against hangs only
        try:
            yield vm
        finally:
            await vm.aclose()


@pytest.mark.slow
@pytest.mark.timeout(TCG_TEST_TIMEOUT_S)
async def test_the_desktop_image_boots_under_tcg_and_its_agent_runs_commands(machine: Machine) -> None:
    print(f"boot to guest agent under TCG: {machine.boot_s:.1f} s")
    await machine.agent.ping()
    echoed = await machine.agent.run(["/bin/cat"], stdin=b"hello from the host\n")
    assert echoed.exit_code == 0 and echoed.stdout == b"hello from the host\n"
    failed = await machine.agent.run(["/bin/sh", "-c", "echo oops >&2; exit 3"])
    assert failed.exit_code == 3 and failed.stderr == b"oops\n"
    with pytest.raises(Unavailable, match="within 1 s and was killed"):
        await machine.agent.run(["/bin/sleep", "600"], timeout_s=1)
    assert (await machine.agent.run(["/usr/bin/pgrep", "-x", "sleep"])).exit_code == 1  # killed in the guest
    assert (await machine.qmp.execute("query-status"))["status"] == "running"
    overlay = machine.overlay
    await machine.aclose()
    assert not overlay.exists()
