"""One enclosure rig: bubblewrap namespaces over an overlay of the image pack, its cgroup, its network
namespace with the egress gate, the agent's exec channel, port forwards and confined file access.

Process tree (each step ``exec``s the next, so the host sees one process until bubblewrap forks):
the forked child joins the rig's cgroups and mounts the overlay root in a private mount namespace (see
``launch``; it vanishes with the rig, so nothing leaks onto the host) -> ``bwrap`` (new network, PID, IPC, UTS,
cgroup and mount namespaces, root = the overlay) -> ``setpriv`` (the rig user ``RIG_UID``, a uid no host account
has; no capabilities, no new privileges) -> the agent. The network namespace is configured from the host
(routes, nft rules, the egress gate's listeners) while the agent starts.

Nothing in the rig names or holds the host: bubblewrap reads its options (host paths among them) from a
descriptor, so its command line, the rig's ``/proc/1/cmdline``, holds none; what it and the agent print goes
through a pipe to the host, which keeps it in ``enclosure.log``; and the files the host gives the rig are
written into its own disk layer rather than bind-mounted.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import json
import logging
import os
import secrets
import shutil
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from hangar.core import disks
from hangar.core.guestacl import RIG_GID, RIG_UID, grant_tree
from hangar.errors import Conflict, Internal, InvalidArgs, Refused, Unavailable
from hangar.rigs.backends.base import GUEST_WORKTREE, Command, ExecResult, Pty, RigHandle, RigSpec
from hangar.rigs.backends.capabilities import Desktop
from hangar.rigs.backends.desktopboot import RigDesktopSession
from hangar.rigs.backends.enclosure import fs, launch, seccomp
from hangar.rigs.backends.enclosure.access import open_tree
from hangar.rigs.backends.enclosure.cgroups import RigCgroup, rig_cgroup
from hangar.rigs.backends.enclosure.channel import AgentChannel, AgentPty
from hangar.rigs.backends.enclosure.forwards import Forwards
from hangar.rigs.backends.enclosure.netns import NetNamespace
from hangar.rigs.backends.engineboot import RigEngine
from hangar.rigs.egress.gate import EgressEvent, EgressGate
from hangar.rigs.egress.rules import GATE_ADDRESS, ruleset, server_door_removal, server_door_rules
from hangar.rigs.egress.server_door import DoorTarget
from hangar.rigs.engines.session import EngineSession
from hangar.rigs.images.versions import HeldPack

log = logging.getLogger("hangar.rigs.enclosure")

GUEST_HOME = "/home/rig"
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"  # the system bundle (OpenSSL, GnuTLS through glib-networking)
AGENT_SOURCE = Path(__file__).with_name("agent.py")
AGENT_GUEST = "/run/hangar-agent.py"
LOG_LIMIT = 64 * 1024  # of what a rig's bubblewrap and agent print, kept in its enclosure.log
LOG_WAIT_S = 2.0
BOOT_TIMEOUT_S = 20.0
# Connections the rig's programs hold open at once to the host's lanes on its loopback (dev domains): each is a
# descriptor of the server process, so past this a new one is closed at once (the gate has its own cap).
MAX_LOOPBACK_CONNECTIONS = 256

SETPRIV = ["/usr/bin/setpriv", f"--reuid={RIG_UID}", f"--regid={RIG_GID}", "--clear-groups",
           "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip


class EnclosureRig(RigHandle):
    def __init__(
        self,
        spec: RigSpec,
        run_root: Path,
        cgroup_version: str,
        upstream_overrides: Mapping[str, tuple[str, int]] | None = None,
    ) -> None:
        self.spec = spec
        self.token = secrets.token_hex(5)
        self.run_dir = run_root / f"{spec.rig_id}-{self.token}"
        self.netns = NetNamespace()
        self.gate = EgressGate(spec.rig_id, spec.allow_hosts, upstream_overrides=upstream_overrides)
        self.cgroup_version = cgroup_version
        self.cgroup: RigCgroup = rig_cgroup(cgroup_version, f"{spec.rig_id}-{self.token}")
        self._dir_fd: int | None = None  # keeps the socket path short: /proc/self/fd/<n>/agent.sock
        self._tree_fd: int | None = None  # the worktree as opened beneath its folder, until bubblewrap mounts it
        self.channel = AgentChannel(self.run_dir / "agent.sock")
        self.forwards = Forwards(self._guest_port)
        self.pid1: int | None = None  # the rig's PID 1 as seen from the host
        self._proc: asyncio.subprocess.Process | None = None
        self._ptys: set[AgentPty] = set()
        self._parked = False
        self._closed = False
        self._teardown: asyncio.Future[None] | None = None
        self._cgroup_made = False
        self._netns_made = False
        self._door_lock = asyncio.Lock()
        self._door_opens = 0
        self.engine: RigEngine | None = None  # a browser rig's engine, once booted
        self.desktop_session: RigDesktopSession | None = None  # a computer rig's desktop, once booted
        self.pack: HeldPack | None = None  # the pack version it boots from, held until its teardown ends
        self._log_task: asyncio.Task[None] | None = None
        self._loopback: dict[int, list[asyncio.AbstractServer]] = {}  # host-made listeners on the rig's loopback
        self._loopback_tasks: set[asyncio.Task[None]] = set()

    def on_egress_refused(self, listener: Callable[[EgressEvent], None]) -> None:
        self.gate.on_refused = listener

    # --- boot ----------------------------------------------------------------------------------------------

    async def boot(self, pack: Path, progress: Callable[[str], None]) -> None:
        progress("preparing the rig's disk")
        await asyncio.to_thread(self._prepare, pack)
        progress("starting the rig and its egress gate")
        await self._spawn()
        progress("rig ready")

    async def _network(self) -> None:
        assert self.pid1 is not None
        self.netns.attach(self.pid1)
        self._netns_made = True
        await self.netns.configure(ruleset(self.gate.ports))
        await self.gate.start(self.netns.socket)

    def _prepare(self, pack: Path) -> None:
        # The rig's own writes (its overlay's upper layer) land on a disk of its own, bounded by spec.disk_mb.
        templates = self.run_dir.parent.parent / "disk-templates"  # beside run/, shared by the rigs
        disks.mount_private_disk(self.run_dir / "disk.img", self.run_dir / "disk", self.spec.disk_mb, templates)
        self._prepare_dirs(pack)
        self._place_files(pack)
        self._cgroup_made = True
        self.cgroup.create(self.spec.memory_mb, self.spec.vcpus)

    def _prepare_dirs(self, pack: Path) -> None:
        for sub in ("disk/upper", "disk/work", "root"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.run_dir, 0o700)
        (self.run_dir / "disk" / launch.LOWER).symlink_to(pack)  # the overlay names its layers relative to disk/
        (self.run_dir / "owner").write_text(str(os.getpid()))  # lets a later server clear what a crash left
        # Unix socket paths are limited to 108 bytes and data directories can be deep: reach the socket
        # through a descriptor of its directory instead of its full path.
        self._dir_fd = os.open(self.run_dir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.channel = AgentChannel(Path(f"/proc/self/fd/{self._dir_fd}/agent.sock"))
        home = self.spec.home_dir
        if home is not None:
            home.mkdir(parents=True, exist_ok=True)
            os.chown(home, RIG_UID, RIG_GID, follow_symlinks=False)
        if self.spec.worktree is not None:
            # The worktree is the guests' to change: it is opened once, beneath its folder with no symlink
            # followed, and that directory is what gets its ACLs and what bubblewrap mounts (``--bind-fd``).
            self._tree_fd = open_tree(self.spec.worktree)
            grant_tree(self._tree_fd)

    def _place_files(self, pack: Path) -> None:
        """What the host gives every rig (its resolver and hosts files, the agent, a browser rig's CA bundle) is
        written into the rig's own disk layer, owned by root, rather than bind-mounted from host files: a bind
        mount names its host source in the rig's ``/proc/self/mountinfo``."""
        upper = self.run_dir / "disk" / "upper"
        place = functools.partial(launch.place_file, upper, pack)
        place("etc/resolv.conf", b"nameserver 127.0.0.1\noptions edns0 trust-ad\n")
        place("etc/hosts", b"127.0.0.1\tlocalhost rig\n::1\tlocalhost ip6-localhost\n")
        place(AGENT_GUEST.lstrip("/"), AGENT_SOURCE.read_bytes())
        if self.spec.surface == "browser" and self.spec.trust_pem is not None:
            # A browser rig given a CA trusts it system-wide too: engine C (WebKitGTK) reads only the system
            # bundle. The pack stays untouched; the rig sees the pack's bundle with the CA appended.
            try:
                base = (pack / CA_BUNDLE).read_bytes()
            except OSError:
                base = b""
            place(CA_BUNDLE, base.rstrip(b"\n") + b"\n" + self.spec.trust_pem.strip() + b"\n")

    def _bwrap_options(self, info_fd: int, seccomp_fd: int | None) -> list[str]:
        """Handed to bubblewrap through a descriptor (``--args``), so its command line, the rig's
        ``/proc/1/cmdline``, names no host path."""
        argv = [
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--hostname", "rig",
            "--bind", str(self.run_dir / "root"), "/",
            "--proc", "/proc", "--dev", "/dev",
            # POSIX shared memory (browsers need it; ``--dev`` leaves /dev/shm unwritable for the rig user),
            # charged to the rig's memory limit like any page it touches.
            "--perms", "1777", "--size", str(self.spec.memory_mb * 1024 * 1024 // 2), "--tmpfs", "/dev/shm",
        ]  # fmt: skip
        if self.spec.home_dir is not None:
            argv += ["--bind", str(self.spec.home_dir), GUEST_HOME]
        if self._tree_fd is not None:
            read_only = self.spec.worktree is not None and self.spec.worktree.read_only
            argv += ["--ro-bind-fd" if read_only else "--bind-fd", str(self._tree_fd), GUEST_WORKTREE]
        if seccomp_fd is not None:
            argv += ["--seccomp", str(seccomp_fd)]
        return [*argv, "--info-fd", str(info_fd), "--chdir", "/", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]

    async def _spawn(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        info_r, info_w = os.pipe()
        seccomp_fd = _seccomp_fd()
        options_fd: int | None = None
        try:
            listener.bind(str(self.channel.socket_path))
            listener.listen(64)
            options_fd = launch.data_fd("hangar-rig-options", self._bwrap_options(info_w, seccomp_fd))
            extra = [fd for fd in (seccomp_fd, self._tree_fd) if fd is not None]
            passed = (listener.fileno(), info_w, options_fd, *extra)
            agent = ["/usr/bin/python3", "-I", "-S", AGENT_GUEST, str(listener.fileno())]
            # Its output reaches the host's log through a pipe (``_keep_log``): nothing in the rig holds a host file.
            self._proc = await asyncio.create_subprocess_exec(
                "bwrap", "--args", str(options_fd), "--", *SETPRIV, *agent,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}, pass_fds=passed,
                preexec_fn=launch.prepare(self.cgroup.procs_files(), self.run_dir / "disk", self.run_dir / "root"),
            )  # fmt: skip
            assert self._proc.stdout is not None
            self._log_task = asyncio.create_task(self._keep_log(self._proc.stdout), name=f"rig-log-{self.token}")
        finally:
            listener.close()
            for fd in (info_w, seccomp_fd, options_fd):
                if fd is not None:
                    os.close(fd)
            self._close_tree()
        try:
            info = await asyncio.wait_for(asyncio.to_thread(_read_info, info_r), BOOT_TIMEOUT_S)
            if info is None:
                raise Internal("the rig exited during boot: " + await self._log_tail())
            self.pid1 = int(info["child-pid"])
            # the network is set up while the agent starts; nothing runs in the rig before both are done
            await asyncio.wait_for(asyncio.gather(self._network(), self.channel.ping()), BOOT_TIMEOUT_S)
        except Unavailable as exc:
            raise Internal("the rig's agent did not start: " + await self._log_tail()) from exc
        except TimeoutError as exc:
            raise Internal("the rig did not come up in time: " + await self._log_tail()) from exc
        finally:
            os.close(info_r)

    async def _keep_log(self, output: asyncio.StreamReader) -> None:
        """What bubblewrap and the agent print, kept in ``enclosure.log`` up to ``LOG_LIMIT`` bytes and read to
        the end, so the rig never blocks on a full pipe."""
        kept = 0
        with open(self.run_dir / "enclosure.log", "ab") as log:  # noqa: ASYNC230 - local file, tiny
            while chunk := await output.read(65536):
                if kept < LOG_LIMIT:
                    log.write(chunk[: LOG_LIMIT - kept])
                    log.flush()
                    kept += len(chunk)

    async def _log_tail(self) -> str:
        if self._log_task is not None and not self.alive():
            with contextlib.suppress(TimeoutError):  # a rig that died has said all it will: wait for the pipe
                await asyncio.wait_for(asyncio.shield(self._log_task), LOG_WAIT_S)
        try:
            return (self.run_dir / "enclosure.log").read_text(errors="replace").strip()[-500:] or "(no output)"
        except OSError:
            return "(no output)"

    # --- RigHandle -----------------------------------------------------------------------------------------

    def _check_live(self) -> None:
        if self._closed or not self.alive():
            raise Unavailable(f"rig {self.spec.rig_id} is not running")

    def _check_awake(self) -> None:
        self._check_live()
        if self._parked:
            raise Refused(f"rig {self.spec.rig_id} is parked; wake it first")

    async def exec(self, command: str, *, timeout_s: float | None, stdin: bytes | None = None) -> ExecResult:
        self._check_awake()
        return await self.channel.exec(command, timeout_s, stdin)

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        self._check_awake()
        try:
            return await self.channel.run(command, on_stdout)
        except Unavailable as exc:
            raise await self._lost(exc) from exc

    async def _lost(self, exc: Unavailable) -> Unavailable:
        """Why a request's channel closed before its answer: the rig exited (what it printed last says why), or
        it runs on and its agent dropped the request."""
        with contextlib.suppress(TimeoutError):  # a rig that died is reaped at once; give the reaping a moment
            await asyncio.wait_for(self.wait_dead(), LOG_WAIT_S)
        memory = self._memory_note()
        if self.alive():
            return Unavailable(
                f"{exc.message} (the rig still runs: its agent dropped the request){memory}: {await self._log_tail()}"
            )
        code = self._proc.returncode if self._proc is not None else None
        return Unavailable(f"{exc.message}: the rig exited (status {code}){memory}: {await self._log_tail()}")

    def death_detail(self) -> str:
        # Read as soon as the death is seen, before the teardown removes the rig's group and its counters.
        code = self._proc.returncode if self._proc is not None else None
        return f"the rig's processes died underneath it (bubblewrap's status {code}){self._memory_note()}"

    def _memory_note(self) -> str:
        """Said when the kernel killed processes of the rig for its memory limit: a rig that died that way (or
        lost a program) says so, instead of a bare status."""
        kills = self.cgroup.oom_kills() if self._cgroup_made else 0
        if not kills:
            return ""
        return (
            f"; the kernel killed {kills} of its processes for going over the rig's memory limit of "
            f"{self.spec.memory_mb} MB"
        )

    async def open_pty(self, cols: int, rows: int) -> Pty:
        self._check_awake()
        pty = await self.channel.open_pty(cols, rows, self._ptys.discard)
        self._ptys.add(pty)
        return pty

    async def park(self) -> None:
        self._check_live()
        await asyncio.to_thread(self.cgroup.freeze)
        self._parked = True

    async def wake(self) -> None:
        self._check_live()
        await asyncio.to_thread(self.cgroup.thaw)
        self._parked = False

    async def resident_mb(self) -> int:
        self._check_live()
        used = await asyncio.to_thread(self.cgroup.resident_bytes)
        return -(-used // (1024 * 1024))

    async def listening_ports(self) -> list[int]:
        self._check_live()
        return await asyncio.to_thread(self._listening_ports)

    def _listening_ports(self) -> list[int]:
        ports: set[int] = set()
        gate_ports = self.gate.ports.all() | set(self._loopback)  # the host's listeners, not the guest's
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.pid1}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
                    port = int(fields[1].rsplit(":", 1)[1], 16)
                    if port not in gate_ports:
                        ports.add(port)
        return sorted(ports)

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        self._check_live()
        return await self.forwards.add(guest_port, host, host_port)

    async def unforward(self, host_port: int) -> None:
        await self.forwards.remove(host_port)

    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        self.gate.grant(hosts)

    def browser(self) -> EngineSession:
        if self.engine is None or self.engine.session is None:
            return super().browser()
        self._check_live()
        return self.engine.session

    def engine_log(self) -> str:
        if self.engine is None:
            return super().engine_log()
        return self.engine.log()

    def desktop(self) -> Desktop:
        if self.desktop_session is None:
            return super().desktop()
        self._check_live()
        return self.desktop_session

    def _host_ports(self) -> frozenset[int]:
        return self.gate.ports.all() | frozenset(self._loopback)

    async def connect(self, guest_port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self._check_awake()
        if not 1 <= guest_port <= 65535:
            raise InvalidArgs("guest_port must be between 1 and 65535", field="guest_port")
        if guest_port in self._host_ports():
            # connecting there would reach the host's own listeners (the gate, or a lane back into itself)
            raise Refused(f"port {guest_port} of rig {self.spec.rig_id} is held by the host, not a program in it")
        try:
            sock = await self.netns.connect(guest_port)
        except OSError as exc:
            raise Unavailable(f"nothing listens on port {guest_port} in rig {self.spec.rig_id}") from exc
        return await asyncio.open_connection(sock=sock)

    async def _guest_port(self, guest_port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A forward's connection: straight into the namespace (the host's own listeners are not in it)."""
        return await asyncio.open_connection(sock=await self.netns.connect(guest_port))

    async def serve_loopback(
        self, guest_port: int, handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
    ) -> None:
        self._check_live()
        if not 1 <= guest_port <= 65535:
            raise InvalidArgs("guest_port must be between 1 and 65535", field="guest_port")
        if guest_port in self._host_ports():
            raise Conflict(f"port {guest_port} of rig {self.spec.rig_id} is already served by the host")

        async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if len(self._loopback_tasks) >= MAX_LOOPBACK_CONNECTIONS:
                log.warning(
                    "rig %s: a lane connection refused, %d are open", self.spec.rig_id, len(self._loopback_tasks)
                )
                writer.close()
                return
            task = asyncio.current_task()
            assert task is not None
            self._loopback_tasks.add(task)
            try:
                await handler(reader, writer)
            except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, OSError):
                pass
            except Exception:
                log.exception("rig %s: the lane on loopback port %d failed", self.spec.rig_id, guest_port)
            finally:
                self._loopback_tasks.discard(task)
                writer.close()

        servers: list[asyncio.AbstractServer] = []
        try:
            for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
                try:
                    sock = await self.netns.listen(family, address, guest_port)
                except OSError as exc:
                    if family == socket.AF_INET6 and exc.errno == errno.EADDRNOTAVAIL:
                        continue  # a namespace without IPv6 loopback: IPv4 is what the lanes' names resolve to
                    if exc.errno == errno.EADDRINUSE:
                        raise Conflict(f"port {guest_port} is taken inside rig {self.spec.rig_id}") from exc
                    raise
                servers.append(await asyncio.start_server(guarded, sock=sock))
        except BaseException:
            for server in servers:
                server.close()
            raise
        self._loopback[guest_port] = servers

    async def set_local_names(self, names: frozenset[str]) -> None:
        self._check_live()
        self.gate.set_local_names(names)

    async def _close_loopback(self) -> None:
        for servers in self._loopback.values():
            for server in servers:
                server.close()
        self._loopback.clear()
        for task in list(self._loopback_tasks):
            task.cancel()

    async def open_server_door(self, endpoint: str) -> str:
        target = DoorTarget.from_url(endpoint)
        path = urlsplit(endpoint).path
        async with self._door_lock:
            self._check_live()
            if self._door_opens == 0:
                await self.gate.open_server_door(target, self.netns.socket)
                try:
                    await self.netns.apply(server_door_rules(self.gate.ports))
                except BaseException:
                    await self.gate.close_server_door()
                    raise
            self._door_opens += 1
        return f"http://{GATE_ADDRESS}:{self.gate.ports.server_door}{path}"

    async def close_server_door(self) -> None:
        async with self._door_lock:
            if self._door_opens == 0:
                return
            self._door_opens -= 1
            if self._door_opens:
                return
            if self.alive():
                with contextlib.suppress(Internal):
                    await self.netns.apply(server_door_removal())
            await self.gate.close_server_door()

    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        self._check_awake()
        fs.split_guest_path(guest_path)  # refuses relative paths and ``..`` before the rig sees them
        if not isinstance(data, bytes | bytearray) and not hasattr(data, "__aiter__"):
            raise InvalidArgs("data must be bytes or an async iterator of bytes", field="data")
        # Written by the rig's agent, as the rig user, in the rig's own view: the kernel's permission checks
        # decide, never the server's authority.
        await self.channel.write_file(guest_path, data, exclusive=exclusive)

    async def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        self._check_awake()  # files go through the rig's agent, which a parked rig has frozen
        fs.split_guest_path(guest_path)
        async for chunk in self.channel.read_file(guest_path):
            yield chunk

    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def wait_dead(self) -> None:
        if self._proc is not None:
            await self._proc.wait()

    async def aclose(self) -> None:
        if self._teardown is None:
            self._closed = True
            self._teardown = asyncio.ensure_future(self._destroy())
        await asyncio.shield(self._teardown)  # a second caller waits for the first teardown to finish

    async def _destroy(self) -> None:
        steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("stop the browser engine", self._stop_engine),
            ("stop the desktop", self._stop_desktop),
            ("count dropped packets", self._report_dropped),
            ("kill processes", self._kill),
            ("close terminals", self._close_ptys),
            ("stop loopback lanes", self._close_loopback),
            ("stop forwards", self.forwards.aclose),
            ("stop the egress gate", self.gate.aclose),
            ("remove the disk", self._remove),
        ]
        try:
            for what, step in steps:
                try:
                    await step()
                except Exception:  # one failed step must not leave the rest running
                    log.exception("rig %s: could not %s", self.spec.rig_id, what)
        finally:
            if self.pack is not None:
                self.pack.release()  # an older version nobody else holds can go now

    async def _stop_engine(self) -> None:
        if self.engine is not None:
            await self.engine.aclose(graceful=not self._parked and self.alive())

    async def _stop_desktop(self) -> None:
        if self.desktop_session is not None:
            await self.desktop_session.aclose()

    async def _report_dropped(self) -> None:
        if self._netns_made and self.alive():
            dropped = await self.netns.dropped_packets()
            if dropped:
                log.warning("rig %s: %d non-TCP/UDP packets dropped by its filter", self.spec.rig_id, dropped)

    async def _kill(self) -> None:
        if self._cgroup_made:
            await asyncio.to_thread(self.cgroup.kill_all)
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        if self._proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._proc.wait(), 5)

    async def _close_ptys(self) -> None:
        for pty in list(self._ptys):
            await pty.aclose()

    def _close_tree(self) -> None:
        if self._tree_fd is not None:
            os.close(self._tree_fd)
            self._tree_fd = None

    async def _remove(self) -> None:
        self._close_tree()
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
        if self._log_task is not None:
            with contextlib.suppress(TimeoutError, OSError):  # its processes are dead: the pipe ends at once
                await asyncio.wait_for(self._log_task, LOG_WAIT_S)
        if self._cgroup_made:
            await asyncio.to_thread(self.cgroup.remove)
        self.netns.close()
        await asyncio.to_thread(disks.detach, self.run_dir / "disk")
        await asyncio.to_thread(shutil.rmtree, self.run_dir, True)


def _seccomp_fd() -> int | None:
    bpf = seccomp.host_program()
    if bpf is None:
        log.warning("no seccomp filter for this architecture; rigs may create user namespaces")
        return None
    return launch.data_fd("hangar-rig-seccomp", bpf)


def _read_info(fd: int) -> dict[str, int] | None:
    data = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        with contextlib.suppress(ValueError):
            parsed = json.loads(data)
            if isinstance(parsed, dict) and "child-pid" in parsed:
                return parsed
            return None
