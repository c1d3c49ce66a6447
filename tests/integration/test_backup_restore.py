"""``hangar admin backup`` and ``restore`` against a real running server, through the real command line.

A round trip from a server with workspaces, users, spaces, messages, a pipeline run, chat credentials and files
in a repository compares every table and every file after the restore, and a fresh server on the restored
directory signs the old credential in; a backup killed (-9) half way leaves no file at its name; a backup taken
while messages keep arriving restores to a state a server accepts with every message acknowledged before it
began, and so does one during which the server is killed (-9)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.backup.sqlite_source import workspace_ids
from hangar.core.datadir import DataDir
from hangar.rigs.devdomains.tls import dev_ca_pem
from tests.integration.test_chat_ops import APP, BOT, NO_TRANSPORT, P
from tests.integration.test_wire_timestamps import TEMPLATE
from tests.integration.test_workspace_repos import make_repo
from tests.support.disks import detach_disks
from tests.support.rpc import RpcClient
from tests.support.server import running_server

pytestmark = pytest.mark.sqlite_only(
    "its backups are of SQLite files, compared table by table with SQLite; "
    "test_backup_postgresql.py is the round trip on PostgreSQL"
)

HANGAR = str(Path(sys.executable).parent / "hangar")


def hangar(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HANGAR, "admin", *args], capture_output=True, text=True, env=env, timeout=600)


async def ahangar(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        HANGAR, "admin", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def tables_of(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}
    finally:
        conn.close()


def files_of(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every file, folder and symlink under ``root`` (without following any), with its mode and content."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(here) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", 0, os.fsencode(os.readlink(path)))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return out


def kept(data: Path, ids: list[str] | None = None) -> dict[str, tuple[str, int, bytes]]:
    """What a backup with files carries of ``data``: its secrets and settings files, the dev-domain CA, and each
    workspace's (``ids``, else those its server.db names) chat credentials, repositories, spaces and worktrees
    (databases are compared table by table)."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for name in ("secrets.json", "sign-in-origin"):
        if (data / name).exists():
            out[name] = ("file", stat.S_IMODE((data / name).stat().st_mode), (data / name).read_bytes())
    if (data / "rigs" / "tls").is_dir():
        for rel, what in files_of(data / "rigs" / "tls").items():
            if not rel.endswith((".lock", ".tmp")):
                out[f"rigs/tls/{rel}"] = what
    for ws in workspace_ids(DataDir(data)) if ids is None else ids:
        for tree in ("chat_credentials", "repos", "spaces", "worktrees"):
            if (data / ws / tree).is_dir():
                for rel, what in files_of(data / ws / tree).items():
                    if not rel.startswith(".staging") and not rel.endswith((".lock", ".tmp")):
                        out[f"{ws}/{tree}/{rel}"] = what
    return out


