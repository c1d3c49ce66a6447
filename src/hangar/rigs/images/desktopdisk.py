"""The full-VM desktop: a bootable qcow2 assembled from a Debian root filesystem without mounting anything.

The root filesystem is a pack like the others (``builder``), the desktop pack's packages plus what a machine of its
own needs: a kernel and its initramfs, systemd as init, the guest agent, and an X server on the virtual display
card with the evdev input the hypervisor's keyboard and tablet drive. Its hooks write what boots it (fstab, a small
initramfs with only the modules a virtio disk and ext4 need, units masked that only cost boot time under TCG).

The disk is put together from files, so no loop device or root-only mount is needed:

* a DOS partition table with SYSLINUX's boot code (``mbr.bin``) written by this module;
* partition 1, FAT, made with ``mformat`` on the image at its offset, holding SYSLINUX (``syslinux --offset``,
  which writes through mtools), its configuration, the kernel and the initramfs: BIOS and SYSLINUX boot in well
  under a second under TCG, where UEFI firmware takes several;
* partition 2, ext4, made from the pack's directory with ``mkfs.ext4 -d`` and copied in at its offset;
* then ``qemu-img convert`` to qcow2.

The built image is cached under ``<images_root>/<name>-<key>.qcow2``, ``key`` a digest of everything it is built
from (the pack's build stamp, this layout's revision, the kernel command line), under a file lock so concurrent
builders make one image; a finished image is renamed into place whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

from hangar.errors import Internal, Unavailable
from hangar.rigs.images.builder import PackRecipe, ensure_pack, read_marker
from hangar.rigs.images.recipes import DESKTOP, IMAGE

FULLVM_REVISION = "fullvm-v2"
LAYOUT_REVISION = "disk-v1"  # the partition layout, boot loader and its configuration below
GUEST_AGENT_PORT = "org.qemu.guest_agent.0"
ROOT_DEVICE = "/dev/vda2"
BOOT_DISPLAY = (1280, 800)  # the spec's boot display for a computer
# quiet and a serial console: printing the boot on an emulated VGA text screen is slow under TCG.
KERNEL_ARGS = (
    f"root={ROOT_DEVICE} rw console=ttyS0,115200 quiet loglevel=3 systemd.show_status=false "
    f"video={BOOT_DISPLAY[0]}x{BOOT_DISPLAY[1]} mitigations=off tsc=reliable no_timer_check"
)

# Host tools the assembly runs, with their Debian packages.
DISK_TOOLS: dict[str, str] = {
    "mkfs.ext4": "e2fsprogs",
    "mformat": "mtools",
    "mcopy": "mtools",
    "syslinux": "syslinux",
    "qemu-img": "qemu-utils",
}
SYSLINUX_MBR = Path("/usr/lib/syslinux/mbr/mbr.bin")

SECTOR = 512
BOOT_START = 1 << 20  # partition 1 at 1 MiB, the usual alignment
BOOT_SIZE = 96 << 20  # kernel (~8 MB) and initramfs, with room for one more of each
ROOT_SPARE = 1 << 30  # free space on the root filesystem for what a session writes (in its overlay)

_MODULES = ("virtio_pci", "virtio_blk", "ext4", "crc32c_generic")
# Units that only cost boot time in a desktop VM without network that lives for one session (measured with
# systemd-analyze blame under TCG: the gettys, module loads for devices it has not, kernel filesystems nothing
# mounts, a remount the kernel command line already did).
_MASKED = (
    "apt-daily.timer", "apt-daily-upgrade.timer", "man-db.timer", "e2scrub_all.timer", "e2scrub_reap.service",
    "fstrim.timer", "getty.target", "getty-static.service", "getty@tty1.service", "serial-getty@ttyS0.service",
    "systemd-update-utmp.service", "systemd-update-utmp-runlevel.service", "keyboard-setup.service",
    "console-setup.service", "systemd-journal-flush.service", "cron.service", "systemd-pstore.service",
    "systemd-binfmt.service", "ldconfig.service", "modprobe@fuse.service", "modprobe@dm_mod.service",
    "modprobe@loop.service", "modprobe@configfs.service", "modprobe@efi_pstore.service", "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount", "sys-kernel-config.mount", "sys-fs-fuse-connections.mount", "dev-hugepages.mount",
    "kmod-static-nodes.service", "systemd-random-seed.service", "systemd-remount-fs.service",
    "systemd-sysctl.service", "systemd-firstboot.service", "systemd-machine-id-commit.service",
)  # fmt: skip
# The desktop: Xorg on the virtual display card as root (no login manager), the window manager as the rig user.
_DESKTOP_UNIT = """[Unit]
Description=Hangar desktop (X server and window manager)
After=systemd-udev-settle.service systemd-user-sessions.service

