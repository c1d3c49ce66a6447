"""A skill's bytes as files, unpacked as hostile input: nothing in them decides where anything is written.

A ``skill-md`` skill is one file, ``SKILL.md``. An ``archive`` is a gzip-compressed tar or a zip (told by its
first bytes, never by a name) whose root holds ``SKILL.md``. Its members are read into memory, never extracted by
the archive library: each name must be relative and plain (no leading ``/``, no ``..`` part, no backslash, no NUL,
no name twice), each member a regular file or a directory (a symlink, a hard link, a device or a fifo refuses the
whole archive), and the counts and sizes stay within the bounds below, checked while reading (a member's
declared size is not trusted: a zip's entries are read with a cap). ``write_tree`` lays the files out for the
analysers in a fresh directory of the server's own, creating each file exclusively, following no link.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from hangar.errors import InvalidArgs

MAX_SKILL_BYTES = 4 * 1024 * 1024  # a skill as fetched or uploaded
MAX_FILES = 200  # members of an archive, directories included
MAX_FILE_BYTES = 1024 * 1024  # one file once unpacked
MAX_TOTAL_BYTES = 8 * 1024 * 1024  # every file once unpacked
SKILL_MD = "SKILL.md"
GZIP = b"\x1f\x8b"
ZIP = b"PK\x03\x04"

Files = dict[str, bytes]


def _refuse(field: str, what: str) -> InvalidArgs:
    return InvalidArgs(f"{field}: the skill archive is refused: {what}", field=field)


def plain_name(name: str, field: str) -> str | None:
    """``name`` as a relative path of plain parts (``./`` dropped; None for the root itself); ``InvalidArgs`` for
    an absolute name, a ``..`` part, a backslash or a NUL."""
    if "\0" in name or "\\" in name:
        raise _refuse(field, f"member {name!r} has a NUL or a backslash in its name")
    if name.startswith("/"):
        raise _refuse(field, f"member {name!r} has an absolute path")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise _refuse(field, f"member {name!r} climbs out of the archive (..)")
    return "/".join(parts) or None


class _Budget:
    def __init__(self, field: str) -> None:
        self.field = field
        self.members = 0
        self.total = 0
        self.files: Files = {}

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_FILES:
            raise _refuse(self.field, f"it has more than {MAX_FILES} members")

    def add(self, name: str, data: bytes) -> None:
        if name in self.files:
            raise _refuse(self.field, f"member {name!r} appears twice")
        if len(data) > MAX_FILE_BYTES:
            raise _refuse(self.field, f"member {name!r} is larger than {MAX_FILE_BYTES} bytes unpacked")
        self.total += len(data)
        if self.total > MAX_TOTAL_BYTES:
            raise _refuse(self.field, f"its files come to more than {MAX_TOTAL_BYTES} bytes unpacked")
        self.files[name] = data


def _tar(data: bytes, budget: _Budget) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                budget.member()
                name = plain_name(member.name, budget.field)
                if member.isdir():
                    continue
                if not member.isreg():
                    kind = "a symlink" if member.issym() else "a hard link" if member.islnk() else "not a file"
                    raise _refuse(budget.field, f"member {member.name!r} is {kind}")
                if name is None:
                    raise _refuse(budget.field, f"member {member.name!r} has no name")
                if member.size > MAX_FILE_BYTES:
                    raise _refuse(budget.field, f"member {name!r} is larger than {MAX_FILE_BYTES} bytes unpacked")
                handle = tar.extractfile(member)
                budget.add(name, handle.read(MAX_FILE_BYTES + 1) if handle is not None else b"")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise _refuse(budget.field, f"it is not a readable gzip-compressed tar ({exc})") from None


def _zip(data: bytes, budget: _Budget) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                budget.member()
                name = plain_name(info.filename, budget.field)
                mode = info.external_attr >> 16
                if info.is_dir():
                    continue
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # no type bits: a plain file, as zip tools write
                    kind = "a symlink" if stat.S_ISLNK(mode) else "not a file"
                    raise _refuse(budget.field, f"member {info.filename!r} is {kind}")
                if name is None:
                    raise _refuse(budget.field, f"member {info.filename!r} has no name")
                with archive.open(info) as handle:  # its declared size is the archive's word: read with a cap
                    budget.add(name, handle.read(MAX_FILE_BYTES + 1))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise _refuse(budget.field, f"it is not a readable zip ({exc})") from None


def unpack(data: bytes, kind: str, field: str = "content") -> Files:
    """The files of a skill of ``kind`` (``skill-md`` or ``archive``) whose bytes are ``data``."""
    if len(data) > MAX_SKILL_BYTES:
        raise InvalidArgs(f"{field}: the skill is {len(data)} bytes, more than {MAX_SKILL_BYTES}", field=field)
    if kind == "skill-md":
        files: Files = {SKILL_MD: data}
    elif kind == "archive":
        budget = _Budget(field)
        if data.startswith(GZIP):
            _tar(data, budget)
        elif data.startswith(ZIP):
            _zip(data, budget)
        else:
            raise _refuse(field, "it is neither a gzip-compressed tar nor a zip")
        files = budget.files
        for name in files:
            parts = name.split("/")
            for n in range(1, len(parts)):
                if "/".join(parts[:n]) in files:
                    raise _refuse(field, f"member {name!r} lies under the file {'/'.join(parts[:n])!r}")
    else:
        raise InvalidArgs(f"{field}: a skill is skill-md or archive, not {kind!r}", field=field)
    skill_md = files.get(SKILL_MD)
    if skill_md is None:
        raise InvalidArgs(f"{field}: the skill has no {SKILL_MD} at its root", field=field)
    if len(skill_md) > MAX_FILE_BYTES:
        raise InvalidArgs(f"{field}: its {SKILL_MD} is larger than {MAX_FILE_BYTES} bytes", field=field)
    try:
        skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgs(f"{field}: its {SKILL_MD} is not UTF-8 text", field=field) from None
    return files


def write_tree(files: Files, root: Path) -> None:
    """Lay ``files`` (names checked by ``unpack``) out under ``root``, a fresh directory of the server's own:
    directories made, each file created exclusively (``O_EXCL``), no link followed."""
    for name, data in files.items():
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
