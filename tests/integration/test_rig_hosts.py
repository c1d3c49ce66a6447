"""``hangar rig-host`` processes running rigs for a server: placement on a rig host when the server's own budget is
full (or by the setting), exec and the terminal lane carried through the server, placement refused naming every
budget when no host has room, a rig host killed -9 and its rigs failed with an event within the lease, and rig
host credentials refused when revoked or made up and on the RPC socket, ``/metrics`` and ``/mcp``.

Real processes: the server (in this process, on loopback, on real enclosures) and ``hangar rig-host`` processes,
each on a data directory of its own (as on another machine) and dialling the server; real RPC and terminal
clients; kill -9.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
import websockets

from hangar.core.ids import new_id
from hangar.errors import Refused
from hangar.rigs.backends.base import RigSpec
from hangar.rigs.hosts import registry, wire
from hangar.rigs.hosts.tables import rig_host_credentials, rig_placements
from tests.integration.rigs_enclosure_env import PACKS
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_rigs_ops_files import code, drop, lane_path, read
from tests.integration.test_rigs_ops_terminal import read_until, terminal_url
from tests.support.disks import detach_disks
from tests.support.processes import HANGAR, cli
from tests.support.rpc import RpcClient, RpcError

pytestmark = [pytest.mark.packs("terminal"), pytest.mark.slow]

BOUND_S = 120.0  # a bound against hangs only


def mint(env: RigsEnv, name: str, to: Path) -> str:
    """A rig host credential minted with the command line on the server's data directory; returns its id."""
    out = cli(env.srv.data_dir, "admin", "rig-host-credential", "create", "--name", name, "--to", str(to))
    assert oct(to.stat().st_mode & 0o777) == "0o600", out
    return to.read_text().strip().split("_")[1]  # hrh_<id>_<secret>


