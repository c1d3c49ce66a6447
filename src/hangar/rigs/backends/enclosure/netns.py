"""A rig's network namespace: created by bubblewrap running as root (so the host's user namespace owns it and
the rig user has no capabilities in it), loopback only, default routes into loopback, the egress rules loaded.

Loopback also carries the rig's own IPv4 address (``RIG_ADDRESS``), though nothing is ever sent to it: glibc's
``getaddrinfo`` with ``AI_ADDRCONFIG`` answers a lookup restricted to IPv4 with "Name or service not known",
without asking any resolver, when the host has no IPv4 address but 127.0.0.1. GLib (so WebKitGTK, engine C)
looks names up that way, one family at a time, and could resolve nothing; Python, Chromium and Firefox ask for
both families at once, which that rule lets through. IPv6 keeps only ``::1``, so such lookups of AAAA records
still end at once: the rig has no IPv6 egress.

Sockets that must live inside the namespace (the gate's listeners, the host side of port forwards connecting
to guest ports) are created by one dedicated thread that has joined it with ``setns``: a network namespace is
a per-thread attribute, and a socket keeps the namespace it was created in.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import re
import socket
import struct
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hangar.errors import Internal

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE, RTM_NEWADDR, RTM_NEWROUTE, NLMSG_ERROR = 0, 20, 24, 2
NLM_FLAGS = 0x1 | 0x4 | 0x200 | 0x400  # request, ack, exclusive, create
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_LINK, RT_SCOPE_HOST, RTN_UNICAST = 254, 3, 253, 254, 1
RTA_OIF, RTA_PREFSRC = 4, 7
IFA_ADDRESS, IFA_LOCAL = 1, 2
LOOPBACK_INDEX = 1
RIG_ADDRESS = "198.18.0.2"  # next to the gate's (RFC 2544's benchmarking range): never a real destination

_libc = ctypes.CDLL(None, use_errno=True)
Socket = socket.socket  # spelled so inside ``NetNamespace``, whose ``socket`` method hides the module there


def _join(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _nft(argv: list[str], stdin: str | None) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Internal(f"nft failed: {done.stderr.strip()[:300]}")
    return done.stdout


def _route_message(family: int, src: bytes, seq: int) -> bytes:
    """RTM_NEWROUTE: a default route out of loopback (ifindex 1) with ``src`` as the preferred source."""
    rtmsg = struct.pack("BBBBBBBBI", family, 0, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT,
                        RT_SCOPE_LINK if family == socket.AF_INET else 0, RTN_UNICAST, 0)  # fmt: skip
    attrs = struct.pack("HHI", 8, RTA_OIF, 1) + struct.pack("HH", 4 + len(src), RTA_PREFSRC) + src
    body = rtmsg + attrs
    return struct.pack("IHHII", 16 + len(body), RTM_NEWROUTE, NLM_FLAGS, seq, 0) + body


def _address_message(address: bytes, seq: int) -> bytes:
    """RTM_NEWADDR: ``address``/32 on loopback, host scope."""
    ifaddrmsg = struct.pack("BBBBI", socket.AF_INET, 32, 0, RT_SCOPE_HOST, LOOPBACK_INDEX)
    attrs = b"".join(struct.pack("HH", 4 + len(address), kind) + address for kind in (IFA_LOCAL, IFA_ADDRESS))
    body = ifaddrmsg + attrs
    return struct.pack("IHHII", 16 + len(body), RTM_NEWADDR, NLM_FLAGS, seq, 0) + body


def _ask(nl: socket.socket, message: bytes, what: str) -> None:
    nl.send(message)
    reply = nl.recv(4096)
    error = -struct.unpack("i", reply[16:20])[0] if struct.unpack("H", reply[4:6])[0] == NLMSG_ERROR else 0
    if error:
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _add_default_routes() -> None:
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as nl:
        for seq, (family, src) in enumerate(
            ((socket.AF_INET, socket.inet_pton(socket.AF_INET, "127.0.0.1")),
             (socket.AF_INET6, socket.inet_pton(socket.AF_INET6, "::1"))), start=1):  # fmt: skip
            _ask(nl, _route_message(family, src, seq), "adding the default route")


def _add_rig_address() -> None:
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as nl:
        _ask(nl, _address_message(socket.inet_pton(socket.AF_INET, RIG_ADDRESS), 1), "adding the rig's address")


def _configure(ruleset: str) -> None:
    for _ in range(400):
        try:
            _add_default_routes()
            break
        except OSError as exc:
            # bubblewrap brings loopback up in the rig a moment after it reports the rig's pid; wait for it
            # rather than racing it (bringing it up ourselves makes its own setup fail)
            if exc.errno != errno.ENETDOWN:
                raise Internal(f"cannot route the rig's traffic to its gate: {exc.strerror}") from exc
            time.sleep(0.005)
    else:
        raise Internal("the rig's loopback interface never came up")
    try:
        _add_rig_address()
    except OSError as exc:
        raise Internal(f"cannot give the rig its address: {exc.strerror}") from exc
    _nft(["nft", "-f", "-"], ruleset)


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
        """Default routes into loopback (so any destination reaches the output hook), the rig's address and the
        egress rules.
        Both run on the namespace's own thread: routes over netlink, ``nft`` as a child that inherits the
        thread's namespace (no ``nsenter`` or ``ip`` processes on the boot path)."""
        await asyncio.get_running_loop().run_in_executor(self._executor(), _configure, ruleset)

    async def apply(self, rules: str) -> None:
        """Load more nft commands into the namespace (the server door's table, or its removal)."""
        await asyncio.get_running_loop().run_in_executor(self._executor(), _nft, ["nft", "-f", "-"], rules)

    def _executor(self) -> ThreadPoolExecutor:
        if self._thread is None:
            raise Internal("the rig's network namespace is not attached")
        return self._thread

    async def socket(self, family: int, kind: int) -> socket.socket:
        """A new non-blocking socket living in this namespace."""
        if self._thread is None:
            raise Internal("the rig's network namespace is not attached")
        sock = await asyncio.get_running_loop().run_in_executor(self._thread, socket.socket, family, kind)
        sock.setblocking(False)
        return sock

    async def connect(self, port: int) -> Socket:
        """A connected socket to ``port`` on the namespace's loopback (IPv4 first, then IPv6)."""
        loop = asyncio.get_running_loop()
        last: OSError | None = None
        for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            sock = await self.socket(family, socket.SOCK_STREAM)
            try:
                await loop.sock_connect(sock, (address, port))
                return sock
            except OSError as exc:
                sock.close()
                last = exc
        raise last or OSError(errno.ECONNREFUSED, "connection refused")

    async def listen(self, family: int, address: str, port: int) -> Socket:
        """A listening socket bound to ``address:port`` in the namespace (made by the host: the rig user cannot
        take a port below 1024 first)."""
        sock = await self.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        return sock

    async def dropped_packets(self) -> int:
        """Packets the namespace's filter dropped (not TCP/UDP, so the gate never saw them)."""
        argv = ["nft", "list", "counter", "inet", "hangar_filter", "dropped"]
        out = await asyncio.get_running_loop().run_in_executor(self._executor(), _nft, argv, None)
        found = re.search(r"packets (\d+)", out)
        return int(found.group(1)) if found else 0

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False)
            self._thread = None
