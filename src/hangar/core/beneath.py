"""Trees a guest can write, touched from the host without following anything in them.

A space's folder and its worktrees, a pipeline run's working directory, a rig's home: whatever an enclosure can
write may hold a symlink, or be swapped for one between a check and a use. So the host never resolves a path
inside such a tree by name. It opens the server-made folder holding the tree (the *anchor*: its parents are the
server's own directories, and its own last component is not followed), then everything inside relative to that
descriptor: ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` makes the kernel
refuse a symlink anywhere on the way, or a way out, at the moment of opening, so no swap can slip in between.

Python has no binding for ``openat2`` (Linux 5.6): it is called through ``ctypes``. Where the kernel or a seccomp
filter lacks it, each component is opened in turn with ``O_NOFOLLOW`` from the descriptor of the one before,
which gives the same guarantee because names are split lexically first and ``..`` is refused.

Walking (``walk``) and removing (``remove_entry``) work the same way: one descriptor per directory, each opened
with ``O_NOFOLLOW | O_DIRECTORY`` beneath its parent and checked to be what was listed, never a path by name.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import posixpath
import secrets
import stat
from collections.abc import Container, Iterator, Sequence
from pathlib import Path

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
# The number is the same on every architecture that got the syscall after the tables were unified (5.1).
SYS_OPENAT2 = 437 if platform.machine() in ("x86_64", "aarch64") else None

MAX_DEPTH = 128  # directories deeper than this under a walked tree are not walked (one descriptor per level)
_REMOVE_STALLS = 8  # passes removing nothing before the removal of a tree gives up
_REMOVE_PASSES = 1000  # passes at most (each moves up what lies MAX_DEPTH levels down, so ~128k levels)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class NotBeneath(OSError):
    """The path leaves its folder, or passes through (or names) a symbolic link."""

    def __init__(self, rel: str) -> None:
        super().__init__(errno.EXDEV, f"{rel} leaves its folder or passes through a symbolic link")


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_openat2_missing = SYS_OPENAT2 is None


def parts_of(rel: str | Sequence[str]) -> tuple[str, ...]:
    """The plain names of a relative path, after lexical normalisation (``a/./b/../c`` is ``a/c``); ``""`` and
    ``.`` name the folder itself. Absolute paths, ``..`` leaving the folder and NUL are refused (``NotBeneath``)."""
    text = rel if isinstance(rel, str) else "/".join(rel)
    if "\0" in text or text.startswith("/"):
        raise NotBeneath(text)
    norm = posixpath.normpath(text) if text else "."
    if norm == ".":
        return ()
    parts = tuple(norm.split("/"))
    if parts[0] == "..":
        raise NotBeneath(text)
    return parts


def _openat2(dir_fd: int, path: str, flags: int, mode: int) -> int:
    global _openat2_missing
    creates = bool(flags & os.O_CREAT) or flags & os.O_TMPFILE == os.O_TMPFILE
    how = _OpenHow(flags, mode if creates else 0, _RESOLVE)  # the kernel refuses a mode it would not use
    while True:
        fd = _syscall(
            ctypes.c_long(SYS_OPENAT2 or 0),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err == errno.EINTR:
            continue
        if err == errno.ENOSYS:
            _openat2_missing = True
        raise OSError(err, os.strerror(err), path)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_walking(dir_fd: int, parts: tuple[str, ...], flags: int, mode: int) -> int:
    """The fallback: one component at a time, each opened beneath the last without following it."""
    fd = dir_fd
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except NotADirectoryError:
                if _is_link(fd, name):
                    raise NotBeneath("/".join(parts)) from None
                raise
            if fd != dir_fd:
                os.close(fd)
            fd = nxt
        try:
            got = os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=fd)
        except OSError as exc:
            # O_NOFOLLOW refuses a link with ELOOP, or ENOTDIR when O_DIRECTORY is asked for too
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(fd, parts[-1])):
                raise NotBeneath("/".join(parts)) from None
            raise
        if flags & os.O_PATH and stat.S_ISLNK(os.fstat(got).st_mode):  # O_PATH | O_NOFOLLOW opens the link itself
            os.close(got)
            raise NotBeneath("/".join(parts))
        return got
    finally:
        if fd != dir_fd:
            os.close(fd)


def open_beneath(dir_fd: int, rel: str | Sequence[str], flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A new descriptor (close-on-exec) for ``rel`` beneath the directory ``dir_fd``, no symlink followed on the
    way or at the end; ``NotBeneath`` when one is there or the path leaves ``dir_fd``. ``""`` opens ``dir_fd``'s
    directory again with ``flags``."""
    parts = parts_of(rel)
    flags |= os.O_CLOEXEC
    if not parts:
        return os.open(".", flags, dir_fd=dir_fd)
    if not _openat2_missing:
        try:
            return _openat2(dir_fd, "/".join(parts), flags, mode)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise NotBeneath("/".join(parts)) from None
            if exc.errno != errno.ENOSYS:
                raise
    return _open_walking(dir_fd, parts, flags, mode)


