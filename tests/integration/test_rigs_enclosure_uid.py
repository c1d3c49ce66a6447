"""Enclosed programs run as a uid no host account has.

There is no user namespace around an enclosure, so the rig user's uid is a host uid too. When it was 1000 (the
first person's account on a typical Debian host), any process of that account could read an enclosed agent's
environment (its API keys, its run credential) and, through the enclosed process's ``/proc/<pid>/root``, the
files mounted into it. Each test performs that as a real host process of uid 1000 against a real server and real
enclosures; the server must also refuse to start enclosures beside a host account or process of the rig uid.
"""

from __future__ import annotations

import asyncio
import grp
import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hangar.core.guestacl import (
    ACCESS,
    DEFAULT,
    FORMER_RIG_GID,
    FORMER_RIG_UID,
    RIG_GID,
    RIG_UID,
    acl_bytes,
    granted_users,
)
from hangar.rigs.backends.enclosure import EnclosureRig, probe
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_guest_trees_rigs import space_with
from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcError
from tests.unit.agents.support import wait_run, workspace_server

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]

SECRET = "agent-key-5b1e7c"
HOST_ACCOUNT = FORMER_RIG_UID  # uid 1000: the first person's account on a typical host


def as_host_user(uid: int, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` on the host as ``uid`` (what any process of that account can do)."""
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return subprocess.run([*drop, *argv], capture_output=True, text=True, timeout=30, check=False)


def ids_of(pid: int) -> tuple[list[int], list[int]]:
    """A host process's (real, effective, saved, file system) uids and gids, as the host's /proc shows them."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return [int(v) for v in fields["Uid"].split()], [int(v) for v in fields["Gid"].split()]


def holding(secret: str, command: str) -> list[int]:
    """Host pids of processes running ``command`` whose environment holds ``secret`` (read as root, which may)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if (entry / "comm").read_text().strip() == command and secret.encode() in (
                    entry / "environ"
                ).read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def waiting_for(secret: str, command: str) -> list[int]:
    for _ in range(600):
        if found := holding(secret, command):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {command} holding the secret showed up")


def users_of(path: Path, name: str = ACCESS) -> list[int]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        return granted_users(fd, name)
    finally:
        os.close(fd)


def assert_out_of_reach(pid: int, *inside: str) -> None:
    """uid 1000 on the host reads neither the enclosed process's environment nor, through its root, its files."""
    for path in (f"/proc/{pid}/environ", *(f"/proc/{pid}/root{p}" for p in inside)):
        tried = as_host_user(HOST_ACCOUNT, "cat", path)
        assert tried.returncode != 0 and SECRET not in tried.stdout, (path, tried)
        assert "Permission denied" in tried.stderr, (path, tried.stderr)


async def test_a_host_account_reads_no_command_agents_secrets_and_no_file_of_its_space(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="keys")
        folder = Path(space["folder"])
        script = f"umask 077; echo {SECRET} > notes.txt; while [ ! -e go ]; do sleep 0.1; done; echo done"
        adapter = {"type": "command", "argv": ["sh", "-c", script], "secretEnv": {"AGENT_API_KEY": SECRET}}
        agent = await client.call("agents.create", workspace_id=ws, name="Keys", adapter=adapter)
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="go"
        )
        try:
            pids = await waiting_for(SECRET, "sh")  # the agent's program, waiting for its go
            for _ in range(600):
                if (folder / "notes.txt").exists():
                    break
                await asyncio.sleep(0.05)
            for pid in pids:
                assert ids_of(pid) == ([RIG_UID] * 4, [RIG_GID] * 4), pid
                assert_out_of_reach(pid, "/home/rig/worktree/notes.txt")
            # What the agent wrote in its space's folder is the rig user's on the host, not a host account's.
            notes = (folder / "notes.txt").stat()
            assert (notes.st_uid, notes.st_gid) == (RIG_UID, RIG_GID)
            assert RIG_UID in users_of(folder) and HOST_ACCOUNT not in users_of(folder)
            # Enclosed processes hold the rig uid and are not taken for a host process sharing it.
            assert probe.rig_uid_taken() is None
        finally:
            (folder / "go").touch()
        run = await wait_run(client, ws, started["runId"], timeout=60)
        assert run["outcome"] == "ok", run
    with pytest.raises(KeyError):
        pwd.getpwuid(RIG_UID)  # no host account has it
    with pytest.raises(KeyError):
        grp.getgrgid(RIG_GID)


def rig_ids(env: RigsEnv, rig: str) -> dict[int, tuple[list[int], list[int]]]:
    """The uids and gids of the rig's processes (by host pid) other than bubblewrap itself, which stays root."""
    handle = next(r for r in env.manager.live_rigs() if r.id == rig).handle
    assert isinstance(handle, EnclosureRig)
    found = {}
    for pid in handle.cgroup.pids():  # all the rig's processes
        try:
            ids = ids_of(pid)
        except FileNotFoundError:
            continue  # a command's shell that has just ended
        if ids[0] != [0] * 4:
            found[pid] = ids
    return found


async def test_a_terminal_runs_as_the_rig_uid_and_its_worktree_is_granted_to_it_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src", "app")
    async with rigs_server(tmp_path) as env:
        space, folder = await space_with(env, repo, "terminal")
        tree = folder / "app"
        # As a server that ran rigs as uid 1000 left it: ACLs naming 1000, a folder and a file that uid made.
        made = tree / "made-before"
        made.mkdir()
        (made / "old.txt").write_text("from before\n")
        for path in (tree, made, made / "old.txt", tree / "README.md"):
            os.setxattr(path, ACCESS, acl_bytes(path.stat().st_mode, FORMER_RIG_UID, 7))
        for path in (tree, made):
            os.setxattr(path, DEFAULT, acl_bytes(0o755, FORMER_RIG_UID, 7))
        for path in (made, made / "old.txt"):
            os.chown(path, FORMER_RIG_UID, FORMER_RIG_GID)

        rig = await env.open(space)
        ran = await env.exec(
            rig,
            f"id -u; id -g; id -G; umask 077; echo {SECRET} > ~/key.txt; echo new > worktree/new.txt; "
            f"cat worktree/made-before/old.txt; (export AGENT_API_KEY={SECRET}; nohup sleep 120 >/dev/null 2>&1 &)",
        )
        assert ran["exitCode"] == 0, ran
        assert ran["stdout"].splitlines() == [str(RIG_UID), str(RIG_GID), str(RIG_GID), "from before"], ran
        sleeper = (await waiting_for(SECRET, "sleep"))[0]
        ids = rig_ids(env, rig)
        assert sleeper in ids and all(seen == ([RIG_UID] * 4, [RIG_GID] * 4) for seen in ids.values()), ids
        assert_out_of_reach(sleeper, "/home/rig/key.txt", "/home/rig/worktree/new.txt")

        # The worktree's ACLs name the rig uid and no longer the former one; what that uid made is the rig's.
        for path in (tree, made, made / "old.txt", tree / "README.md", tree / "new.txt"):
            assert users_of(path) == [RIG_UID], path
        for path in (tree, made):
            assert users_of(path, DEFAULT) == [RIG_UID], path
        for path in (made, made / "old.txt", tree / "new.txt"):
            assert (path.stat().st_uid, path.stat().st_gid) == (RIG_UID, RIG_GID), path
        assert tree.stat().st_uid == 0 and (tree / "README.md").stat().st_uid == 0  # the server's stay the server's
        await env.call("rig_close", rigId=rig)


async def test_a_checkout_moved_into_a_folder_granted_before_is_granted_to_the_rig_uid(tmp_path: Path) -> None:
    app, lib = make_repo(tmp_path / "src", "app"), make_repo(tmp_path / "src", "lib")
    async with rigs_server(tmp_path) as env:
        space, folder = await space_with(env, app, "checkouts")
        os.setxattr(folder, DEFAULT, acl_bytes(0o755, FORMER_RIG_UID, 7))  # as a server of before left it
        await env.call("repos.register", path=str(lib))
        await env.call("worktrees.add", spaceId=space, repo="lib")
        for path in (folder / "lib", folder / "lib" / "README.md"):
            assert users_of(path) == [RIG_UID], path


async def open_refused(env: RigsEnv) -> str:
    with pytest.raises(RpcError) as err:
        await env.call("rig.open", space_id=env.space, surface="terminal")
    assert err.value.code == "unavailable", err.value
    status: dict[str, Any] = await env.client.call("rigs.status")
    assert status["unavailableReason"] in err.value.message
    return err.value.message.removeprefix("terminal rigs cannot run on this host: ")


def unused_uid() -> int:
    """A uid (and gid) next to the rig user's that nothing on this host has. The collision tests make this
    server's check look for it instead of the rig uid itself, so the process they start with it refuses no
    enclosure of another test running on the host meanwhile."""
    uid = RIG_UID + 1
    for lookup in (pwd.getpwuid, grp.getgrgid):
        with pytest.raises(KeyError):
            lookup(uid)
    return uid


async def test_enclosures_are_refused_while_a_host_process_outside_them_has_the_rig_uid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = unused_uid()
    async with rigs_server(tmp_path) as env:
        monkeypatch.setattr(probe, "RIG_UID", uid)
        monkeypatch.setattr(probe, "RIG_GID", uid)
        rig = await env.open()  # nothing has it yet
        await env.call("rig_close", rigId=rig)
        squatter = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "300"])
        try:
            for _ in range(100):
                if ids_of(squatter.pid)[0] == [uid] * 4:
                    break
                await asyncio.sleep(0.05)
            message = await open_refused(env)
        finally:
            squatter.kill()
            squatter.wait()
        await env.call("rig_close", rigId=await env.open())  # gone: enclosures start again, no restart needed
    assert message == (
        f"uid {uid} or gid {uid}, which enclosed programs run as, is held by host process {squatter.pid} ('sleep') "
        "outside any enclosure, which could read enclosed programs' secrets and reach the folders granted to them, "
        "so enclosures are off: stop it or run it as another user"
    )


async def test_enclosures_are_refused_while_a_host_account_or_group_has_the_rig_uid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check asks the system's user database: made to look for uid 0 and then gid 0, it finds the host's
    real root account and group."""
    uid = unused_uid()
    async with rigs_server(tmp_path) as env:
        monkeypatch.setattr(probe, "RIG_UID", 0)
        account = await open_refused(env)
        monkeypatch.setattr(probe, "RIG_UID", uid)
        monkeypatch.setattr(probe, "RIG_GID", 0)
        group = await open_refused(env)
    root_group = grp.getgrgid(0).gr_name
    assert account == (
        "uid 0, which enclosed programs run as, belongs to the host account 'root', whose processes could read "
        "enclosed programs' secrets and reach the folders granted to them, so enclosures are off: give that "
        "account another uid (usermod --uid) or remove it"
    )
    assert group == (
        f"gid 0, which enclosed programs run as, belongs to the host group {root_group!r}, whose members could read "
        "enclosed programs' secrets and reach the folders granted to them, so enclosures are off: give that group "
        "another gid (groupmod --gid) or remove it"
    )