[Service]
ExecStart=/usr/local/sbin/hangar-desktop
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
_DESKTOP_SCRIPT = """#!/bin/sh
# Starts the X server on the display card and, once it answers, the window manager as the rig user.
/usr/lib/xorg/Xorg :0 -nolisten tcp -noreset -nocursor -s 0 -dpms vt7 -keeptty -logfile /var/log/Xorg.0.log &
xpid=$!
for _ in $(seq 200); do [ -S /tmp/.X11-unix/X0 ] && break; sleep 0.05; done
runuser -u rig -- env DISPLAY=:0 HOME=/home/rig openbox &
wait $xpid
"""

FULLVM_PACKAGES: tuple[str, ...] = (
    *DESKTOP.packages, "linux-image-amd64", "initramfs-tools", "systemd-sysv", "udev",
    "qemu-guest-agent", "xserver-xorg-core", "xserver-xorg-input-evdev", "xserver-xorg-input-libinput",
)  # fmt: skip


def _hooks() -> tuple[str, ...]:
    modules = "\\n".join(_MODULES)
    return (
        # No fstab entry for /: the kernel mounts it read-write, and an entry would make systemd wait for udev to
        # announce the disk (about a third of the boot under TCG) before it starts anything.
        'printf "# / is mounted by the kernel (root= on its command line)\\n" > "$1/etc/fstab"',
        'echo hangar-desktop > "$1/etc/hostname"',
        "printf 'MODULES=list\\nCOMPRESS=zstd\\n' > \"$1/etc/initramfs-tools/conf.d/hangar.conf\"",
        f"printf '{modules}\\n' > \"$1/etc/initramfs-tools/modules\"",
        'chroot "$1" update-initramfs -u -k all',
        f'chroot "$1" systemctl mask {" ".join(_MASKED)}',
        'chroot "$1" systemctl set-default multi-user.target',
        f"printf '%s' '{_DESKTOP_UNIT}' > \"$1/etc/systemd/system/hangar-desktop.service\"",
        f"printf '%s' '{_DESKTOP_SCRIPT}' > \"$1/usr/local/sbin/hangar-desktop\"",
        'chmod 0755 "$1/usr/local/sbin/hangar-desktop"',
        'chroot "$1" systemctl enable hangar-desktop.service',
        # Empty: systemd makes a machine id at each boot, so no two VMs from the image share one.
        'rm -f "$1/etc/machine-id"; touch "$1/etc/machine-id"',
    )


FULLVM_DESKTOP = PackRecipe(
    name=f"fullvm-desktop-{IMAGE}-{FULLVM_REVISION}",
    revision=FULLVM_REVISION,
    surface="computer",
    label="full-VM desktop root filesystem",
    packages=FULLVM_PACKAGES,
    hooks=_hooks(),
)

ProgressFn = Callable[[str], None]


def missing_tools() -> list[str]:
    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in DISK_TOOLS.items() if shutil.which(tool) is None]
    if not SYSLINUX_MBR.is_file():
        missing.append(f"{SYSLINUX_MBR} (Debian package syslinux-common)")
    return missing


def image_key(pack_marker: dict[str, object]) -> str:
    """What the image is built from, as a short digest: a change of any of it builds a new image."""
    inputs = {"pack": pack_marker, "layout": LAYOUT_REVISION, "kernelArgs": KERNEL_ARGS, "modules": _MODULES}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