def open_anchor(path: Path) -> int:
    """A server-made directory holding a guest-writable tree, opened by name without following its last
    component (its parents are the server's own directories)."""
    return os.open(path, DIR_FLAGS)


@contextlib.contextmanager
def anchored(path: Path) -> Iterator[int]:
    fd = open_anchor(path)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def opened(dir_fd: int, rel: str | Sequence[str], flags: int = os.O_RDONLY) -> Iterator[int]:
    fd = open_beneath(dir_fd, rel, flags)
    try:
        yield fd
    finally:
        os.close(fd)


def lstat_beneath(dir_fd: int, rel: str | Sequence[str]) -> os.stat_result | None:
    """What ``rel`` is (a symlink at its end is reported as one, never followed); None when nothing is there or
    the way to it passes through a symlink."""
    parts = parts_of(rel)
    if not parts:
        return os.fstat(dir_fd)
    try:
        with opened(dir_fd, parts[:-1], os.O_PATH | os.O_DIRECTORY) as parent:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except (NotBeneath, FileNotFoundError, NotADirectoryError):
        return None


def read_regular(dir_fd: int, rel: str | Sequence[str], limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file ``rel`` beneath ``dir_fd`` (``IsADirectoryError`` for a
    directory, ``OSError(EINVAL)`` for anything else that is not a regular file: a fifo never blocks)."""
    with opened(dir_fd, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY) as fd:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def list_beneath(dir_fd: int, rel: str | Sequence[str]) -> list[tuple[str, bool]]:
    """The entries of the directory ``rel`` beneath ``dir_fd`` as (name, is a directory), sorted by name; a
    symlink is listed as what it is, never looked through."""
    with opened(dir_fd, rel, os.O_RDONLY | os.O_DIRECTORY) as fd, os.scandir(fd) as entries:
        return sorted((e.name, e.is_dir(follow_symlinks=False)) for e in entries)


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [e.name for e in entries]


def _open_child_dir(parent: int, name: str, seen: os.stat_result) -> int | None:
    """The directory ``name`` of ``parent``, if it is still the one ``seen`` (not swapped since it was listed)."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError:
        return None
    if not os.path.samestat(seen, os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def walk(
    top_fd: int, *, max_depth: int = MAX_DEPTH, prune: Container[str] = ()
) -> Iterator[tuple[int, str, os.stat_result, tuple[str, ...]]]:
    """Every entry under the directory ``top_fd``, depth first, as (descriptor of the directory holding it, its
    name, its ``lstat``, its path parts from the top). Symlinks are reported, never followed; directories named
    in ``prune``, or ``max_depth`` levels down, are reported but not entered. The holding descriptor is valid
    until the next entry is asked for; at most ``max_depth`` descriptors are open at once."""
    first = os.open(".", DIR_FLAGS, dir_fd=top_fd)
    stack: list[tuple[int, tuple[str, ...], Iterator[str]]] = [(first, (), iter(_names(first)))]
    try:
        while stack:
            fd, where, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            parts = (*where, name)
            yield fd, name, st, parts
            if stat.S_ISDIR(st.st_mode) and name not in prune and len(stack) < max_depth:
                sub = _open_child_dir(fd, name, st)
                if sub is not None:
                    try:
                        stack.append((sub, parts, iter(_names(sub))))
                    except OSError:
                        os.close(sub)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _empty(top: int) -> None:
    """Remove everything inside the directory ``top``. Directories too deep to hold a descriptor for each level
    are moved up into ``top`` and emptied on a later pass, so any depth is removed with few descriptors. A pass
    that removes nothing (something, a live guest, keeps adding) ends the attempt after a few tries."""
    stalls = passes = 0
    while _names(top):
        done, passes = 0, passes + 1
        stack: list[tuple[int, str, Iterator[str]]] = [(os.dup(top), "", iter(_names(top)))]
        try:
            while stack:
                fd, own, names = stack[-1]
                name = next(names, None)
                if name is None:
                    stack.pop()
                    os.close(fd)
                    if stack:
                        with contextlib.suppress(OSError):
                            os.rmdir(own, dir_fd=stack[-1][0])
                            done += 1
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        os.unlink(name, dir_fd=fd)
                        done += 1
                    continue
                if len(stack) >= MAX_DEPTH:
                    with contextlib.suppress(OSError):
                        os.rename(name, f".hangar-removing-{secrets.token_hex(6)}", src_dir_fd=fd, dst_dir_fd=top)
                        done += 1
                    continue
                sub = _open_child_dir(fd, name, st)
                if sub is not None:
                    stack.append((sub, name, iter(_names(sub))))
        finally:
            for fd, _, _ in stack:
                os.close(fd)
        stalls = 0 if done else stalls + 1
        if stalls >= _REMOVE_STALLS or passes >= _REMOVE_PASSES:
            raise OSError(errno.ENOTEMPTY, "something kept adding files while the folder was being removed")


def remove_entry(dir_fd: int, name: str) -> bool:
    """Remove the entry ``name`` of the directory ``dir_fd``, whatever it is: a directory with everything in it
    (nothing followed), or a file or symlink itself. False when nothing was there."""
    if parts_of(name) != (name,):
        raise NotBeneath(name)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        sub = _open_child_dir(dir_fd, name, st)
        if sub is not None:
            try:
                _empty(sub)
            finally:
                os.close(sub)
        try:
            os.rmdir(name, dir_fd=dir_fd)
        except NotADirectoryError:
            os.unlink(name, dir_fd=dir_fd)  # swapped for a link or a file meanwhile: that goes instead
        return True
    os.unlink(name, dir_fd=dir_fd)
    return True


def remove_path(path: Path) -> bool:
    """``remove_entry`` for ``path``'s last component, beneath its parent (a server-made directory); False when
    the parent or the entry is not there."""
    try:
        with anchored(path.parent) as parent:
            return remove_entry(parent, path.name)
    except FileNotFoundError:
        return False


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Move ``src`` to ``dst`` (plain names, each beneath its directory descriptor); ``FileExistsError`` when
    anything (a symlink included) is already at ``dst``."""
    for name in (src, dst):
        if parts_of(name) != (name,):
            raise NotBeneath(name)
    if _libc_renameat2 is not None:
        if _libc_renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: a file system without the flag
            raise OSError(err, os.strerror(err), dst)
    # Without renameat2 (old C libraries) the check and the move are two steps; kernels this old are rare.
    if os.path.lexists(f"/proc/self/fd/{dst_dir}/{dst}"):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)


def copy_new(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Copy the tree ``src`` (a server-made one: it is read as it is) to a new directory ``dst`` beneath
    ``dst_dir``, for a move between file systems. ``dst`` is made here (``FileExistsError`` when anything is
    already there) with no access for anyone but its owner until the copy is complete, and everything inside is
    made beneath its descriptor, never by a path a guest could redirect; symlinks are copied as symlinks."""
    for name in (src, dst):
        if parts_of(name) != (name,):
            raise NotBeneath(name)
    with opened(src_dir, src, os.O_RDONLY | os.O_DIRECTORY) as top:
        os.mkdir(dst, 0o700, dir_fd=dst_dir)
        with opened(dst_dir, dst, os.O_RDONLY | os.O_DIRECTORY) as out:
            _copy_into(top, out, 0)
            os.chmod(out, stat.S_IMODE(os.fstat(top).st_mode))


def _copy_into(src: int, dst: int, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise OSError(errno.ELOOP, f"deeper than {MAX_DEPTH} levels")
    for name in _names(src):
        st = os.stat(name, dir_fd=src, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(name, 0o700, dir_fd=dst)
            with opened(src, name, os.O_RDONLY | os.O_DIRECTORY) as sub, opened(dst, name, DIR_FLAGS) as made:
                _copy_into(sub, made, depth + 1)
                os.chmod(made, stat.S_IMODE(st.st_mode))
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=src), name, dir_fd=dst)
        elif stat.S_ISREG(st.st_mode):
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with opened(src, name) as fin:
                fout = os.open(name, flags, stat.S_IMODE(st.st_mode), dir_fd=dst)
                try:
                    at = 0
                    while (n := os.sendfile(fout, fin, at, 1 << 24)) > 0:  # any two file systems, in the kernel
                        at += n
                finally:
                    os.close(fout)
        # sockets, fifos, devices: a checkout has none, and none is made


_RENAME_NOREPLACE = 1
_libc_renameat2 = getattr(_libc, "renameat2", None)
if _libc_renameat2 is not None:
    _libc_renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    _libc_renameat2.restype = ctypes.c_int