async def populate(tmp_path: Path, c: RpcClient, srv: object) -> tuple[str, str, list[str]]:
    """Two workspaces with a user, spaces, messages, a pipeline run, chat credentials, a repository and files
    (a symlink among them pointing at a secret outside: stored as a link, never its target)."""
    from tests.support.server import RunningServer

    assert isinstance(srv, RunningServer)
    ws = await srv.new_workspace("alpha")
    other = await srv.new_workspace("beta")
    await srv.new_user_token(ws, role="member", name="member")
    said: list[str] = []
    for w in (ws, other):
        space = await c.call("spaces.create", workspace_id=w, title="general")
        for i in range(5):
            said.append((await c.call("messages.post", workspace_id=w, space_id=space["id"], content=f"m{i}"))["id"])
    await c.call("pipelines.templates.create", workspace_id=ws, template=TEMPLATE)
    await c.call("pipelines.runs.start", workspace_id=ws, templateId="t")
    await c.call("chat.connect", workspace_id=ws, provider=P, credentials={"botToken": BOT, "appToken": APP})
    repo = make_repo(tmp_path / "src", "app")
    await c.call("repos.register", workspace_id=ws, path=str(repo))
    srv.ctx.secrets.set("backup.test", "a-server-secret")
    await asyncio.to_thread(dev_ca_pem, srv.data_dir / "rigs")  # the dev-domain CA, made as a rig would
    outside = tmp_path / "outside-secret"
    outside.write_text("never in a backup")
    tree = srv.data_dir / ws / "worktrees" / "t-1"
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "deep" / "er" / "code.py").write_text("print('hi')\n")
    (tree / "run.sh").write_text("#!/bin/sh\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "escape").symlink_to(outside)
    (tree / "dir-link").symlink_to(tmp_path)
    # A folder shaped like a workspace's that no workspace row names (seen: an empty rigs/workspace.db) is not one.
    (srv.data_dir / "rigs").mkdir(exist_ok=True)
    (srv.data_dir / "rigs" / "workspace.db").touch()
    return ws, other, said


async def test_round_trip_from_a_running_server_keeps_every_table_and_file(tmp_path: Path) -> None:
    data, restored, backup = tmp_path / "data", tmp_path / "restored", tmp_path / "out" / "hangar.backup"
    backup.parent.mkdir()
    async with running_server(data, parts=NO_TRANSPORT) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws, other, said = await populate(tmp_path, c, srv)
        code, out, err = await ahangar("backup", "--to", str(backup), "--data-dir", str(data))
        assert code == 0, err
        assert out.startswith("backed up ") and str(backup) in out
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        inside = gzip.decompress(backup.read_bytes())  # backups are gzipped tar archives
        assert b"never in a backup" not in inside
        assert BOT.encode() in inside  # unencrypted: the chat credentials are in it, as they are
        dbs = ["server.db", *(f"{w}/workspace.db" for w in workspace_ids(DataDir(data)))]
        before = {db: tables_of(data / db) for db in dbs}
        files_before = kept(data)
        token = srv.owner_token
    assert sorted(workspace_ids(DataDir(data))) == sorted([ws, other])

    done = hangar("restore", str(backup), "--data-dir", str(restored))
    assert done.returncode == 0, done.stderr
    assert "restored " in done.stdout
    for db in dbs:
        assert tables_of(restored / db) == before[db], db
        assert stat.S_IMODE((restored / db).stat().st_mode) == 0o600
    assert kept(restored) == files_before
    assert f"{ws}/worktrees/t-1/escape" in files_before and f"{ws}/chat_credentials/{P}.json" in files_before
    assert os.readlink(restored / ws / "worktrees" / "t-1" / "escape") == str(tmp_path / "outside-secret")
    assert "rigs/tls/ca.key" in files_before and "secrets.json" in files_before
    assert stat.S_IMODE((restored / "secrets.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((restored / "rigs" / "tls" / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((restored / ws / "chat_credentials" / f"{P}.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(restored.stat().st_mode) == 0o700
    assert not (restored / "pipelines").exists() and not (restored / "disks").exists()
    assert not (restored / "rigs" / "workspace.db").exists()

    async with running_server(restored, parts=NO_TRANSPORT) as again, RpcClient(again.ws_url, token) as c2:
        names = {w["name"] for w in await c2.call("workspaces.list")}
        assert {"alpha", "beta"} <= names
        spaces = await c2.call("spaces.list", workspace_id=ws)
        listed = await c2.call("messages.list", workspace_id=ws, space_id=spaces["spaces"][0]["id"])
        assert {m["id"] for m in listed["messages"]} >= set(said[:5])
        assert (await c2.call("repos.list", workspace_id=ws))["repos"][0]["name"] == "app"


async def test_a_backup_killed_half_way_leaves_no_file_at_its_name(tmp_path: Path) -> None:
    data, target = tmp_path / "data", tmp_path / "hangar.backup"
    async with running_server(data) as srv:
        ws = await srv.new_workspace("big")
        big = data / ws / "worktrees" / "t"
        big.mkdir(parents=True)
        chunk = os.urandom(1 << 20)
        with (big / "blob").open("wb") as fh:
            for _ in range(300):
                fh.write(chunk)
        proc = subprocess.Popen([HANGAR, "admin", "backup", "--to", str(target), "--data-dir", str(data)])
        try:
            partial = None
            for _ in range(6000):
                found = [p / "archive" for p in tmp_path.glob(".hangar.backup.*.partial") if (p / "archive").exists()]
                if found and found[0].stat().st_size > (1 << 20):
                    partial = found[0]
                    break
                assert proc.poll() is None, "the backup ended before it could be killed"
                await asyncio.sleep(0.005)
            assert partial is not None
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert not target.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("hangar")] == []

        code, _out, err = await ahangar("backup", "--to", str(target), "--data-dir", str(data), "--without-files")
        assert code == 0, err
        assert not list(tmp_path.glob(".hangar.backup.*.partial"))  # the dead process's folder is gone
    assert hangar("restore", str(target), "--data-dir", str(tmp_path / "r")).returncode == 0
    assert not (tmp_path / "r" / ws / "worktrees").exists()  # --without-files


async def test_a_backup_taken_while_writes_continue_restores_every_acknowledged_message(tmp_path: Path) -> None:
    data, restored, backup = tmp_path / "data", tmp_path / "restored", tmp_path / "hangar.backup"
    acked: list[str] = []
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("busy")
        space = (await c.call("spaces.create", workspace_id=ws, title="busy"))["id"]
        stop = asyncio.Event()

        async def post() -> None:
            n = 0
            while not stop.is_set():
                reply = await c.call("messages.post", workspace_id=ws, space_id=space, content=f"n{n}")
                acked.append(reply["id"])
                n += 1

        writer = asyncio.create_task(post())
        while len(acked) < 20:
            await asyncio.sleep(0.01)
        before_backup = list(acked)
        code, _out, err = await ahangar("backup", "--to", str(backup), "--data-dir", str(data))
        during = len(acked) - len(before_backup)
        stop.set()
        await writer
        assert code == 0, err
    assert during > 0, "no message was written while the backup ran"

    assert hangar("restore", str(backup), "--data-dir", str(restored)).returncode == 0
    for db in ("server.db", f"{ws}/workspace.db"):
        conn = sqlite3.connect(restored / db)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()
    async with running_server(restored) as again, RpcClient(again.ws_url, srv.owner_token) as c2:
        have: set[str] = set()
        after = 0
        while page := (await c2.call("messages.list", workspace_id=ws, space_id=space, after_seq=after))["messages"]:
            have |= {m["id"] for m in page}
            after = page[-1]["seq"]
        assert set(before_backup) <= have
        await c2.call("messages.post", workspace_id=ws, space_id=space, content="after the restore")


async def test_the_server_killed_during_a_backup_leaves_a_backup_that_restores(tmp_path: Path) -> None:
    """``hangar serve`` as operators run it, posting messages, is killed (-9) while ``hangar admin backup`` reads
    its data directory: the backup completes, restores, and holds every message acknowledged before it began."""
    data, backup = tmp_path / "data", tmp_path / "hangar.backup"
    env = {**os.environ, "HANGAR_DATA_DIR": str(data), "HANGAR_PREPARE_PACK": "0"}
    token = subprocess.run([HANGAR, "admin", "owner-token"], env=env, check=True, capture_output=True, text=True)
    owner = token.stdout.strip()
    server = subprocess.Popen([HANGAR, "serve", "--port", "0", "--no-site"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = next(line.strip().partition(": ")[2] for line in server.stdout if line.startswith("server: "))
        async with RpcClient(url.replace("http://", "ws://") + "/rpc", owner) as c:
            ws = (await c.call("workspaces.create", name="killed"))["id"]
            space = (await c.call("spaces.create", workspace_id=ws, title="busy"))["id"]
            acked = [
                (await c.call("messages.post", workspace_id=ws, space_id=space, content=f"m{i}"))["id"]
                for i in range(30)
            ]
            blob = data / ws / "worktrees" / "t" / "blob"
            blob.parent.mkdir(parents=True)
            blob.write_bytes(os.urandom(1 << 20) * 200)
            proc = await asyncio.create_subprocess_exec(HANGAR, "admin", "backup", "--to", str(backup), env=env)
            while not any(p.stat().st_size > (1 << 20) for p in tmp_path.glob(".hangar.backup.*.partial/archive")):
                assert proc.returncode is None, "the backup ended before the server could be killed"
                with contextlib.suppress(Exception):  # the server may answer or not while it is killed
                    await asyncio.wait_for(c.call("messages.post", workspace_id=ws, space_id=space, content="x"), 1)
            server.kill()
            assert await proc.wait() == 0
    finally:
        server.kill()
        server.wait()
        detach_disks(data)  # what the killed server mounted, if anything
    done = hangar("restore", str(backup), "--data-dir", str(tmp_path / "restored"))
    assert done.returncode == 0, done.stderr
    async with running_server(tmp_path / "restored") as again, RpcClient(again.ws_url, owner) as c2:
        listed = await c2.call("messages.list", workspace_id=ws, space_id=space, limit=1000)
        assert set(acked) <= {m["id"] for m in listed["messages"]}