@contextlib.contextmanager
def rig_host(env: RigsEnv, credential: Path, log: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    with tempfile.TemporaryDirectory(prefix="hh-", dir="/tmp") as data, open(log, "w") as out:
        proc = subprocess.Popen(
            [
                HANGAR,
                "rig-host",
                "--server",
                env.srv.url,
                "--credential-file",
                str(credential),
                "--data-dir",
                data,
                *extra,
            ],
            env={**os.environ, "HANGAR_RIG_PACKS_DIR": str(PACKS)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            detach_disks(Path(data))  # a rig host killed -9 leaves its rigs' disks mounted (its next start clears them)


async def connected(env: RigsEnv, proc: subprocess.Popen[str], log: Path, count: int = 1) -> None:
    hosts = env.manager.opener.hosts
    assert hosts is not None
    async with asyncio.timeout(BOUND_S):
        while len(hosts.connected()) < count:
            assert proc.poll() is None, log.read_text()
            await asyncio.sleep(0.1)


def hosts_first(env: RigsEnv) -> None:
    cli(env.srv.data_dir, "admin", "setting", "rigs.hostsFirst", "true")


async def placements(env: RigsEnv) -> list[tuple[str, str, int, bool]]:
    p = rig_placements.c
    async with env.srv.ctx.dbs.server.connect() as conn:
        rows = (await conn.execute(sa.select(p.rig_id, p.host_id, p.memory_mb, p.ended_at))).all()
    return [(r.rig_id, r.host_id, r.memory_mb, r.ended_at is not None) for r in rows]


async def test_a_rig_placed_on_a_rig_host_when_the_server_is_full_exec_and_terminal_through_the_server(
    tmp_path: Path,
) -> None:
    async with rigs_server(tmp_path) as env:
        await env.client.call("rigs.setMemoryBudget", memoryBudgetMb=512)
        host_id = mint(env, "lab-1", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log", "--memory-budget", "1024") as proc:
            await connected(env, proc, tmp_path / "host.log")
            # The server's own budget holds one terminal rig (512 MB): the first goes here, the second to the host.
            here = await env.open()
            assert env.manager.live(env.ws, here).host_id is None
            there = await env.open(await env.new_space("second"))
            assert env.manager.live(env.ws, there).host_id == host_id
            assert (there, host_id, 512, False) in await placements(env)
            ran = await env.exec(there, "echo $((6*7)) $(id -un); cat /proc/self/cgroup | head -1")
            assert ran["exitCode"] == 0 and ran["stdout"].startswith("42 rig"), ran
            # The rig's home is on the rig host, not in the server's data directory.
            await env.exec(there, "echo from-the-host > ~/mark")
            assert not list(env.srv.data_dir.rglob("mark"))
            # The terminal lane through the server, to the PTY on the rig host.
            url = await terminal_url(env, there)
            headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
            async with websockets.connect(url + "&cols=90&rows=20", additional_headers=headers) as term:
                await term.send(b"echo pty-$((40+2)) $(cat ~/mark)\n")
                assert b"pty-42 from-the-host" in await read_until(term, b"pty-42 from-the-host")
                await term.send(b"stty size\n")
                assert b"20 90" in await read_until(term, b"20 90")
            # The files lane through the server: drops land on the rig host, and read back (bigger than a chunk).
            lane = await lane_path(env, there)
            big = os.urandom(3 * wire.FILE_CHUNK + 17)
            dropped = await drop(env, lane, [("a.txt", b"first"), ("big.bin", big), ("a.txt", b"second")])
            assert dropped.status_code == 200, dropped.text
            assert [f["path"] for f in dropped.json()["files"]] == [
                "/home/rig/drops/a.txt",
                "/home/rig/drops/big.bin",
                "/home/rig/drops/2-a.txt",
            ]
            seen = await env.exec(there, "cat ~/drops/a.txt ~/drops/2-a.txt; stat -c %s ~/drops/big.bin")
            assert seen["stdout"] == f"firstsecond{len(big)}\n"
            assert (await read(env, lane, "/home/rig/drops/big.bin")).content == big
            missing = await read(env, lane, "/home/rig/drops/none.txt")
            assert missing.status_code == 404 and code(missing) == "not_found"
            # The rig host's refusals come back as they are: a symlink planted in the rig leads nowhere.
            await env.exec(there, "ln -s /etc/shadow ~/link.txt && mv ~/drops ~/old && ln -s /srv/elsewhere ~/drops")
            linked = await read(env, lane, "/home/rig/link.txt")
            assert linked.status_code in (403, 404), linked.text
            planted = await drop(env, lane, [("planted.txt", b"x")])
            assert planted.status_code == 403 and code(planted) == "refused", planted.text
            # Closing it frees its room on the host, recorded in the database.
            await env.call("rig_close", rigId=there)
            assert (there, host_id, 512, True) in await placements(env)
            # By the setting, a rig goes to a rig host even while the server has room.
            await env.call("rig_close", rigId=here)
            hosts_first(env)
            third = await env.open(await env.new_space("third"))
            assert env.manager.live(env.ws, third).host_id == host_id


async def test_placement_refused_when_no_host_has_room(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        await env.client.call("rigs.setMemoryBudget", memoryBudgetMb=512)
        mint(env, "small", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log", "--memory-budget", "512") as proc:
            await connected(env, proc, tmp_path / "host.log")
            busy = [await env.open(), await env.open(await env.new_space("b"))]  # at the limit: both taken
            for rig in busy:  # in use, so nothing may be evicted to make room
                await env.call("rig.takeControl", rigId=rig)
            with pytest.raises(RpcError) as refused:
                await env.call("rig.open", space_id=await env.new_space("c"), surface="terminal")
            assert refused.value.code == "refused"
            message = refused.value.message
            assert "no host has room for another 512 MB rig" in message
            assert "rig host 'small' has 0 of its 512 MB free (its --memory-budget)" in message
            assert "rigs.memoryBudgetMb, 512 MB" in message
            # A second rig host with the same credential is turned away while the first is linked, and keeps dialling.
            with rig_host(env, tmp_path / "cred", tmp_path / "second.log") as second:
                async with asyncio.timeout(BOUND_S):
                    while (
                        "another rig host is connected with the credential 'small'"
                        not in (tmp_path / "second.log").read_text()
                    ):
                        assert second.poll() is None
                        await asyncio.sleep(0.1)
            hosts = env.manager.opener.hosts
            assert hosts is not None and [link.name for link in hosts.connected()] == ["small"]
            assert (await env.exec(busy[1], "echo still"))["stdout"] == "still\n"


async def test_a_rig_host_killed_fails_its_rigs_with_an_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "LEASE_S", 3.0)
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        mint(env, "doomed", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            assert env.manager.live(env.ws, rig).host_id is not None
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            async with asyncio.timeout(BOUND_S):
                while (row := await env.status(rig))["status"] != "failed":
                    await asyncio.sleep(0.2)
            assert "was lost and not back within 3 s" in row["statusDetail"], row
            closed = [e for e in await env.events("rigs.closed") if e["rigId"] == rig]
            assert closed and closed[0]["reason"] == "backendFailure", closed
            assert all(ended for (_r, _h, _m, ended) in await placements(env))


async def test_rig_host_credentials_refused(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        cred_id = mint(env, "revoked-later", tmp_path / "cred")
        async with env.srv.ctx.dbs.server.connect() as conn:
            stored = (await conn.execute(sa.select(rig_host_credentials.c.secret_hash))).scalar_one()
        text = (tmp_path / "cred").read_text().strip()
        assert stored != text and text.split("_", 2)[2] not in stored  # kept hashed
        # Scoped to rig hosting: refused on the RPC socket, /metrics and /mcp.
        async with RpcClient(env.srv.ws_url, text) as client:
            frame = await asyncio.wait_for(client.unsolicited.get(), 10)
            assert frame["error"]["code"] == "unauthenticated"
            async with asyncio.timeout(10):
                while client.close_code is None:
                    await asyncio.sleep(0.05)
            assert client.close_code == 4401
        async with httpx.AsyncClient() as http:
            headers = {"Authorization": f"Bearer {text}"}
            assert (await http.get(env.srv.url + "/metrics", headers=headers)).status_code == 401
            assert (await http.post(env.srv.url + "/mcp", headers=headers, json={})).status_code == 401
        # A connected host whose credential is revoked: refused, says so, exits 1, and its rigs fail at once.
        hosts_first(env)
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            cli(env.srv.data_dir, "admin", "rig-host-credential", "revoke", cred_id)
            assert await asyncio.to_thread(proc.wait, BOUND_S) == 1
            said = (tmp_path / "host.log").read_text()
            assert f"the rig host credential 'revoked-later' ({cred_id}) was revoked" in said, said
            async with asyncio.timeout(BOUND_S):
                while (await env.status(rig))["status"] != "failed":
                    await asyncio.sleep(0.2)
        # Started with the revoked credential, and with one made up: refused in one line, exit 1.
        with rig_host(env, tmp_path / "cred", tmp_path / "again.log") as proc:
            assert await asyncio.to_thread(proc.wait, BOUND_S) == 1
        again = (tmp_path / "again.log").read_text()
        assert "was revoked; stopping" in again and "connected to" not in again, again
        # A rig host credential's name: 100 characters accepted, 101 refused.
        long_name = cli(env.srv.data_dir, "admin", "rig-host-credential", "create", "--name", "n" * 101, check=False)
        assert long_name.returncode == 1 and "name is 1 to 100 characters" in long_name.stderr, long_name
        assert cli(env.srv.data_dir, "admin", "rig-host-credential", "create", "--name", "n" * 100).stdout.startswith(
            "hrh_"
        )
        listed = cli(env.srv.data_dir, "admin", "rig-host-credential", "list").stdout
        assert f"{cred_id}  revoked-later" in listed and "revoked 20" in listed
        # A device credential is no rig host credential.
        device = tmp_path / "device"
        device.write_text(env.srv.owner_token)
        with rig_host(env, device, tmp_path / "device.log") as proc:
            assert await asyncio.to_thread(proc.wait, BOUND_S) == 1
        assert "is not one hangar admin rig-host-credential create mints" in (tmp_path / "device.log").read_text()
        made_up = tmp_path / "made-up"
        made_up.write_text("hrh_00000000-0000-0000-0000-000000000000_" + "x" * 43 + "\n")
        with rig_host(env, made_up, tmp_path / "made-up.log") as proc:
            assert await asyncio.to_thread(proc.wait, BOUND_S) == 1
        assert "is not known to this database" in (tmp_path / "made-up.log").read_text()
        hosts = env.manager.opener.hosts
        assert hosts is not None and hosts.connected() == []


def test_rig_host_bad_input_refused_in_one_line(tmp_path: Path) -> None:
    """No server is needed to refuse: a URL that is not http(s), no credential, a budget under 512 MB."""
    cred = tmp_path / "cred"
    cred.write_text("hrh_unused")
    base = ["rig-host", "--credential-file", str(cred), "--data-dir", str(tmp_path / "h")]
    ftp = cli(tmp_path, *base, "--server", "ftp://example.org", check=False)
    assert ftp.returncode == 1 and "--server must be an http:// or https:// URL" in ftp.stderr, ftp
    bare = cli(tmp_path, "rig-host", "--server", "http://127.0.0.1:9", check=False)
    assert bare.returncode == 1 and "hangar rig-host needs a rig host credential" in bare.stderr, bare
    small = cli(tmp_path, *base, "--server", "http://127.0.0.1:9", "--memory-budget", "511", check=False)
    assert small.returncode == 2 and "--memory-budget" in small.stderr, small
    # The credential rides in the connection's headers: plain http only to this machine's own addresses.
    for far in ("http://hangar.example.org", "http://10.0.0.5:8080"):
        clear = cli(tmp_path, *base, "--server", far, check=False)
        assert clear.returncode == 1 and "in clear text" in clear.stderr and "https://" in clear.stderr, clear
    for near in ("http://localhost:9", "http://[::1]:9", "http://127.0.0.2:9"):
        local = cli(tmp_path, *base, "--server", near, "--memory-budget", "511", check=False)
        assert local.returncode == 2 and "in clear text" not in local.stderr, local  # got past the URL check


async def test_a_rig_host_back_within_its_lease_keeps_its_rigs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rig host frozen (SIGSTOP) until the server counts its link lost, then thawed: it dials again within the
    lease and its rig goes on, the same shell state and all."""
    monkeypatch.setattr(wire, "SILENCE_S", 4.0)
    monkeypatch.setattr(registry, "LEASE_S", 600.0)
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        mint(env, "napper", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            await env.exec(rig, "echo kept > ~/state")
            hosts = env.manager.opener.hosts
            assert hosts is not None
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                async with asyncio.timeout(BOUND_S):
                    while hosts.connected():
                        await asyncio.sleep(0.1)
            finally:
                os.kill(proc.pid, signal.SIGCONT)
            await connected(env, proc, tmp_path / "host.log")
            assert (await env.status(rig))["status"] == "ready"
            assert (await env.exec(rig, "cat ~/state"))["stdout"] == "kept\n"


def test_hosts_first_is_true_or_false(tmp_path: Path) -> None:
    refused = cli(tmp_path / "d", "admin", "setting", "rigs.hostsFirst", "1", check=False)
    assert refused.returncode == 2 and "rigs.hostsFirst must be true or false" in refused.stderr, refused
    assert cli(tmp_path / "d", "admin", "setting", "rigs.hostsFirst", "true").stdout.strip() == "true"


@pytest.mark.sqlite_only("two servers on records of their own, each set through its data directory's command line")
async def test_one_rig_host_serves_two_servers_within_its_own_budget(tmp_path: Path) -> None:
    """A rig host dials every server given; each server places on it, and the host's own budget binds them all
    (here the servers keep separate databases, so only the rig host knows what the other server placed)."""
    async with rigs_server(tmp_path / "a") as a, rigs_server(tmp_path / "b") as b:
        for env in (a, b):
            hosts_first(env)
        cred = tmp_path / "cred"
        mint(a, "shared", cred)
        # The same credential is known to both: minted on A, its row copied to B (as one database would hold it).
        async with a.srv.ctx.dbs.server.connect() as conn:
            row = (await conn.execute(sa.select(rig_host_credentials))).one()
        async with b.srv.ctx.dbs.server.begin() as conn:
            await conn.execute(rig_host_credentials.insert().values(**row._mapping))
        with rig_host(a, cred, tmp_path / "host.log", "--server", b.srv.url, "--memory-budget", "512") as proc:
            await connected(a, proc, tmp_path / "host.log")
            await connected(b, proc, tmp_path / "host.log")
            on_a = await a.open()
            assert a.manager.live(a.ws, on_a).host_id is not None
            with pytest.raises(RpcError) as refused:
                await b.open()
            assert "this rig host's memory budget (--memory-budget 512 MB) cannot hold another 512 MB rig" in (
                refused.value.message
            )
            await a.call("rig_close", rigId=on_a)
            on_b = await b.open()  # the room A gave back
            assert (await b.exec(on_b, "echo b"))["stdout"] == "b\n"


async def test_large_answers_cross_the_rig_host_link_in_frames_under_the_listener_cap(tmp_path: Path) -> None:
    """The server's listener closes any WebSocket whose message passes 256 KiB: an exec answer of several MiB
    (stdout and stderr) and file reads and drops larger than a chunk travel in frames under it, and the link stays
    up for the next request."""
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        mint(env, "wide", tmp_path / "cred")
        with rig_host(env, tmp_path / "cred", tmp_path / "host.log") as proc:
            await connected(env, proc, tmp_path / "host.log")
            rig = await env.open()
            assert env.manager.live(env.ws, rig).host_id is not None
            # 3 MiB of stdout and 1 MiB of stderr cross the link (rig.exec then keeps 1 MiB of each, flagged).
            command = "head -c 3145728 /dev/zero | tr '\\0' a; head -c 1048576 /dev/zero | tr '\\0' b >&2"
            big = await env.exec(rig, command)
            assert big["exitCode"] == 0 and big["truncated"] is True, {k: str(v)[:200] for k, v in big.items()}
            assert big["stdout"] == "a" * 1024 * 1024 and big["stderr"] == "b" * 1024 * 1024
            # An answer past what the link carries (9 MiB of control characters, six bytes each in JSON): refused
            # saying so, and the link stays.
            with pytest.raises(RpcError) as too_long:
                await env.exec(rig, "head -c 9437184 /dev/zero | tr '\\0' '\\1'")
            assert too_long.value.code == "refused", too_long.value
            assert "more than a rig host's link carries (48 MiB)" in too_long.value.message
            lane = await lane_path(env, rig)
            blob = os.urandom(5 * wire.FILE_CHUNK + 3)
            dropped = await drop(env, lane, [("blob.bin", blob)])
            assert dropped.status_code == 200, dropped.text
            assert (await read(env, lane, "/home/rig/drops/blob.bin")).content == blob
            assert (await env.exec(rig, "echo still"))["stdout"] == "still\n"
            hosts = env.manager.opener.hosts
            assert hosts is not None and len(hosts.connected()) == 1
            assert "said nothing" not in (tmp_path / "host.log").read_text()


async def test_a_rig_host_credential_caps_its_hosts_budget_and_names_the_workspaces_it_serves(tmp_path: Path) -> None:
    """A rig host says its own memory budget: the admin who mints its credential sets the most it may say
    (``--max-memory-budget``; a larger one is taken as that maximum) and may name the workspaces whose rigs it
    runs (``--workspace``); no rig of another workspace is placed on it. Rows minted before either existed keep
    working, with the default maximum and every workspace."""
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        other = await env.srv.new_workspace("other")
        base = ["admin", "rig-host-credential", "create", "--name"]
        # The maximum: 512 MB to 1 TB; a workspace named must exist.
        for budget in ("511", str(1024 * 1024 + 1)):
            out = cli(env.srv.data_dir, *base, "x", "--max-memory-budget", budget, check=False)
            assert out.returncode == 2 and "--max-memory-budget" in out.stderr, out
        unknown = cli(env.srv.data_dir, *base, "x", "--workspace", "00000000-0000-0000-0000-000000000000", check=False)
        assert unknown.returncode == 1 and "no workspace '00000000-0000-0000-0000-000000000000'" in unknown.stderr
        widest = cli(env.srv.data_dir, *base, "widest", "--max-memory-budget", str(1024 * 1024)).stdout
        assert widest.startswith("hrh_")
        cred = tmp_path / "cred"
        out = cli(
            env.srv.data_dir, *base, "capped", "--max-memory-budget", "512", "--workspace", env.ws, "--to", str(cred)
        )
        host_id = cred.read_text().strip().split("_")[1]
        listed = cli(env.srv.data_dir, "admin", "rig-host-credential", "list").stdout
        assert f"{host_id}  capped" in listed and f"at most 512 MB; workspaces {env.ws}" in listed, listed
        assert "widest" in listed and "at most 1048576 MB; every workspace" in listed, listed
        hosts = env.manager.opener.hosts
        assert hosts is not None
        # The host says more than its credential allows (one past): it is given the maximum.
        with rig_host(env, cred, tmp_path / "host.log", "--memory-budget", "513") as proc:
            await connected(env, proc, tmp_path / "host.log")
            assert [(r.host_id, r.budget_mb) for r in await hosts.rooms(env.ws)] == [(host_id, 512)]
            said = (tmp_path / "host.log").read_text()
            assert "a budget of 512 MB (it asked for 513 MB; its credential allows at most 512 MB)" in said, said
            first = await env.open()
            assert env.manager.live(env.ws, first).host_id == host_id
            second = await env.open(await env.new_space("second"))
            assert env.manager.live(env.ws, second).host_id is None  # the host is full at its credential's maximum
            # Another workspace's rig is never placed on it, room or not.
            await env.call("rig_close", rigId=first)
            assert await hosts.rooms(other) == []
            # Nor started there if a placement named it anyway: refused before anything is recorded or sent.
            room = registry.Room(host_id, "capped", 512, 512)
            spec = RigSpec(new_id(), other, "terminal", 512, 1, frozenset(), None, None)
            with pytest.raises(Refused, match=f"rig host 'capped' does not run rigs of workspace {other}"):
                await hosts.start(room, spec, lambda _said: None)
            assert spec.rig_id not in [r for (r, _h, _m, _e) in await placements(env)]
            space = (await env.client.call("spaces.create", workspace_id=other, title="elsewhere"))["id"]
            opened = await env.client.call("rig.open", workspace_id=other, space_id=space, surface="terminal")
            rig = str(opened["rigId"])
            async with asyncio.timeout(BOUND_S):
                while env.manager.live(other, rig).host_id is None and opened["phase"] != "ready":
                    rows = await env.client.call("rig_list", workspace_id=other)
                    if next(r for r in rows if r["rigId"] == rig)["status"] != "provisioning":
                        break
                    await asyncio.sleep(0.2)
            assert env.manager.live(other, rig).host_id is None
            assert all(ws != other for (ws,) in await placement_workspaces(env))
        # At the maximum: taken as said.
        with rig_host(env, cred, tmp_path / "at.log", "--memory-budget", "512") as proc:
            await connected(env, proc, tmp_path / "at.log")
            assert [(r.host_id, r.budget_mb) for r in await hosts.rooms(env.ws)] == [(host_id, 512)]
            assert "it asked for" not in (tmp_path / "at.log").read_text()
        # A credential row from before the maximum and the workspaces were kept (only the old columns written):
        # the defaults.
        old = tmp_path / "old"
        old_id = mint(env, "old", old)
        c = rig_host_credentials.c
        async with env.srv.ctx.dbs.server.begin() as conn:
            row = (await conn.execute(sa.select(c.id, c.name, c.secret_hash, c.created_at).where(c.id == old_id))).one()
            await conn.execute(sa.delete(rig_host_credentials).where(c.id == old_id))
            await conn.execute(
                sa.insert(rig_host_credentials).from_select(
                    ["id", "name", "secret_hash", "created_at"],
                    sa.select(
                        sa.literal(row.id),
                        sa.literal(row.name),
                        sa.literal(row.secret_hash),
                        sa.literal(row.created_at),
                    ),
                )
            )
        listed = cli(env.srv.data_dir, "admin", "rig-host-credential", "list").stdout
        assert f"{old_id}  old" in listed and "at most 12288 MB; every workspace" in listed, listed
        with rig_host(env, old, tmp_path / "old.log", "--memory-budget", "600") as proc:
            await connected(env, proc, tmp_path / "old.log")
            assert {r.host_id: r.budget_mb for r in await hosts.rooms(other)} == {old_id: 600}


async def placement_workspaces(env: RigsEnv) -> list[tuple[str]]:
    async with env.srv.ctx.dbs.server.connect() as conn:
        return [(r[0],) for r in (await conn.execute(sa.select(rig_placements.c.workspace_id))).all()]


async def test_the_rig_host_socket_takes_a_message_in_pieces_up_to_its_bound_and_ends_the_link_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that does not keep the wire's bounds: a frame past the listener's cap closes the socket (1009), and
    pieces past ``wire.MAX_MESSAGE`` end the link; pieces adding up to exactly the bound are one message, taken."""
    monkeypatch.setattr(wire, "SILENCE_S", 600.0)  # only the bound may end these links, never their silence
    async with rigs_server(tmp_path) as env:
        mint(env, "raw", tmp_path / "cred")
        headers = {"Authorization": f"Bearer {(tmp_path / 'cred').read_text().strip()}"}
        url = env.srv.url.replace("http://", "ws://") + wire.PATH
        hosts = env.manager.opener.hosts
        assert hosts is not None
        hello = wire.dumps({"event": "hello", "memoryBudgetMb": 512, "rigs": []})

        def pieces(total: int) -> list[bytes]:
            text = wire.dumps({"re": 10**9, "ok": {"pad": ""}})  # an answer to no request: ignored
            text = text.replace('""', '"' + "x" * (total - len(text)) + '"')
            step = wire.FRAME_MAX - 5
            return [
                struct.pack(">IB", wire.PART_CHANNEL, int(i + step >= total)) + text[i : i + step].encode()
                for i in range(0, total, step)
            ]

        async with websockets.connect(url, additional_headers=headers, max_size=None) as raw:
            await raw.send(hello)
            assert json.loads(await raw.recv())["memoryBudgetMb"] == 512
            for one in pieces(wire.MAX_MESSAGE):  # at the bound: one message, and the link goes on
                await raw.send(one)
            await raw.send(wire.dumps({"event": "beat"}))
            await asyncio.sleep(0.5)
            assert len(hosts.connected()) == 1 and raw.close_code is None
        async with asyncio.timeout(BOUND_S):
            while hosts.connected():
                await asyncio.sleep(0.1)
        async with websockets.connect(url, additional_headers=headers, max_size=None) as raw:
            await raw.send(hello)
            await raw.recv()
            with contextlib.suppress(websockets.ConnectionClosed):
                for one in pieces(wire.MAX_MESSAGE + 1):  # one byte past: the link ends
                    await raw.send(one)
            async with asyncio.timeout(BOUND_S):
                await raw.wait_closed()
        async with asyncio.timeout(BOUND_S):
            while hosts.connected():
                await asyncio.sleep(0.1)
        async with websockets.connect(url, additional_headers=headers, max_size=None) as raw:
            await raw.send(hello)
            await raw.recv()
            with contextlib.suppress(websockets.ConnectionClosed):
                await raw.send(b"\x00\x00\x00\x07" + b"x" * (wire.FRAME_MAX - 3))  # one frame past the cap
            async with asyncio.timeout(BOUND_S):
                await raw.wait_closed()
            assert raw.close_code == 1009
