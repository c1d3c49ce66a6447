"""Repos and worktrees on real git repositories made by the tests."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from hangar.workspace import RepoService
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=_ENV).stdout.strip()


_ENV = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.test",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.test",
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
}


def make_repo(root: Path, name: str) -> Path:
    """A repository with ``main`` (README) and ``feature`` (README + feature.txt)."""
    repo = root / name
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text(f"# {name}\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "feature.txt").write_text("feature work\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "feature")
    _git(repo, "checkout", "-q", "main")
    return repo


async def test_register_and_check_out_per_space(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", "app")
    bare = tmp_path / "src" / "lib.git"
    _git(tmp_path, "clone", "-q", "--bare", str(make_repo(tmp_path / "src2", "lib")), str(bare))
    async with workspace_server(tmp_path) as (srv, client, ws):
        app = await client.call("repos.register", workspace_id=ws, path=str(src))
        lib = await client.call("repos.register", workspace_id=ws, url=f"file://{bare}")
        assert (app["name"], app["sourceKind"], app["defaultBranch"]) == ("app", "path", "main")
        assert (lib["name"], lib["sourceKind"]) == ("lib", "url")
        assert [r["name"] for r in (await client.call("repos.list", workspace_id=ws))["repos"]] == ["app", "lib"]

        # A commit made upstream after registration is in the next checkout.
        (src / "later.txt").write_text("later\n")
        _git(src, "add", ".")
        _git(src, "commit", "-q", "-m", "later")

        space = await client.call(
            "spaces.create", workspace_id=ws, title="work", repoIds=[app["id"], f"{lib['id']}@feature"]
        )
        folder = Path(space["folder"])
        assert space["provisioning"]["state"] == "ready"
        assert (folder / "app" / "README.md").read_text() == "# app\n"
        assert (folder / "app" / "later.txt").exists()
        assert (folder / "lib" / "feature.txt").read_text() == "feature work\n"
        by_name = {r["repoName"]: r for r in space["repos"]}
        assert by_name["lib"]["branch"] == "feature" and by_name["app"]["branch"] == "main"
        assert _git(folder / "lib", "rev-parse", "--abbrev-ref", "HEAD") == f"hangar/space-{space['id']}"
        # The user's own repository gained no worktrees.
        assert "hangar/" not in _git(src, "branch", "--list")

        steps = [
            (e.payload["state"], e.payload.get("detail"))
            for e in await srv.ctx.bus.replay(ws, types=["workspace.spaceProvisioningChanged"])
        ]
        assert steps == [("provisioning", "app"), ("provisioning", "lib"), ("ready", None)]

        everything = await client.call("spaces.create", workspace_id=ws, title="all", allRepos=True)
        assert sorted(r["repoName"] for r in everything["repos"]) == ["app", "lib"]


async def test_bad_repo_input(tmp_path: Path) -> None:
    make_repo(tmp_path / "src", "app")
    (tmp_path / "plain").mkdir()
    async with workspace_server(tmp_path) as (_srv, client, ws):
        cases = [
            ({"path": str(tmp_path / "plain")}, "invalid_args", "is not a git repository"),
            ({"path": "relative/dir"}, "invalid_args", "must be absolute"),
            ({"url": f"file://{tmp_path}/missing.git"}, "invalid_args", "cannot be cloned"),
            ({"url": "not a url"}, "invalid_args", "is not a clone URL"),
            ({"url": "https://bob:ghp_secret@example.test/a.git"}, "invalid_args", "must not carry credentials"),
            ({}, "invalid_args", "exactly one of path"),
            ({"path": str(tmp_path / "src" / "app"), "name": "bad name!"}, "invalid_args", "name"),
        ]
        for args, code, needle in cases:
            with pytest.raises(RpcError) as err:
                await client.call("repos.register", workspace_id=ws, **args)
            assert (err.value.code, needle in err.value.message) == (code, True), err.value.message
        # Failed clones leave nothing behind.
        assert not list((tmp_path / "data" / ws).glob("repos/*"))
        await client.call("repos.register", workspace_id=ws, path=str(tmp_path / "src" / "app"))
        with pytest.raises(RpcError) as err:
            await client.call("repos.register", workspace_id=ws, path=str(tmp_path / "src" / "app"))
        assert err.value.code == "conflict"

        with pytest.raises(RpcError) as err:
            await client.call("spaces.create", workspace_id=ws, title="w", repoIds=["app@nope"])
        assert err.value.code == "invalid_args" and "branch 'nope' does not exist in repo app" in err.value.message
        failed = [s for s in (await client.call("spaces.list", workspace_id=ws))["spaces"] if s["title"] == "w"]
        assert failed[0]["provisioning"]["state"] == "failed"
        assert "nope" in failed[0]["provisioning"]["error"]
        with pytest.raises(RpcError) as err:
            await client.call("spaces.create", workspace_id=ws, title="w2", repoIds=["ghost"])
        assert (
            err.value.code == "not_found"
            and err.value.message == "repoIds: repo ghost is not registered in this workspace"
        )
        spaces = (await client.call("spaces.list", workspace_id=ws))["spaces"]
        assert "w2" not in [s["title"] for s in spaces]  # nothing was opened for a repo that does not exist


async def test_cleanup_modes_and_dry_run(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", "app")
    async with workspace_server(tmp_path) as (_srv, client, ws):
        repo = await client.call("repos.register", workspace_id=ws, path=str(src))
        ticket = await client.call("tickets.create", workspace_id=ws, title="Fix it")
        t_wt = await client.call("worktrees.add", workspace_id=ws, repo="app@feature", ticketId=ticket["id"])
        p_wt = await client.call("worktrees.add", workspace_id=ws, repo="app", repoFullName="acme/app", prNumber=7)
        assert Path(t_wt["path"]).is_dir() and Path(p_wt["path"]).is_dir()
        with pytest.raises(RpcError) as err:
            await client.call("worktrees.add", workspace_id=ws, repo="app", ticketId=ticket["id"])
        assert err.value.code == "conflict"

        dry = await client.call("worktrees.cleanup", workspace_id=ws, ticketId=ticket["id"], dryRun=True)
        assert dry["worktrees"] == [t_wt["path"]] and dry["dryRun"] is True and "would release 1" in dry["summary"]
        assert Path(t_wt["path"]).is_dir()
        done = await client.call("worktrees.cleanup", workspace_id=ws, ticketId=ticket["id"])
        assert done["worktrees"] == [t_wt["path"]] and not Path(t_wt["path"]).exists()
        done = await client.call("worktrees.cleanup", workspace_id=ws, repoFullName="acme/app", prNumber=7)
        assert done["mode"] == "prEditor" and not Path(p_wt["path"]).exists()

        keep = await client.call("spaces.create", workspace_id=ws, title="keep", repoIds=["app"])
        gone = await client.call("spaces.create", workspace_id=ws, title="gone", repoIds=["app"])
        drop = await client.call("spaces.create", workspace_id=ws, title="drop", repoIds=["app"])
        done = await client.call("worktrees.cleanup", workspace_id=ws, space_id=drop["id"])
        assert done["mode"] == "space" and done["folders"] == [drop["folder"]]
        assert not Path(drop["folder"]).exists()

        # Sweep: an archived space's worktree, a vanished worktree directory, an orphan folder.
        await client.call("spaces.archive", workspace_id=ws, space_id=gone["id"])
        orphan = Path(keep["folder"]).parent / "not-a-space"
        orphan.mkdir()
        vanishing = await client.call("tickets.create", workspace_id=ws, title="vanishing")
        vanished = await client.call("worktrees.add", workspace_id=ws, repo="app", ticketId=vanishing["id"])
        shutil.rmtree(vanished["path"])
        sweep = await client.call("worktrees.cleanup", workspace_id=ws, dryRun=True)
        assert sorted(sweep["worktrees"]) == sorted([gone["repos"][0]["path"], vanished["path"]])
        assert sorted(sweep["folders"]) == sorted([gone["folder"], str(orphan)])
        sweep = await client.call("worktrees.cleanup", workspace_id=ws)
        assert not Path(gone["folder"]).exists() and not orphan.exists()
        assert Path(keep["repos"][0]["path"]).is_dir()
        remaining = (await client.call("worktrees.list", workspace_id=ws))["worktrees"]
        assert [w["spaceId"] for w in remaining] == [keep["id"]]

        with pytest.raises(RpcError) as err:
            await client.call("repos.remove", workspace_id=ws, repo_id=repo["id"])
        assert err.value.code == "conflict"
        await client.call("worktrees.cleanup", workspace_id=ws, space_id=keep["id"])
        await client.call("repos.remove", workspace_id=ws, repo_id=repo["id"])
        assert (await client.call("repos.list", workspace_id=ws))["repos"] == []


async def test_two_repos_registered_under_one_name_at_once(tmp_path: Path) -> None:
    """The name is checked before the clone and held by the database when the row is written: the second of two
    registrations racing for one name is told it is taken, and its clone is removed."""
    one, two = make_repo(tmp_path / "a", "app"), make_repo(tmp_path / "b", "app")
    async with workspace_server(tmp_path) as (srv, client, ws):
        async with RpcClient(srv.ws_url, srv.owner_token) as other:
            replies = await asyncio.gather(
                client.request("repos.register", {"workspace_id": ws, "path": str(one)}),
                other.request("repos.register", {"workspace_id": ws, "path": str(two)}),
            )
        refused = [r["error"] for r in replies if not r["ok"]]
        assert len(refused) == 1 and refused[0]["code"] == "conflict" and "'app'" in refused[0]["message"]
        (kept,) = [r["result"] for r in replies if r["ok"]]
        assert [r["id"] for r in (await client.call("repos.list", workspace_id=ws))["repos"]] == [kept["id"]]
        clone = srv.ctx.service(RepoService).clone_path(ws, kept["id"])
        assert list(clone.parent.iterdir()) == [clone]  # the refused registration's clone is gone
