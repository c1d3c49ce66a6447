"""File access confined to a rig's root, resolved one component at a time without following symlinks.

The host reaches the rig's filesystem (its overlay root plus bind mounts) through ``/proc/<pid>/root`` of a
process inside the rig. Every component is opened relative to the previous one with ``O_NOFOLLOW``; ``..`` is
refused, and any symlink on the way is refused rather than followed, so no path leaves the rig.
"""

from __future__ import annotations

import errno
import os
import stat

from hangar.errors import Conflict, InvalidArgs, NotFound, Refused

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def split_guest_path(guest_path: str) -> list[str]:
    if not isinstance(guest_path, str) or not guest_path.startswith("/") or "\x00" in guest_path:
        raise InvalidArgs(f"guest path {guest_path!r} must be an absolute path", field="path")
    parts = [p for p in guest_path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused(f"guest path {guest_path!r} contains '..' and could leave the rig")
    if not parts:
        raise InvalidArgs("guest path names the root directory, not a file", field="path")
    return parts


def _refuse_link(dir_fd: int, name: str, guest_path: str) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"guest path {guest_path!r} crosses a symlink ({name!r}); symlinks are not followed")


def open_parent(root_fd: int, guest_path: str, *, create: bool, owner: tuple[int, int] | None) -> tuple[int, str]:
    """An ``O_PATH`` descriptor of the file's directory (caller closes it) and the file's name."""
    parts = split_guest_path(guest_path)
    current = os.open(".", _DIR_FLAGS, dir_fd=root_fd)
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    raise NotFound(f"{guest_path} does not exist in the rig") from None
                os.mkdir(name, 0o755, dir_fd=current)
                if owner is not None:
                    os.chown(name, *owner, dir_fd=current, follow_symlinks=False)
                nxt = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    _refuse_link(current, name, guest_path)
                    raise Refused(f"{guest_path}: {name!r} is not a directory") from None
                raise
            os.close(current)
            current = nxt
    except BaseException:
        os.close(current)
        raise
    return current, parts[-1]


def open_for_read(root_fd: int, guest_path: str) -> int:
    parent, name = open_parent(root_fd, guest_path, create=False, owner=None)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=parent)
    except FileNotFoundError:
        raise NotFound(f"{guest_path} does not exist in the rig") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{guest_path} is a symlink; symlinks are not followed") from None
        raise
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{guest_path} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def open_for_write(root_fd: int, guest_path: str, *, exclusive: bool, owner: tuple[int, int]) -> int:
    parent, name = open_parent(root_fd, guest_path, create=True, owner=owner)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    try:
        fd = os.open(name, flags, 0o644, dir_fd=parent)
    except FileExistsError:
        raise Conflict(f"{guest_path} already exists in the rig") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{guest_path} is a symlink; symlinks are not followed") from None
        if exc.errno == errno.EISDIR:
            raise Refused(f"{guest_path} is a directory") from None
        raise
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{guest_path} is not a regular file")
    os.fchown(fd, *owner)
    return fd
