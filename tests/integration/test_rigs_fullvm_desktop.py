"""A full-VM computer rig on the desktop image the repository's script builds, imported like any image and booted
under fullvm-tcg (slow, so one rig does everything): a screenshot through the guest agent states the display size,
a click and typed text sent through QMP are read back in the guest by a window that records its input events
(``vmrecorder``), exec runs as the rig user, the clipboard goes there and back, bad input is refused naming the
field, and closing removes the overlay. ``fullvm-kvm`` is refused with the KVM probe's reason where KVM is unusable."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs, Unavailable
from hangar.rigs.backends.fullvm import imports
from hangar.rigs.backends.fullvm.rig import VmRig, check_accelerator, open_vm_rig
from hangar.rigs.backends.kvmprobe import KvmVerdict
from hangar.rigs.images.desktopdisk import BOOT_DISPLAY
from tests.support.desktopimage import TCG_TEST_TIMEOUT_S, desktop_image, needs_qemu, sha256_of, tcg_turn
from tests.support.vmrecorder import PROGRAM as RECORDER
from tests.support.vmrecorder import STOP_OPENBOX

pytestmark = [pytest.mark.asyncio, needs_qemu]

BOOT_BOUND_S = 900  # a bound against hangs only: a TCG boot on a loaded machine takes minutes
HUNG = KvmVerdict(False, "a tiny guest did not finish booting under KVM within 10 s", 10.0)


async def test_fullvm_kvm_is_refused_with_the_probes_reason_and_nothing_boots(tmp_path: Path) -> None:
    with pytest.raises(Unavailable) as refused:
        await open_vm_rig(tmp_path, "img-none", "rig1", "fullvm-kvm", HUNG)
    assert "fullvm-kvm cannot run on this host" in refused.value.message and "within 10 s" in refused.value.message
    assert "fullvm-tcg" in refused.value.message
    check_accelerator("fullvm-kvm", KvmVerdict(True, None, 0.1))  # usable: no refusal
    check_accelerator("fullvm-tcg", HUNG)  # TCG asks nothing of KVM
    assert not (tmp_path / "run").exists()


async def test_an_image_id_that_was_never_imported_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no imported image"):
        await open_vm_rig(tmp_path, "../../etc/passwd", "rig1", "fullvm-tcg", None)


@pytest.fixture
async def rig() -> AsyncIterator[VmRig]:
    image = await desktop_image()
    async with tcg_turn():
        with tempfile.TemporaryDirectory(prefix="hv-", dir="/tmp") as short:  # unix socket paths are short
            root = Path(short)
            done = await imports.import_image(root, source=str(image), sha256=sha256_of(image), name="desktop",
                                              backend="fullvm-tcg", now="2026-01-01T00:00:00Z",
                                              boot_deadline_s=BOOT_BOUND_S)  # fmt: skip
            vm = await open_vm_rig(root, done.image_id, "rig1", "fullvm-tcg", None)
            print(f"boot to guest agent under TCG: import check {done.boot_seconds} s, rig {vm.machine.boot_s:.1f} s")
            try:
                yield vm
            finally:
                await vm.aclose()


@pytest.mark.slow
@pytest.mark.timeout(TCG_TEST_TIMEOUT_S)
async def test_a_full_vm_desktop_under_tcg(rig: VmRig) -> None:
    desktop = rig.desktop
    still = await desktop.screenshot(1280, 800)
    assert (still.display_width, still.display_height) == BOOT_DISPLAY
    assert still.png.startswith(b"\x89PNG") and (still.width, still.height) == BOOT_DISPLAY

    who = await rig.exec("id -un; echo $HOME", timeout_s=60)
    assert (who.exit_code, who.stdout) == (0, "rig\n/home/rig\n")

    await desktop.write_clipboard("from the host ✓".encode())
    assert await desktop.read_selection("clipboard") == "from the host ✓"

    with pytest.raises(InvalidArgs, match=r"action.coordinate: \(1280, 0\) lies off the 1280x800 display"):
        await desktop.check_point(1280, 0, "action.coordinate")
    await desktop.check_point(1279, 799, "action.coordinate")  # the last pixel is on it
    with pytest.raises(InvalidArgs, match="no key named NoSuchKey"):
        await desktop.key("ctrl+NoSuchKey", None, "action.text")
    with pytest.raises(InvalidArgs, match="cannot type"):
        await desktop.type_text("ü")

    # Known and open: the image's Openbox, slow under TCG, holds what it grabbed and the windows it is to map
    # (keys sent through QMP reach a window once it is gone; README, "Full VMs"). The test takes it out to read
    # back what QMP delivers.
    gone = await rig.exec(STOP_OPENBOX, timeout_s=90)
    assert gone.exit_code == 0, gone.stdout
    # A window that records its input events (``vmrecorder``), into a file the test reads back.
    env = ["DISPLAY=:0", "HOME=/root", "PATH=/usr/bin:/bin"]
    await rig.machine.agent.spawn(["/usr/bin/python3", "-c", RECORDER, "/tmp/rec.log"], env=env)
    log = ""
    for _ in range(180):  # a bound against hangs only (X under TCG on a loaded machine maps a window slowly)
        log = (await rig.exec("cat /tmp/rec.log", timeout_s=60)).stdout
        if "mapped" in log:
            break
        await asyncio.sleep(1)
    if "mapped" not in log:  # what the guest was doing, for the failure's message
        seen = await rig.exec("ls -l /tmp/rec.log; ps -eo pid,stat,comm; tail -20 /var/log/Xorg.0.log", timeout_s=60)
        pytest.fail(f"the recorder's window never mapped:\n{seen.stdout}{seen.stderr}")
    await desktop.pointer(["mousemove 400 300", "click 1"])
    assert await desktop.cursor() == (400, 300)  # the tablet's absolute position reached X exactly
    await desktop.type_text("Hello, VM!")
    await desktop.key("Return", None, "action.text")
    for _ in range(30):  # a bound against hangs only
        log = (await rig.exec("cat /tmp/rec.log", timeout_s=60)).stdout
        if "key 0d" in log:
            break
    lines = log.splitlines()
    clicks = [line for line in lines if line.startswith("button")]
    typed = b"".join(bytes.fromhex(line.split()[1]) for line in lines if line.startswith("key ") and len(line) > 4)

    overlay, run_dir = rig.overlay, rig.machine.run_dir
    assert overlay.is_file() and os.path.ismount(overlay.parent)  # on a disk of the rig's size (``rundir``)
    await rig.aclose()
    assert not overlay.exists() and not run_dir.exists() and not os.path.ismount(overlay.parent)
    assert typed == b"Hello, VM!\r", log  # keys through QMP, read back in the guest
    assert clicks == ["button 1 400,300"], log  # a button through QMP, at the point the tablet set
