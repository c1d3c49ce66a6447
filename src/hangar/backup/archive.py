"""A backup's archive: a POSIX tar stream of items (files, folders, symlinks) under their paths in the data
directory, closed by ``MANIFEST.json``, which lists every item with its kind, mode, size and SHA-256. The stream is
gzipped on its way to the file (``hangar.backup.compress``); a reader takes it gzipped or plain.

Tar because an operator can list and read an unencrypted backup with the tools every system has. The manifest comes
last because an item's checksum is known only once it is written; so a reader makes one whole pass (``scan``)
before it trusts anything, and a file cut short has no manifest and is refused naming the item it ends in. Paths
inside are relative, plain names joined by ``/``, checked on the way in (``check_path``): an archive is input.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import IO, Any, Literal, Protocol, TypeVar

from hangar.backup.crypt import Damaged
from hangar.errors import Refused

MANIFEST = "MANIFEST.json"
FORMAT = 1
_READ = 1 << 20
# A backup's bounds, so that reading one (input) holds a bounded amount in memory: its manifest is read whole and
# every item is kept until it is compared with it. A backup is refused when taken past them, so every backup taken
# restores. About 250 bytes of manifest an item: the two bind together.
MAX_MANIFEST_BYTES = 256 << 20
MAX_ITEMS = 1_000_000
# An item's extended header (a pax record or a GNU long name: its long path or symlink target), which tarfile reads
# whole before handing the item over; a path is at most a few KiB.
MAX_HEADER_BYTES = 1 << 20
_EXTENDED = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)
Kind = Literal["file", "dir", "symlink"]


class BackupRefused(Refused):
    """A backup or restore that cannot go on; the message is one sentence naming the file or item."""


@dataclass(frozen=True)
class Item:
    path: str
    kind: Kind
    mode: int
    size: int
    sha256: str
    target: str | None = None  # a symlink's target, as written (never followed)


class Listing(Protocol):
    """What closes an archive: a manifest listing every item (a backup's ``Manifest``, or a workspace export's)."""

    @property
    def items(self) -> tuple[Item, ...]: ...

    def to_json(self) -> bytes: ...


L = TypeVar("L", bound=Listing)


@dataclass(frozen=True)
class Manifest:
    format: int
    hangar_version: str
    created_at: str
    database: str  # where the databases came from: "sqlite" (files), later "postgresql" (a dump)
    without_files: bool
    items: tuple[Item, ...]

    def to_json(self) -> bytes:
        data = asdict(self)
        data["items"] = [{k: v for k, v in asdict(i).items() if v is not None} for i in self.items]
        return json.dumps(data, indent=0, sort_keys=True).encode()

    @staticmethod
    def from_json(raw: bytes) -> Manifest:
        try:
            data = json.loads(raw)
            listed = data.pop("items")
            if len(listed) > MAX_ITEMS:
                raise BackupRefused(
                    f"the backup's manifest lists more than {MAX_ITEMS} items, more than a backup holds"
                )
            items = tuple(Item(**i) for i in listed)
            manifest = Manifest(items=items, **data)
        except (ValueError, TypeError, KeyError, AttributeError):
            raise BackupRefused("the backup's manifest is damaged") from None
        if manifest.format != FORMAT:
            raise BackupRefused(f"the backup's format {manifest.format!r} is not one this version reads ({FORMAT})")
        return manifest


def check_path(path: str) -> tuple[str, ...]:
    """The parts of an archive path, each a plain name; ``BackupRefused`` naming it otherwise."""
    parts = tuple(path.split("/"))
    if not path or path == MANIFEST or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise BackupRefused(f"the backup names an item {path[:200]!r} that is not a plain path")
    return parts


class _Hashing(io.RawIOBase):
    """Exactly ``size`` bytes from the descriptor ``fd`` (a file that shrank meanwhile is padded with zeros, one
    that grew is cut: tar declares the size first), hashed on the way."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd, self._left = fd, size
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        want = self._left if n < 0 else min(n, self._left)
        data = os.read(self._fd, want) if want else b""
        if len(data) < want and not data:
            data = b"\0" * want
        self._left -= len(data)
        self.digest.update(data)
        return data


