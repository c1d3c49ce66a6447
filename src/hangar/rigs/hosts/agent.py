"""The rig host's own side (``hangar rig-host``): it dials each server it serves (``wire``), runs the rigs they
place on it in enclosures on this machine, and answers their requests.

It holds no database and no secret of the servers: only its credential, the rigs it runs (each belongs to the
server that placed it) and their homes under ``<dataDir>/rigs``. Its budget (``--memory-budget``) is the last word:
a start that would pass it is refused, whichever server asks. When a server's link is lost it dials again every
``REDIAL_S``; its rigs for that server wait ``registry.LEASE_S`` (the server waits as long), then it closes them,
since the server has failed them by then. A server that refuses its credential (revoked, unknown) ends it:
``CredentialRefused``, said in the log, exit 1.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from hangar.core.beneath import remove_path
from hangar.core.ids import is_id
from hangar.errors import HangarError, InvalidArgs, NotFound, Refused
from hangar.rigs.backends.base import RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.capabilities import Pty
from hangar.rigs.hosts import streams, wire
from hangar.rigs.hosts.registry import LEASE_S
from hangar.rigs.hosts.streams import Credit, Inbox, StreamLane

log = logging.getLogger(__name__)

REDIAL_S = 1.0


class CredentialRefused(Exception):
    """A server refused this rig host's credential; the message says why."""


@dataclass
class HostedRig:
    handle: RigHandle
    server: str
    home: Path
    watcher: asyncio.Task[None] | None = None