async def ensure_desktop_image(packs_root: Path, images_root: Path, progress: ProgressFn | None = None) -> Path:
    """The desktop qcow2, built first (its pack too) when missing or when what it is built from changed."""
    report = progress or (lambda _text: None)
    await ensure_pack(packs_root, report, FULLVM_DESKTOP)
    marker = read_marker(packs_root, FULLVM_DESKTOP)
    if marker is None:
        raise Internal(f"the {FULLVM_DESKTOP.label} has no build record")
    target = images_root / f"{FULLVM_DESKTOP.name}-{image_key(marker)}.qcow2"
    if target.is_file():
        return target
    os.makedirs(images_root, exist_ok=True)
    lock_fd = os.open(images_root / f"{target.name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                report("waiting for another build of the desktop image")
                await asyncio.sleep(0.5)
        if not target.is_file():
            await _assemble((packs_root / FULLVM_DESKTOP.name).resolve(), target, report)
    finally:
        os.close(lock_fd)
    return target


async def _assemble(root: Path, target: Path, report: ProgressFn) -> None:
    missing = missing_tools()
    if missing:
        raise Unavailable(f"building the desktop image needs {', '.join(missing)}")
    kernel, initrd = _boot_files(root)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as tmp_dir:
        tmp = Path(tmp_dir)
        report("desktop image: making the root filesystem (1/4)")
        rootfs = tmp / "root.ext4"
        size = _tree_bytes(root) * 5 // 4 + ROOT_SPARE
        size -= size % (1 << 20)
        await _run("mkfs.ext4", "-q", "-F", "-L", "hangar-root", "-d", str(root), str(rootfs), str(size // 1024) + "k")
        report("desktop image: making the boot partition (2/4)")
        disk = tmp / "disk.raw"
        root_start = BOOT_START + BOOT_SIZE
        with disk.open("wb") as out:
            out.truncate(root_start + size)
        _write_partition_table(disk, [(BOOT_START, BOOT_SIZE, 0x0C, True), (root_start, size, 0x83, False)])
        fat = f"{disk}@@{BOOT_START}"
        env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
        sectors = BOOT_SIZE // SECTOR
        await _run("mformat", "-i", fat, "-F", "-T", str(sectors), "-H", str(BOOT_START // SECTOR), "-v", "BOOT",
                   "::", env=env)  # fmt: skip
        await _run("syslinux", "--offset", str(BOOT_START), "--install", str(disk))
        config = tmp / "syslinux.cfg"
        config.write_text(
            f"DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nSERIAL 0 115200\nLABEL linux\n  LINUX /vmlinuz\n"
            f"  INITRD /initrd.img\n  APPEND {KERNEL_ARGS}\n"
        )
        for source, name in ((config, "syslinux.cfg"), (kernel, "vmlinuz"), (initrd, "initrd.img")):
            await _run("mcopy", "-i", fat, str(source), f"::{name}", env=env)
        report("desktop image: putting the root filesystem in place (3/4)")
        _copy_sparse(rootfs, disk, root_start)
        rootfs.unlink()
        report("desktop image: converting to qcow2 (4/4)")
        out_tmp = tmp / "disk.qcow2"
        await _run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(disk), str(out_tmp))
        os.chmod(out_tmp, 0o644)
        os.replace(out_tmp, target)
    report("desktop image ready")


def _boot_files(root: Path) -> tuple[Path, Path]:
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise Internal("the desktop root filesystem has no kernel under /boot")
    kernel = kernels[-1]
    initrd = root / "boot" / f"initrd.img-{kernel.name.removeprefix('vmlinuz-')}"
    if not initrd.is_file():
        raise Internal(f"the desktop root filesystem has no {initrd.name}")
    return kernel, initrd


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        total += 4096 * (len(dirnames) + 1)
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512 + 256
    return total


def _write_partition_table(disk: Path, parts: list[tuple[int, int, int, bool]]) -> None:
    """A DOS partition table with SYSLINUX's boot code: (start, size, type, bootable) per partition, in bytes.
    CHS fields are the LBA-only marker (0xFEFFFF); every BIOS since the 1990s reads the LBA fields."""
    sector = bytearray(SECTOR)
    code = SYSLINUX_MBR.read_bytes()[:440]
    sector[: len(code)] = code
    for index, (start, size, kind, bootable) in enumerate(parts):
        entry = struct.pack(
            "<B3sB3sII", 0x80 if bootable else 0, b"\xfe\xff\xff", kind, b"\xfe\xff\xff", start // SECTOR,
            size // SECTOR,
        )  # fmt: skip
        sector[446 + 16 * index : 446 + 16 * (index + 1)] = entry
    sector[510:512] = b"\x55\xaa"
    with disk.open("r+b") as out:
        out.write(sector)


def _copy_sparse(source: Path, disk: Path, offset: int) -> None:
    """Copy ``source`` into ``disk`` at ``offset``, skipping its holes (most of an empty filesystem)."""
    chunk = 4 << 20
    with source.open("rb") as src, disk.open("r+b") as dst:
        fd = src.fileno()
        end = os.fstat(fd).st_size
        pos = 0
        while pos < end:
            try:
                data_at = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break  # only a hole remains
            hole_at = os.lseek(fd, data_at, os.SEEK_HOLE)
            src.seek(data_at)
            dst.seek(offset + data_at)
            left = hole_at - data_at
            while left > 0:
                block = src.read(min(chunk, left))
                dst.write(block)
                left -= len(block)
            pos = hole_at


async def _run(*argv: str, env: dict[str, str] | None = None) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env, start_new_session=True
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        said = out.decode("utf-8", "replace").strip()[-400:]
        raise Internal(f"{argv[0]} failed with exit code {proc.returncode}: {said}")