class ArchiveWriter:
    """Writes items to ``out`` (anything with ``write``) as a tar stream; ``finish`` adds the manifest."""

    def __init__(self, out: Any) -> None:
        self._tar = tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT)  # noqa: SIM115 (closed by finish)
        self.items: list[Item] = []
        self._paths: set[str] = set()
        self.bytes = 0

    def _info(self, path: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        check_path(path)
        if len(self.items) >= MAX_ITEMS:  # it could not be restored: say so now, not at the restore
            raise BackupRefused(f"the data directory holds more than {MAX_ITEMS} items, more than a backup holds")
        if path in self._paths:  # it could not be restored: say so now, not at the restore
            raise BackupRefused(f"the item {path!r} would be in the backup twice")
        self._paths.add(path)
        info = tarfile.TarInfo(path)
        info.type, info.mode, info.mtime = kind, stat.S_IMODE(mode) & 0o1777, 0
        return info

    def add_dir(self, path: str, mode: int) -> None:
        self._tar.addfile(self._info(path, tarfile.DIRTYPE, mode))
        self.items.append(Item(path, "dir", stat.S_IMODE(mode) & 0o1777, 0, hashlib.sha256().hexdigest()))

    def add_symlink(self, path: str, target: str) -> None:
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        info.linkname = target
        self._tar.addfile(info)
        digest = hashlib.sha256(os.fsencode(target)).hexdigest()
        self.items.append(Item(path, "symlink", 0o777, len(os.fsencode(target)), digest, target))

    def add_fd(self, path: str, fd: int, mode: int) -> None:
        """The regular file open at ``fd`` (read from where it stands), as it is now."""
        size = os.fstat(fd).st_size
        info = self._info(path, tarfile.REGTYPE, mode)
        info.size = size
        data = _Hashing(fd, size)
        self._tar.addfile(info, data)
        self.items.append(Item(path, "file", info.mode, size, data.digest.hexdigest()))
        self.bytes += size

    def add_bytes(self, path: str, data: bytes, mode: int) -> None:
        info = self._info(path, tarfile.REGTYPE, mode)
        info.size = len(data)
        self._tar.addfile(info, io.BytesIO(data))
        self.items.append(Item(path, "file", info.mode, len(data), hashlib.sha256(data).hexdigest()))
        self.bytes += len(data)

    def finish(self, manifest: Listing) -> None:
        raw = manifest.to_json()
        if len(raw) > MAX_MANIFEST_BYTES:
            raise BackupRefused(
                f"the backup's manifest would be {len(raw)} bytes, more than the {MAX_MANIFEST_BYTES} a backup holds"
            )
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode, info.mtime = len(raw), 0o600, 0
        self._tar.addfile(info, io.BytesIO(raw))
        self._tar.close()


class _BoundedInfo(tarfile.TarInfo):
    """A member whose extended header is refused past ``MAX_HEADER_BYTES`` before tarfile reads it into memory."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:  # tarfile's documented hook for subclasses
        if self.type in _EXTENDED and self.size > MAX_HEADER_BYTES:
            raise _HeaderTooLong(self.size)
        member: tarfile.TarInfo = super()._proc_member(tar)  # type: ignore[misc]
        return member


class _HeaderTooLong(Exception):
    pass


# What ``scan`` hands its caller for each item: the item as the archive describes it, and its content in pieces.
OnItem = Callable[[Item, Iterator[bytes]], None]


def scan(stream: IO[bytes], on_item: OnItem | None = None) -> Manifest:
    """Read the whole backup from ``stream``, checking every item against the manifest at its end; return the
    manifest. ``on_item`` sees each item as it is read (its checksum is compared after ``on_item`` consumed its
    content). ``BackupRefused`` naming the item for a damaged, truncated or altered archive."""
    return scan_as(stream, Manifest.from_json, on_item)


def scan_as(stream: IO[bytes], parse: Callable[[bytes], L], on_item: OnItem | None = None) -> L:
    """``scan`` for an archive closed by another kind of manifest, read by ``parse`` (at most
    ``MAX_MANIFEST_BYTES``; it raises ``BackupRefused`` for one it does not take)."""
    seen: list[Item] = []
    where = "its first item"
    manifest: L | None = None
    try:
        # ``r|*``: gzipped as backups are written now (``hangar.backup.compress``), or plain as they were before.
        with tarfile.open(fileobj=stream, mode="r|*", tarinfo=_BoundedInfo) as tar:
            for member in tar:
                if manifest is not None:
                    raise BackupRefused(f"the backup has an item {member.name[:200]!r} after its manifest")
                if member.name == MANIFEST and member.isfile():
                    if member.size > MAX_MANIFEST_BYTES:
                        raise BackupRefused(
                            f"the backup's manifest is {member.size} bytes, more than the {MAX_MANIFEST_BYTES} a "
                            "backup holds"
                        )
                    handle = tar.extractfile(member)
                    assert handle is not None
                    manifest = parse(handle.read(MAX_MANIFEST_BYTES))
                    continue
                if len(seen) >= MAX_ITEMS:
                    raise BackupRefused(f"the backup holds more than {MAX_ITEMS} items, more than a backup holds")
                where = repr(member.name[:200])
                seen.append(_read_item(tar, member, on_item))
                where = f"the item after {where}"
    except _HeaderTooLong as exc:
        raise BackupRefused(
            f"the backup has an extended header of {exc.args[0]} bytes, more than the {MAX_HEADER_BYTES} an item's "
            f"name takes (at {where})"
        ) from None
    except (tarfile.TarError, EOFError, OSError, Damaged) as exc:
        said = str(exc) if isinstance(exc, Damaged) else "the backup is damaged or truncated"
        raise BackupRefused(f"{said} (at {where})") from None
    if manifest is None:
        raise BackupRefused(f"the backup is truncated: it ends at {where}, before its manifest")
    _compare(seen, manifest.items)
    return manifest


def _read_item(tar: tarfile.TarFile, member: tarfile.TarInfo, on_item: OnItem | None) -> Item:
    check_path(member.name)
    digest, size = hashlib.sha256(), 0
    mode = member.mode & 0o1777
    if member.isdir():
        item = Item(member.name, "dir", mode, 0, digest.hexdigest())
        if on_item is not None:
            on_item(item, iter(()))
        return item
    if member.issym():
        raw = os.fsencode(member.linkname)
        item = Item(member.name, "symlink", 0o777, len(raw), hashlib.sha256(raw).hexdigest(), member.linkname)
        if on_item is not None:
            on_item(item, iter(()))
        return item
    if not member.isfile():
        raise BackupRefused(f"the backup's item {member.name[:200]!r} is neither a file, a folder nor a symlink")
    if member.issparse():  # a few bytes that unpack to any size: never written by ``ArchiveWriter``
        raise BackupRefused(f"the backup's item {member.name[:200]!r} is a sparse file, which a backup never holds")
    handle = tar.extractfile(member)
    assert handle is not None

    def pieces() -> Iterator[bytes]:
        nonlocal size
        while chunk := handle.read(_READ):
            digest.update(chunk)
            size += len(chunk)
            yield chunk

    if on_item is not None:
        on_item(Item(member.name, "file", mode, member.size, ""), pieces())
    for _ in pieces():  # what ``on_item`` left unread
        pass
    return Item(member.name, "file", mode, size, digest.hexdigest())


def _compare(seen: list[Item], listed: tuple[Item, ...]) -> None:
    by_path = {i.path: i for i in listed}
    paths: set[str] = set()
    for item in seen:
        if item.path in paths:
            raise BackupRefused(f"the backup holds the item {item.path!r} twice")
        paths.add(item.path)
        want = by_path.pop(item.path, None)
        if want is None:
            raise BackupRefused(f"the backup's item {item.path!r} is not in its manifest")
        if want.kind != item.kind or want.size != item.size:
            raise BackupRefused(f"the backup's item {item.path!r} does not match its manifest (damaged)")
        if want.sha256 != item.sha256:
            raise BackupRefused(f"the backup's item {item.path!r} fails its checksum (damaged)")
        if want.target != item.target or want.mode != item.mode:
            raise BackupRefused(f"the backup's item {item.path!r} does not match its manifest (damaged)")
    if by_path:
        raise BackupRefused(f"the backup lacks the item {next(iter(by_path))!r} its manifest lists")
    if len(seen) != len(listed):
        raise BackupRefused("the backup's manifest lists an item twice")