@dataclass
class Upload:
    """A file being written into a rig: chunks handed to the rig's writer as they come."""

    queue: asyncio.Queue[bytes | None]
    task: asyncio.Task[None]

    async def put(self, item: bytes | None) -> None:
        """Hand ``item`` over, or raise the writer's error if it ended first."""
        put = asyncio.ensure_future(self.queue.put(item))
        await asyncio.wait({put, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if not put.done():
            put.cancel()
            await self.task  # it ended without taking the chunk: its error says why
            raise Refused("the rig stopped taking the file")


@dataclass
class Download:
    """A file being read from a rig, served in chunks of at most ``wire.FILE_CHUNK``."""

    chunks: AsyncIterator[bytes]
    pending: bytes = b""


@dataclass
class ServerLink:
    url: str
    conn: websockets.ClientConnection | None = None
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ptys: dict[int, Pty] = field(default_factory=dict)
    uploads: dict[int, Upload] = field(default_factory=dict)
    downloads: dict[int, Download] = field(default_factory=dict)
    streams: dict[int, StreamLane] = field(default_factory=dict)
    credits: dict[int, Credit] = field(default_factory=dict)  # each terminal's output window
    inputs: dict[int, Inbox] = field(
        default_factory=dict
    )  # each terminal's keystrokes, written as the shell takes them
    pumps: set[asyncio.Task[None]] = field(default_factory=set)  # each terminal's output sender
    welcomed: bool = False  # the server took the current link (a turned-away dial does not count)

    async def drop_files(self) -> None:
        """The link ended: files under way are abandoned."""
        for upload in self.uploads.values():
            upload.task.cancel()
        for download in self.downloads.values():
            with contextlib.suppress(Exception):
                await download.chunks.aclose()  # type: ignore[attr-defined]
        self.uploads.clear()
        self.downloads.clear()
        for lane in list(self.streams.values()):
            lane.end()
        self.streams.clear()
        for pump in self.pumps:  # one waiting for a window the link will never give
            pump.cancel()
        self.credits.clear()
        for inbox in self.inputs.values():
            inbox.task.cancel()
        self.inputs.clear()

    async def send_event(self, body: dict[str, Any]) -> None:
        await self.send(wire.dumps(body))

    async def send(self, data: str | bytes) -> None:
        """Send a text message (in pieces when it is long: ``wire.message_frames``) or a terminal frame."""
        if self.conn is None:
            return
        frames = [data] if isinstance(data, bytes) else wire.message_frames(data)
        async with self.send_lock:  # a long message's pieces go one after the other
            with contextlib.suppress(websockets.ConnectionClosed):
                for one in frames:
                    await self.conn.send(one)


class RigHostAgent:
    def __init__(self, servers: list[str], credential: str, data_dir: Path, budget_mb: int, backend: RigBackend):
        self.servers = [ServerLink(url.rstrip("/")) for url in servers]
        self.credential = credential
        self.homes = data_dir / "rigs" / "homes"
        self.budget_mb = budget_mb
        self.backend = backend
        self.rigs: dict[str, HostedRig] = {}
        self._channels = 0
        self._refused: str | None = None  # why a server refused the credential, as it said

    async def run(self) -> None:
        """Serve every server until stopped (cancelled) or refused (``CredentialRefused``)."""
        self.homes.mkdir(parents=True, exist_ok=True)
        tasks = [asyncio.create_task(self._serve(link), name=f"rig-host:{link.url}") for link in self.servers]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(self._close(rig_id) for rig_id in list(self.rigs)), return_exceptions=True)
            await self.backend.aclose()

    # -- one server ------------------------------------------------------------------------------------------

    def _socket_url(self, url: str) -> str:
        scheme, _, rest = url.partition("://")
        return ("wss" if scheme == "https" else "ws") + "://" + rest + wire.PATH

    async def _serve(self, link: ServerLink) -> None:
        loop = asyncio.get_running_loop()
        lost_at: float | None = None
        while True:
            try:
                async with websockets.connect(
                    self._socket_url(link.url),
                    additional_headers={"Authorization": f"Bearer {self.credential}"},
                    max_size=wire.FRAME_MAX,
                ) as conn:
                    link.conn = conn
                    await self._session(link, conn, self._hello(link))
            except CredentialRefused:
                raise
            except (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed, TimeoutError) as exc:
                if lost_at is None:
                    log.warning("rig host: the link to %s is down (%s); dialling again", link.url, exc)
            finally:
                link.conn = None
                for pty in link.ptys.values():
                    await pty.aclose()
                link.ptys.clear()
                await link.drop_files()
            if link.welcomed:  # the server took this link: its rigs' lease starts from its loss now
                link.welcomed, lost_at = False, None
            lost_at = lost_at if lost_at is not None else loop.time()
            if loop.time() - lost_at > LEASE_S:
                for rig_id in self._of(link):
                    log.warning("rig host: %s stayed away past %.0f s; closing its rig %s", link.url, LEASE_S, rig_id)
                    await self._close(rig_id)
            await asyncio.sleep(REDIAL_S)

    def _hello(self, link: ServerLink) -> str:
        return wire.dumps({"event": "hello", "memoryBudgetMb": self.budget_mb, "rigs": sorted(self._of(link))})

    async def _session(self, link: ServerLink, conn: websockets.ClientConnection, hello: str) -> None:
        beat = asyncio.create_task(self._beat(link))
        running: set[asyncio.Task[None]] = set()
        # A refusal may close the socket before the hello is sent: what the server said is read all the same.
        with contextlib.suppress(websockets.ConnectionClosed):
            await conn.send(hello)
        try:
            await self._read(link, conn, running)
        except websockets.ConnectionClosed:
            pass  # the close code says below whether it was a refusal
        finally:
            beat.cancel()
            for task in running:
                task.cancel()
        if self._refused is not None or conn.close_code == wire.CLOSE_REFUSED:
            raise CredentialRefused(self._refused or "the server refused this rig host's credential")
        log.warning("rig host: the link to %s closed (%s); dialling again", link.url, conn.close_code)

    async def _read(
        self, link: ServerLink, conn: websockets.ClientConnection, running: set[asyncio.Task[None]]
    ) -> None:
        """Serve the server's frames until its socket closes: requests answered as tasks of their own."""
        pieces = wire.Pieces()
        async for message in conn:
            if isinstance(message, bytes):
                channel, data = wire.unframe(message)
                if channel == wire.PART_CHANNEL:
                    text = pieces.add(data)
                    if text is None:
                        continue
                    message = text
                else:
                    if (lane := link.streams.get(channel)) is not None:
                        lane.deliver(data)
                    elif (inbox := link.inputs.get(channel)) is not None:
                        inbox.deliver(data)  # never waits: a shell that does not read holds up only its terminal
                    continue
            body = json.loads(message)
            if body.get("event") == "welcome":
                link.welcomed = True
                taken = body.get("memoryBudgetMb", self.budget_mb)
                capped = f" ({body['capped']})" if body.get("capped") else ""
                said = "rig host: connected to %s as %r (a budget of %s MB%s, %d rigs)"
                log.warning(said, link.url, body.get("name"), taken, capped, len(self._of(link)))
            elif body.get("event") == "busy":
                log.warning("rig host: %s: %s; dialling again", link.url, body.get("message"))
            elif body.get("event") == "ptyAck":
                if (credit := link.credits.get(int(body["channel"]))) is not None:
                    credit.give(int(body["bytes"]))
            elif body.get("event") in streams.EVENTS:
                if (lane := link.streams.get(int(body["channel"]))) is not None:
                    lane.on_event(body)
            elif body.get("event") == "refused":
                self._refused = str(body.get("message") or "the server refused this rig host's credential")
            elif "id" in body:
                task = asyncio.create_task(self._answer(link, body))
                running.add(task)
                task.add_done_callback(running.discard)

    async def _beat(self, link: ServerLink) -> None:
        while True:
            await asyncio.sleep(wire.BEAT_S)
            await link.send(wire.dumps({"event": "beat"}))

    async def _answer(self, link: ServerLink, body: dict[str, Any]) -> None:
        try:
            reply: dict[str, Any] = {"re": body["id"], "ok": await self._do(link, str(body.get("op")), body)}
        except HangarError as err:
            reply = {"re": body["id"], "error": err.to_dict()}
        except Exception:
            log.exception("rig host: %s failed", body.get("op"))
            reply = {"re": body["id"], "error": {"code": "internal", "message": "the rig host failed; see its log"}}
        text = wire.dumps(reply)
        if len(text) > wire.MAX_MESSAGE:  # (ASCII: json escapes the rest) too long for the link: say so instead
            said = Refused(
                f"the answer to {body.get('op')} is {len(text) // 2**20} MiB, more than a rig host's link carries "
                f"({wire.MAX_MESSAGE // 2**20} MiB): ask for less output"
            )
            text = wire.dumps({"re": body["id"], "error": said.to_dict()})
        await link.send(text)

    # -- the requests ----------------------------------------------------------------------------------------

    def _rig(self, link: ServerLink, body: dict[str, Any]) -> RigHandle:
        hosted = self.rigs.get(str(body.get("rig")))
        if hosted is None or hosted.server != link.url:
            raise NotFound(f"this rig host runs no rig {body.get('rig')!r} for this server")
        return hosted.handle

    async def _do(self, link: ServerLink, op: str, body: dict[str, Any]) -> dict[str, Any]:
        if op == "start":
            await self._start(link, body.get("spec") or {})
            return {}
        if op == "ptyResize" or op == "ptyClose":
            pty = link.ptys.get(int(body["channel"]))
            if pty is None:
                raise NotFound("no such terminal")
            if op == "ptyResize":
                await pty.resize(int(body["cols"]), int(body["rows"]))
            else:
                link.ptys.pop(int(body["channel"]), None)
                await pty.aclose()
            return {}
        if op.startswith("file"):
            return await self._file(link, op, body)
        if op == "close":
            if str(body.get("rig")) in self.rigs:
                self._rig(link, body)
                await self._close(str(body["rig"]))
            return {}
        handle = self._rig(link, body)
        if op == "exec":
            timeout = body.get("timeoutS")
            result = await handle.exec(str(body["command"]), timeout_s=float(timeout) if timeout else None)
            return wire.result_body(result)
        if op == "park":
            await handle.park()
        elif op == "wake":
            await handle.wake()
        elif op == "residentMb":
            return {"mb": await handle.resident_mb()}
        elif op == "listeningPorts":
            return {"ports": await handle.listening_ports()}
        elif op == "streamOpen":
            return await self._open_stream(link, handle, body)
        elif op == "grantHosts":
            await handle.grant_hosts([str(h) for h in body.get("hosts") or []])
        elif op == "ptyOpen":
            pty = await handle.open_pty(int(body["cols"]), int(body["rows"]))
            channel = self._channel()
            link.ptys[channel] = pty
            link.credits[channel] = Credit()
            link.inputs[channel] = self._input(link, channel, pty)
            pump = asyncio.create_task(self._pump(link, channel, pty), name=f"rig-host:pty:{channel}")
            link.pumps.add(pump)
            pump.add_done_callback(link.pumps.discard)
            return {"channel": channel}
        else:
            raise InvalidArgs(f"a rig host does not know the request {op!r}")
        return {}

    async def _open_stream(self, link: ServerLink, handle: RigHandle, body: dict[str, Any]) -> dict[str, Any]:
        """A connection into the rig's port, relayed over a stream lane on the channel the server chose."""
        channel = body.get("channel")
        if not isinstance(channel, int) or not streams.SERVER_CHANNELS < channel < 1 << 32:
            raise InvalidArgs(f"a stream lane's channel is a number above {streams.SERVER_CHANNELS}", field="channel")
        if channel in link.streams:
            raise InvalidArgs(f"stream lane {channel} is open already", field="channel")
        if len(link.streams) >= streams.LANES_MAX:
            raise Refused(f"this rig host carries at most {streams.LANES_MAX} connections into rigs for one server")
        port = body.get("port")
        if not isinstance(port, int):
            raise InvalidArgs("port must be a number", field="port")
        lane = StreamLane(channel, link.send, link.send_event)
        link.streams[channel] = lane  # held while connecting: counted, and a streamEnd meanwhile is heard
        try:
            guest = await handle.connect(port)
        except BaseException:
            link.streams.pop(channel, None)
            raise
        lane.start(guest, lambda: link.streams.pop(channel, None) if link.streams.get(channel) is lane else None)
        return {}

    def _channel(self) -> int:
        self._channels += 1
        return self._channels

    async def _file(self, link: ServerLink, op: str, body: dict[str, Any]) -> dict[str, Any]:
        if op == "fileWrite":
            handle = self._rig(link, body)
            queue: asyncio.Queue[bytes | None] = asyncio.Queue(4)

            async def source() -> AsyncIterator[bytes]:
                while (chunk := await queue.get()) is not None:
                    yield chunk

            writing = handle.write_file(str(body["path"]), source(), exclusive=bool(body.get("exclusive")))
            channel = self._channel()
            link.uploads[channel] = Upload(queue, asyncio.create_task(writing, name=f"rig-host:file:{channel}"))
            return {"channel": channel}
        if op == "fileRead":
            handle = self._rig(link, body)
            channel = self._channel()
            link.downloads[channel] = Download(aiter(handle.read_file(str(body["path"]))))
            return {"channel": channel}
        channel = int(body["channel"])
        if op in ("fileChunk", "fileEnd"):
            upload = link.uploads.get(channel)
            if upload is None:
                raise NotFound("no such file under way")
            if op == "fileChunk":
                await upload.put(base64.b64decode(str(body["data"])))
                return {}
            link.uploads.pop(channel, None)
            if body.get("abandon"):
                upload.task.cancel()
                await asyncio.gather(upload.task, return_exceptions=True)
                return {}
            await upload.put(None)
            await upload.task
            return {}
        download = link.downloads.get(channel)
        if download is None:
            raise NotFound("no such file under way")
        if op == "fileDone":
            link.downloads.pop(channel, None)
            with contextlib.suppress(Exception):
                await download.chunks.aclose()  # type: ignore[attr-defined]
            return {}
        if not download.pending:
            try:
                download.pending = await anext(download.chunks)
            except StopAsyncIteration:
                link.downloads.pop(channel, None)
                return {"eof": True}
            except BaseException:
                link.downloads.pop(channel, None)
                raise
        piece, download.pending = download.pending[: wire.FILE_CHUNK], download.pending[wire.FILE_CHUNK :]
        return {"data": base64.b64encode(piece).decode()}

    def _of(self, link: ServerLink) -> list[str]:
        return [r for r, hosted in self.rigs.items() if hosted.server == link.url]

    def held_mb(self) -> int:
        return sum(h.handle.spec.memory_mb for h in self.rigs.values())

    async def _start(self, link: ServerLink, spec: dict[str, Any]) -> None:
        rig_id, need = str(spec["rigId"]), int(spec["memoryMb"])
        # Whoever sends a start (a server, or anyone between it and this host) names the rig's home by its id:
        # only the shape of an id may become a folder name.
        for name in ("rigId", "workspaceId"):
            if not is_id(spec.get(name)):
                raise InvalidArgs(f"{name} must be a record id", field=name)
        if spec.get("surface") != "terminal":
            raise Refused("a rig host runs terminal rigs only")
        if rig_id in self.rigs:
            raise Refused(f"rig {rig_id} runs here already")
        held = self.held_mb()
        if held + need > self.budget_mb:
            raise Refused(
                f"this rig host's memory budget (--memory-budget {self.budget_mb} MB) cannot hold another {need} MB "
                f"rig: {held} MB are held"
            )
        home = self.homes / rig_id
        if home.parent != self.homes:
            raise InvalidArgs("rigId must be a record id", field="rigId")
        home.mkdir(parents=True, exist_ok=True)
        rig_spec = RigSpec(
            rig_id=rig_id,
            workspace_id=str(spec["workspaceId"]),
            surface="terminal",
            memory_mb=need,
            vcpus=int(spec["vcpus"]),
            allow_hosts=frozenset(str(h) for h in spec.get("allowHosts") or []),
            home_dir=home,
            worktree=None,  # a space's files stay on the server's host (README, Rig hosts)
            disk_mb=int(spec["diskMb"]),
        )
        try:
            handle = await self.backend.start(rig_spec, lambda text: log.info("rig host: rig %s: %s", rig_id, text))
        except BaseException:
            await asyncio.to_thread(remove_path, home)
            raise
        hosted = HostedRig(handle, link.url, home)
        self.rigs[rig_id] = hosted
        hosted.watcher = asyncio.create_task(self._watch(rig_id, hosted), name=f"rig-host:watch:{rig_id}")
        log.warning("rig host: rig %s started for %s (%d MB)", rig_id, link.url, need)

    async def _watch(self, rig_id: str, hosted: HostedRig) -> None:
        await hosted.handle.wait_dead()
        if self.rigs.get(rig_id) is hosted:
            log.warning("rig host: rig %s died underneath", rig_id)
            for link in self.servers:
                if link.url == hosted.server:
                    await link.send(wire.dumps({"event": "rigDied", "rig": rig_id}))
            await self._close(rig_id)

    def _input(self, link: ServerLink, channel: int, pty: Pty) -> Inbox:
        """Keystrokes for ``pty``: written by a task of their own, acknowledged to the server (``ptyAck``), whose
        window holds them; past it the terminal is closed."""

        async def ack(count: int) -> None:
            await link.send_event({"event": "ptyAck", "channel": channel, "bytes": count})

        async def end() -> None:
            with contextlib.suppress(HangarError):
                await pty.aclose()  # its pump then says ptyEnd

        return Inbox(pty.write, ack, end)

    async def _pump(self, link: ServerLink, channel: int, pty: Pty) -> None:
        """The terminal's output to the server, never more than its window ahead of what the server read."""
        credit = link.credits[channel]
        with contextlib.suppress(HangarError):
            while data := await pty.read():
                for start in range(0, len(data), streams.CHUNK):
                    piece = data[start : start + streams.CHUNK]
                    await credit.take(len(piece))
                    await link.send(wire.frame(channel, piece))
        link.credits.pop(channel, None)
        if (inbox := link.inputs.pop(channel, None)) is not None:
            inbox.task.cancel()
        if link.ptys.pop(channel, None) is not None:
            await link.send(wire.dumps({"event": "ptyEnd", "channel": channel}))

    async def _close(self, rig_id: str) -> None:
        hosted = self.rigs.pop(rig_id, None)
        if hosted is None:
            return
        current = asyncio.current_task()
        if hosted.watcher is not None and hosted.watcher is not current:
            hosted.watcher.cancel()
        try:
            await hosted.handle.aclose()
        finally:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(remove_path, hosted.home)
        log.warning("rig host: rig %s closed", rig_id)
