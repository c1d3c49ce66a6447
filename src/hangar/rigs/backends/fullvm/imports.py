"""Importing a desktop qcow2 for full-VM rigs (Settings, Server, Rigs; ``rigs.importImage``): the server owner
points at a file on the server's host or a URL, with the image's SHA-256, and the image is offered only once it
has passed every check.

1. The bytes are copied (or downloaded) into a staging file under ``<dataDir>/rigs/images/`` (mode 0600), hashed
   on the way, at most ``MAX_IMAGE_BYTES``. A digest that differs from the one given is refused and nothing stays;
   the refusal does not say the digest it found (it would hash any file the server can read, for whoever asks). A
   path is refused when the file it opens lies under ``/proc``, ``/sys`` or ``/dev`` or inside the data directory
   (the server's own records and secrets), wherever the path's symlinks lead.
2. ``qemu-img info --output=json`` reads the header in the sandbox every QEMU runs in (``qemubox``: the image
   read-only and nothing else of the host), with resource limits (address space, CPU seconds, a deadline): a
   crafted header cannot make it eat the host or read it. The format must be qcow2; a backing file or an
   external data file is refused (QEMU would open that path when the image boots, a path chosen by whoever made
   the image); the virtual size must lie within ``MIN_VIRTUAL_BYTES`` and ``MAX_VIRTUAL_BYTES``.
3. The image boots in the same sandbox, through an overlay, under the chosen accelerator (``fullvm-tcg`` or
   ``fullvm-kvm``, the latter only where the KVM probe found KVM usable) and its guest agent must answer
   ``guest-ping`` within the boot deadline; then the VM is stopped and its overlay removed.
4. The file is made 0644 and renamed to ``<imageId>.qcow2`` with its record ``<imageId>.json`` beside it (written
   whole, then renamed): an image is there entire with its record, or not at all. The id derives from the digest,
   so the same image imported twice is one image.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from hangar.core.disks import DEFAULT_RIG_DISK_MB
from hangar.errors import Conflict, InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.backends import qemubox
from hangar.rigs.backends.fullvm.machine import IMAGE_INSIDE, start_machine

MAX_IMAGE_BYTES = 32 << 30  # the qcow2 file itself
MIN_VIRTUAL_BYTES = 64 << 20  # the disk the guest sees
MAX_VIRTUAL_BYTES = 256 << 30
BOOT_DEADLINE_S = 300.0  # boot to guest agent; a desktop under TCG on a busy host takes a minute or more
INFO_TIMEOUT_S = 60.0
INFO_ADDRESS_SPACE = 1 << 30  # qemu-img's own advice for reading untrusted images: 1 GiB, 30 CPU seconds
INFO_CPU_S = 30
DOWNLOAD_TIMEOUT_S = 60.0  # between two reads of a download, not for the whole of it
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# Host trees no image comes from: kernel and device files (the data directory is refused too, given by the caller).
REFUSED_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))
_CHUNK = 1 << 20

ProgressFn = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class ImportedImage:
    image_id: str
    name: str
    sha256: str
    file_bytes: int
    virtual_bytes: int
    imported_at: str
    accelerator: str
    boot_seconds: float


def image_id_for(sha256: str) -> str:
    return f"img-{sha256[:24]}"


def images_dir(rigs_root: Path) -> Path:
    return rigs_root / "images"


def list_images(rigs_root: Path) -> list[ImportedImage]:
    """The imported images, newest first (an image without its record is not offered)."""
    found: list[ImportedImage] = []
    for record in images_dir(rigs_root).glob("img-*.json"):
        with contextlib.suppress(OSError, ValueError, TypeError):
            image = ImportedImage(**json.loads(record.read_text()))
            if (record.parent / f"{image.image_id}.qcow2").is_file():
                found.append(image)
    return sorted(found, key=lambda i: i.imported_at, reverse=True)


def image_path(rigs_root: Path, image_id: str) -> Path:
    """The file of an imported image, looked up by its id among the records (never a path from input)."""
    for image in list_images(rigs_root):
        if image.image_id == image_id:
            return images_dir(rigs_root) / f"{image.image_id}.qcow2"
    raise NotFound(f"no imported image {image_id!r} (import one under Settings, Server, Rigs)")


async def import_image(
    rigs_root: Path,
    *,
    source: str,
    sha256: str,
    name: str,
    backend: str,
    now: str,
    boot_deadline_s: float = BOOT_DEADLINE_S,
    progress: ProgressFn | None = None,
    data_dir: Path | None = None,
    disk_mb: int = DEFAULT_RIG_DISK_MB,
) -> ImportedImage:
    """Run every check on ``source`` (an absolute host path or an http(s) URL) and store it; see the module.
    A path inside ``data_dir`` (the server's) is refused; the boot's overlay is bounded to ``disk_mb`` MB."""

    async def report(text: str) -> None:
        if progress is not None:
            await progress(text)

    digest = sha256.strip().lower()
    if not SHA256.match(digest):
        raise InvalidArgs("sha256 must be the image's SHA-256 as 64 hexadecimal digits", field="sha256")
    if not source.startswith(("http://", "https://", "/")):
        raise InvalidArgs("source must be an absolute path on the server's host or an http(s) URL", field="source")
    image_id = image_id_for(digest)
    root = images_dir(rigs_root)
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    if await asyncio.to_thread((root / f"{image_id}.json").is_file):
        raise Conflict(f"this image is imported already, as {image_id}")
    staging = root / f".staging-{secrets.token_hex(8)}.qcow2"
    try:
        await report("copying the image")
        refused_trees = (*REFUSED_TREES, *([data_dir] if data_dir is not None else []))
        size, got = await _fetch(source, staging, refused_trees)
        if got != digest:
            raise Refused("the image's SHA-256 differs from the one given: nothing was imported")
        await report("reading the image's header")
        # Readable by the QEMU user (``qemubox``) as it will be once stored; it was private while unchecked.
        await asyncio.to_thread(os.chmod, staging, 0o644)
        virtual = await _check_header(staging)
        await report(f"booting the image under {backend} to reach its guest agent")
        run_dir = rigs_root / "run" / f"import-{secrets.token_hex(6)}"
        try:
            machine = await start_machine(staging, run_dir, backend, agent_deadline_s=boot_deadline_s, disk_mb=disk_mb)
        except Unavailable as exc:
            raise Refused(f"the image did not boot to a guest agent that answers: {exc.message}") from exc
        try:
            await machine.agent.ping()
        finally:
            await machine.aclose()
        image = ImportedImage(image_id, name, digest, size, virtual, now, backend, round(machine.boot_s, 1))
        await asyncio.to_thread(_store, root, staging, image)
        await report("image imported")
        return image
    finally:
        await asyncio.to_thread(staging.unlink, True)


def _store(root: Path, staging: Path, image: ImportedImage) -> None:
    os.chmod(staging, 0o644)
    os.replace(staging, root / f"{image.image_id}.qcow2")
    record = root / f".{image.image_id}.json-{secrets.token_hex(4)}"
    record.write_text(json.dumps(asdict(image), indent=2))
    os.chmod(record, 0o644)
    os.replace(record, root / f"{image.image_id}.json")  # the record last: an image without one is not offered


async def _fetch(source: str, staging: Path, refused_trees: tuple[Path, ...]) -> tuple[int, str]:
    """Copy ``source`` into ``staging`` (0600), hashing it; returns its size and SHA-256."""
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        digest = hashlib.sha256()
        size = 0

        def take(block: bytes) -> None:
            nonlocal size
            size += len(block)
            if size > MAX_IMAGE_BYTES:
                raise Refused(f"the image is larger than {MAX_IMAGE_BYTES >> 30} GiB")
            digest.update(block)
            out.write(block)

        if source.startswith(("http://", "https://")):
            await _download(source, take)
        else:
            await asyncio.to_thread(_copy_file, source, take, refused_trees)
    return size, digest.hexdigest()


def _copy_file(source: str, take: Callable[[bytes], None], refused_trees: tuple[Path, ...]) -> None:
    try:
        fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidArgs(f"source cannot be read: {exc.strerror}", field="source") from exc
    except ValueError as exc:  # a NUL in the path
        raise InvalidArgs("source is not a path", field="source") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a device or a pipe: no image, or one never ending
        os.close(fd)
        raise InvalidArgs("source must be a regular file", field="source")
    # The file actually opened, after every symlink (no race with a path changed meanwhile).
    opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    if any(opened.is_relative_to(tree.resolve()) for tree in refused_trees):
        os.close(fd)
        raise InvalidArgs(
            "source must not lie under /proc, /sys or /dev or inside the server's data directory", field="source"
        )
    with os.fdopen(fd, "rb") as src:
        while block := src.read(_CHUNK):
            take(block)


async def _download(url: str, take: Callable[[bytes], None]) -> None:
    try:
        async with (
            httpx.AsyncClient(follow_redirects=True, max_redirects=5, timeout=DOWNLOAD_TIMEOUT_S) as client,
            client.stream("GET", url) as reply,
        ):
            if reply.status_code != 200:
                raise Refused(f"the image's URL answered {reply.status_code}: nothing was imported")
            async for block in reply.aiter_bytes(_CHUNK):
                take(block)
    except httpx.HTTPError as exc:
        raise Unavailable(f"the image could not be downloaded: {exc}") from exc


async def _check_header(path: Path) -> int:
    """qemu-img's reading of the header, confined; returns the virtual size. Refuses all the module names."""
    qemu_img = shutil.which("qemu-img")
    if qemu_img is None or shutil.which("bwrap") is None:
        raise Unavailable("importing an image needs qemu-img and bwrap (Debian packages qemu-utils, bubblewrap)")
    image_fd = qemubox.open_file(path)
    try:
        box = qemubox.sandboxed(
            [qemu_img, "info", "--output=json", IMAGE_INSIDE], [qemubox.Bind(image_fd, IMAGE_INSIDE)],
            address_space=INFO_ADDRESS_SPACE, cpu_s=INFO_CPU_S,
        )  # fmt: skip
        proc = await qemubox.start(box, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    finally:
        os.close(image_fd)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), INFO_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
        raise Refused(f"qemu-img could not read the image's header within {INFO_TIMEOUT_S:g} s") from None
    if proc.returncode != 0:
        said = err.decode("utf-8", "replace").strip().replace(IMAGE_INSIDE, "<image>")[-300:]
        raise Refused(f"the image's header cannot be read: {said}")
    try:
        info: dict[str, Any] = json.loads(out)
    except ValueError as exc:
        raise Refused("qemu-img's description of the image is not JSON") from exc
    return check_info(info)


def check_info(info: dict[str, Any]) -> int:
    """The checks on ``qemu-img info``'s JSON; the virtual size when they pass."""
    found = info.get("format")
    if found != "qcow2":
        raise Refused(f"the image is not a qcow2 (qemu-img reads it as {found!r})")
    if info.get("backing-filename") or info.get("full-backing-filename") or info.get("backing-filename-format"):
        raise Refused("the image names a backing file, which would be read from the server's host: refused")
    data = (info.get("format-specific") or {}).get("data") or {}
    if data.get("data-file"):
        raise Refused("the image names an external data file, which would be read from the server's host: refused")
    virtual = info.get("virtual-size")
    if not isinstance(virtual, int):
        raise Refused("the image states no virtual size")
    if not MIN_VIRTUAL_BYTES <= virtual <= MAX_VIRTUAL_BYTES:
        raise Refused(
            f"the image's virtual size is {virtual} bytes; it must be within {MIN_VIRTUAL_BYTES} and "
            f"{MAX_VIRTUAL_BYTES}"
        )
    return virtual
