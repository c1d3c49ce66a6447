"""Ports and files of real rigs: a web server inside reached through a forwarded host port (a forward relaying at
most its cap of connections at once), listening ports, and file access confined to the rig (no symlink or ``..``
escapes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from hangar.errors import Conflict, InvalidArgs, NotFound, Refused
from hangar.rigs.backends.enclosure import GUEST_WORKTREE, EnclosureRig
from hangar.rigs.loopback import claim
from tests.integration.rigs_enclosure_env import running_rig, spec
from tests.support.ports import free_port

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]


async def start_web_server(rig: EnclosureRig, port: int) -> None:
    await rig.exec(
        f"mkdir -p ~/site && echo 'served from inside the rig' > ~/site/index.txt && cd ~/site && "
        f"nohup python3 -m http.server {port} --bind 127.0.0.1 >/tmp/http.log 2>&1 &",
        timeout_s=10,
    )
    for _ in range(100):
        if port in await rig.listening_ports():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the web server did not start")


async def test_a_forward_relays_at_most_its_cap_of_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hangar.rigs.backends.enclosure.forwards.MAX_CONNECTIONS", 4, raising=False)
    async with running_rig() as rig:
        guest_port = free_port()
        await start_web_server(rig, guest_port)
        host_port = await rig.forward(guest_port, "0.0.0.0", None)  # shared: anyone on the network may connect
        # At the cap: four connections relayed (the web server inside answers each).
        held = [await asyncio.open_connection("127.0.0.1", host_port) for _ in range(4)]
        # One past it: closed at once, not relayed.
        reader, writer = await asyncio.open_connection("127.0.0.1", host_port)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        for held_reader, held_writer in held:
            held_writer.write(b"GET /index.txt HTTP/1.0\r\n\r\n")
            answer = await asyncio.wait_for(held_reader.read(), 10)
            assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"served from inside the rig\n")
            held_writer.close()
        await rig.exec("pkill -f http.server", timeout_s=10)


async def test_web_server_inside_reached_through_forwarded_ports() -> None:
    async with running_rig() as rig:
        assert await rig.listening_ports() == []  # the gate's own listeners are not the guest's
        guest_port = free_port()
        await start_web_server(rig, guest_port)
        assert await rig.listening_ports() == [guest_port]
        own = claim()  # the rig's own loopback address, where a forward may keep the guest's port number
        try:
            host_port = await rig.forward(guest_port, own.address, guest_port)
            assert host_port == guest_port
            async with httpx.AsyncClient() as client:
                reply = await client.get(f"http://{own.address}:{host_port}/index.txt")
                assert reply.text == "served from inside the rig\n"
                # the number is taken on that address now: the caller falls back to an OS-assigned port there
                with pytest.raises(Conflict):
                    await rig.forward(guest_port, own.address, host_port)
                other = await rig.forward(guest_port, own.address, None)
                assert other != host_port
                assert (await client.get(f"http://{own.address}:{other}/index.txt")).status_code == 200
                # the host's loopback and every interface (shared on the local network): OS-assigned only
                for shared in ("127.0.0.1", "0.0.0.0"):
                    with pytest.raises(InvalidArgs) as err:
                        await rig.forward(guest_port, shared, guest_port)
                    assert err.value.field == "host_port" and "OS-assigned" in err.value.message
                lan = await rig.forward(guest_port, "0.0.0.0", None)
                assert lan not in (host_port, other)
                assert (await client.get(f"http://127.0.0.1:{lan}/index.txt")).status_code == 200
                await rig.unforward(host_port)
                await rig.unforward(host_port)  # unknown now: ignored
                with pytest.raises(httpx.ConnectError):
                    await client.get(f"http://{own.address}:{host_port}/index.txt")
        finally:
            own.release()
        for elsewhere in ("192.0.2.1", "127.0.0.2", "::1"):
            with pytest.raises(InvalidArgs) as err:
                await rig.forward(guest_port, elsewhere, None)
            assert err.value.field == "host"
        await rig.exec("pkill -f http.server", timeout_s=10)


async def test_files_land_in_the_rig_and_escapes_are_refused(tmp_path: Path) -> None:
    home, worktree = tmp_path / "home", tmp_path / "worktree"
    worktree.mkdir()
    (worktree / "README").write_text("the worktree\n")
    async with running_rig(spec(home=home, worktree=worktree)) as rig:
        await rig.write_file("/home/rig/drops/a.txt", b"dropped", exclusive=True)

        async def chunks() -> object:
            for part in (b"big ", b"file"):
                yield part

        await rig.write_file("/home/rig/drops/b.bin", chunks(), exclusive=True)  # type: ignore[arg-type]
        assert (home / "drops" / "a.txt").read_bytes() == b"dropped"  # the home is the host's directory
        out = await rig.exec(f"stat -c '%U %s' ~/drops/a.txt; cat ~/drops/b.bin; cat {GUEST_WORKTREE}/README",
                             timeout_s=10)  # fmt: skip
        assert out.stdout == "rig 7\nbig filethe worktree\n"
        # the worktree stays the host's (root-owned) yet the rig user can change it
        edit = await rig.exec(f"cd {GUEST_WORKTREE} && echo edited >> README && mkdir -p src && echo new > src/n.txt",
                              timeout_s=10)  # fmt: skip
        assert edit.exit_code == 0, edit.stderr
        assert (worktree / "README").read_text() == "the worktree\nedited\n"
        assert (worktree / "src" / "n.txt").read_text() == "new\n"
        assert worktree.stat().st_uid == 0 and (worktree / "README").stat().st_uid == 0
        with pytest.raises(Conflict):
            await rig.write_file("/home/rig/drops/a.txt", b"again", exclusive=True)
        await rig.exec("echo made inside > /tmp/inner.txt", timeout_s=10)
        assert b"".join([c async for c in rig.read_file("/tmp/inner.txt")]) == b"made inside\n"
        # Symlinks the rig plants lead only where the rig user could go anyway: files are opened by the rig's
        # agent, as the rig user, inside the rig's own root.
        await rig.exec("ln -s /etc/shadow ~/shadow; ln -s / ~/rootlink; ln -s ../../.. ~/up", timeout_s=10)
        for path in ("/home/rig/shadow", "/etc/shadow"):  # root-only in the image; the link itself is not followed
            with pytest.raises(Refused):
                _ = [c async for c in rig.read_file(path)]
        inside = (await rig.exec("cat /etc/passwd", timeout_s=10)).stdout.encode()
        for path in ("/home/rig/rootlink/etc/passwd", "/home/rig/up/etc/passwd"):
            assert b"".join([c async for c in rig.read_file(path)]) == inside  # the rig's file, not the host's
            with pytest.raises(Refused):
                await rig.write_file(path, b"x", exclusive=False)  # not the rig user's to write
        with pytest.raises(Refused):
            await rig.write_file("/home/rig/../../etc/passwd", b"x", exclusive=False)
        with pytest.raises(NotFound):
            _ = [c async for c in rig.read_file("/home/rig/missing.txt")]
        assert not (tmp_path / "etc").exists()
