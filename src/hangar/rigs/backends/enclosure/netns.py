"""A rig's network namespace: created by bubblewrap running as root (so the host's user namespace owns it and
the rig user has no capabilities in it), loopback only, default routes into loopback, the egress rules loaded.

Sockets that must live inside the namespace (the gate's listeners, the host side of port forwards connecting
to guest ports) are created by one dedicated thread that has joined it with ``setns``: a network namespace is
a per-thread attribute, and a socket keeps the namespace it was created in.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hangar.errors import Internal

CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def _join(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


async def _run(argv: list[str], stdin: bytes | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    if proc.returncode != 0:
        raise Internal(f"{argv[0]} failed: {err.decode(errors='replace').strip()[:300]}")
    return out.decode(errors="replace")


class NetNamespace:
    """The network namespace bubblewrap created for the rig (``--unshare-net``: loopback up, nothing else),
    reached through ``/proc/<pid>/ns/net`` of the rig's first process. It dies with the rig's processes, so
    nothing is left behind on the host if the server crashes."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._thread: ThreadPoolExecutor | None = None

    def attach(self, pid: int) -> None:
        self.path = Path(f"/proc/{pid}/ns/net")
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"netns-{pid}", initializer=_join,
                                          initargs=(str(self.path),))  # fmt: skip

    async def configure(self, ruleset: str) -> None:
        """Default routes into loopback (so any destination reaches the output hook) and the egress rules."""
        script = "ip route add default dev lo src 127.0.0.1 && ip -6 route add default dev lo src ::1 && nft -f -"
        argv = ["nsenter", f"--net={self._require()}", "sh", "-c", script]
        for _ in range(400):
            try:
                await _run(argv, stdin=ruleset.encode())
                return
            except Internal as exc:
                # bubblewrap brings loopback up in the rig a moment after it reports the rig's pid; wait for it
                # rather than racing it (bringing it up ourselves makes its own setup fail)
                if "not up" not in exc.message:
                    raise
                await asyncio.sleep(0.005)
        raise Internal("the rig's loopback interface never came up")

    def _require(self) -> Path:
        if self.path is None:
            raise Internal("the rig's network namespace is not attached")
        return self.path

    async def socket(self, family: int, kind: int) -> socket.socket:
        """A new non-blocking socket living in this namespace."""
        if self._thread is None:
            raise Internal("the rig's network namespace is not attached")
        sock = await asyncio.get_running_loop().run_in_executor(self._thread, socket.socket, family, kind)
        sock.setblocking(False)
        return sock

    async def dropped_packets(self) -> int:
        """Packets the namespace's filter dropped (not TCP/UDP, so the gate never saw them)."""
        out = await _run(["nsenter", f"--net={self._require()}", "nft", "list", "counter", "inet", "hangar_filter",
                          "dropped"])  # fmt: skip
        found = re.search(r"packets (\d+)", out)
        return int(found.group(1)) if found else 0

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False)
            self._thread = None
