"""The KVM probe boots a real tiny guest under QEMU with a deadline: a guest that runs exits QEMU with its byte, a
guest that hangs is killed at the deadline and KVM is marked unusable with the reason, and whatever is missing
(the device, QEMU) is said instead of waited on. ``rig.open`` for ``fullvm-kvm`` answers with the verdict."""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.backends import kvmprobe
from hangar.rigs.backends.kvmprobe import KvmProbe, KvmVerdict, probe_kvm
from tests.integration.rigs_env import rigs_server
from tests.support.liveprocs import running_with
from tests.support.rpc import RpcError

pytestmark = pytest.mark.asyncio

needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="QEMU is not installed")


def fake_qemu(tmp_path: Path, body: str) -> str:
    """A stand-in for QEMU that does ``body`` (a guest that hangs, or one that exits). It runs in the sandbox,
    where nothing of the test's is visible: it can only be found by what its processes are called."""
    path = tmp_path / "qemu-system-x86_64"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)  # run by the QEMU user
    return str(path)


@needs_qemu
async def test_the_tiny_guest_really_boots_and_exits_under_tcg() -> None:
    verdict = await probe_kvm(accel="tcg", deadline_s=60)
    assert verdict.usable and verdict.reason is None, verdict


async def test_a_guest_that_hangs_is_killed_at_the_deadline_and_kvm_is_unusable(tmp_path: Path) -> None:
    # A KVM guest that never runs an instruction looks like this from outside: QEMU never exits.
    seconds = f"3600.{secrets.randbelow(10**9)}"  # a sleep no other process runs
    qemu = fake_qemu(tmp_path, f"exec sleep {seconds}")
    verdict = await probe_kvm(qemu=qemu, deadline_s=1.0, device="/dev/null")
    assert not verdict.usable
    assert verdict.reason is not None and "within 1 s" in verdict.reason and "unusable" in verdict.reason
    assert not running_with(seconds)  # the hung QEMU was killed, not left behind


async def test_a_guest_that_exits_with_its_byte_makes_kvm_usable(tmp_path: Path) -> None:
    assert (await probe_kvm(qemu=fake_qemu(tmp_path, "exit 99"), device="/dev/null")).usable
    failed = await probe_kvm(qemu=fake_qemu(tmp_path, "echo 'no such machine' >&2; exit 1"), device="/dev/null")
    assert not failed.usable and failed.reason is not None and "no such machine" in failed.reason


async def test_what_is_missing_is_said_without_booting_anything(tmp_path: Path) -> None:
    verdict = await probe_kvm(device=str(tmp_path / "kvm"))
    assert not verdict.usable and verdict.reason is not None and "does not exist" in verdict.reason
    verdict = await probe_kvm(qemu=str(tmp_path / "no-qemu"), device="/dev/null")
    assert not verdict.usable and verdict.reason is not None and "not installed" in verdict.reason


async def test_the_verdict_is_found_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []  # the probe's guest cannot write where the test reads: its launches are counted here

    async def counted(**kwargs: Any) -> KvmVerdict:
        runs.append("run")
        return await probe_kvm(**kwargs)

    monkeypatch.setattr(kvmprobe, "probe_kvm", counted)
    probe = KvmProbe(qemu=fake_qemu(tmp_path, "exec sleep 3600"), deadline_s=0.5, device="/dev/null")
    first, again = await asyncio.gather(probe.verdict(), probe.verdict())
    assert first is again is await probe.verdict() and not first.usable
    assert runs == ["run"]  # one guest, however many asked


@needs_qemu
@pytest.mark.packs("terminal")
async def test_rig_open_for_fullvm_kvm_answers_with_the_probe_verdict(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        verdict = await env.manager.kvm.verdict()
        with pytest.raises(RpcError) as caught:
            await env.call("rig.open", space_id=env.space, surface="computer", backend="fullvm-kvm")
        assert caught.value.code == "unavailable"
        if not verdict.usable:  # this machine's KVM hangs or is absent: the answer says why
            assert verdict.reason is not None and verdict.reason in caught.value.message
        else:
            assert "no desktop image is imported for fullvm-kvm" in caught.value.message
        assert await env.call("rig_list") == []  # nothing was opened
