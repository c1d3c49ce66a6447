"""A rig's network namespace: created by the host (so the host's user namespace owns it and the rig user has
no capabilities in it), loopback only, default routes into loopback, and the egress ruleset loaded.

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
NETNS_DIR = Path("/run/netns")

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
    def __init__(self, name: str) -> None:
        self.name = name
        self.path = NETNS_DIR / name
        self._thread: ThreadPoolExecutor | None = None

    async def create(self, ruleset: str) -> None:
        script = (
            'ip netns add "$1" && exec nsenter --net="/run/netns/$1" sh -c '
            "'ip link set lo up && ip route add default dev lo src 127.0.0.1 && "
            "ip -6 route add default dev lo src ::1 && nft -f -'"
        )
        await _run(["sh", "-c", script, "sh", self.name], stdin=ruleset.encode())
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"netns-{self.name}", initializer=_join,
                                          initargs=(str(self.path),))  # fmt: skip

    async def socket(self, family: int, kind: int) -> socket.socket:
        """A new non-blocking socket living in this namespace."""
        if self._thread is None:
            raise Internal(f"network namespace {self.name} is not set up")
        sock = await asyncio.get_running_loop().run_in_executor(self._thread, socket.socket, family, kind)
        sock.setblocking(False)
        return sock

    async def dropped_packets(self) -> int:
        """Packets the namespace's filter dropped (not TCP/UDP, so the gate never saw them)."""
        out = await _run(["nsenter", f"--net={self.path}", "nft", "list", "counter", "inet", "hangar_filter",
                          "dropped"])  # fmt: skip
        found = re.search(r"packets (\d+)", out)
        return int(found.group(1)) if found else 0

    async def delete(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False)
            self._thread = None
        if await asyncio.to_thread(self.path.exists):
            await _run(["ip", "netns", "del", self.name])
