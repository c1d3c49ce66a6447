"""Provisioning a space beyond the plain checkout: a pull request's head (``<repoId>#<number>``) fetched from the
repo's origin, and the repository's own ``.hangar/setup`` script, run confined in the space's enclosure.

Real git repositories made by the tests stand in for a forge: the origin carries ``refs/pull/<n>/head`` as the
common forges publish it. Setup scripts run in a real enclosure (skipped where the host cannot run one), and
where the host cannot confine, the script is refused, never run on the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.core.guestacl import RIG_GID, RIG_UID
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.part import make_rigs_part
from hangar.server.parts import all_parts
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.test_confined_user_code import finished
from tests.integration.test_workspace_repos import _git, make_repo
from tests.support.rpc import RpcClient, RpcError
from tests.support.runs import assert_completed
from tests.support.server import running_server
from tests.unit.agents.support import workspace_server

PROVISIONING = "workspace.spaceProvisioningChanged"


def open_pull_request(origin: Path, number: int, files: dict[str, tuple[str, int]]) -> str:
    """Commit ``files`` (name: (text, mode)) on a contributor's branch, publish the commit as pull request
    ``number`` the way forges do (``refs/pull/<n>/head``) and drop the branch, so only the pull ref reaches it."""
    _git(origin, "checkout", "-q", "-b", "contrib")
    for name, (text, mode) in files.items():
        path = origin / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", f"pull request {number}")
    sha = _git(origin, "rev-parse", "HEAD")
    _git(origin, "update-ref", f"refs/pull/{number}/head", sha)
    _git(origin, "checkout", "-q", "main")
    _git(origin, "branch", "-q", "-D", "contrib")
    return sha


def with_setup_script(origin: Path, script: str) -> None:
    """Commit an executable ``.hangar/setup`` on main."""
    path = origin / ".hangar" / "setup"
    path.parent.mkdir(exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "setup script")


async def steps_of(client: RpcClient, ws: str, space_id: str) -> list[tuple[str, str | None, str | None]]:
    """The space's setup steps, without what a setup script said it waited for (its enclosure's boot, told only
    when slow: a busy host's) nor the step said again once that wait was over."""
    events = await client.call("events.list", workspace_id=ws, types=[PROVISIONING])
    steps: list[tuple[str, str | None, str | None]] = []
    for e in events:
        p = e["payload"]
        step = (p["state"], p.get("step"), p.get("detail"))
        if p["spaceId"] != space_id or ": waiting for " in (step[2] or "") or (steps and steps[-1] == step):
            continue
        steps.append(step)
    return steps


async def space_titled(client: RpcClient, ws: str, title: str) -> dict[str, Any]:
    spaces = (await client.call("spaces.list", workspace_id=ws, includeHidden=True))["spaces"]
    found = next(s for s in spaces if s["title"] == title)
    return dict(await client.call("spaces.get", workspace_id=ws, spaceId=found["id"]))


async def test_a_pull_request_spec_checks_out_the_pull_requests_head(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "src", "app")
    first = open_pull_request(origin, 7, {"pr.txt": ("from the pull request\n", 0o644)})
    async with workspace_server(tmp_path) as (_srv, client, ws):
        app = await client.call("repos.register", workspace_id=ws, path=str(origin))

        space = await client.call("spaces.create", workspace_id=ws, title="pr", repoIds=[f"{app['id']}#7"])
        worktree = Path(space["folder"]) / "app"
        assert space["provisioning"]["state"] == "ready"
        assert _git(worktree, "rev-parse", "HEAD") == first
        assert (worktree / "pr.txt").read_text() == "from the pull request\n"
        # the agents' work branch starts from the local pr/7 branch, which the worktree records as its branch
        assert _git(worktree, "rev-parse", "--abbrev-ref", "HEAD") == f"hangar/space-{space['id']}"
        assert [r["branch"] for r in space["repos"]] == ["pr/7"]
        assert await steps_of(client, ws, space["id"]) == [
            ("provisioning", "repo", "app"),
            ("provisioning", "prCheckout", "app"),
            ("ready", None, None),
        ]

        # The contributor pushed again: the next checkout (worktrees.add, by repo name) lands on the new head.
        _git(origin, "checkout", "-q", "-b", "contrib", first)
        (origin / "pr.txt").write_text("second push\n")
        _git(origin, "commit", "-q", "-am", "second push")
        second = _git(origin, "rev-parse", "HEAD")
        _git(origin, "update-ref", "refs/pull/7/head", second)
        _git(origin, "checkout", "-q", "main")
        other = await client.call("spaces.create", workspace_id=ws, title="again")
        added = await client.call("worktrees.add", workspace_id=ws, spaceId=other["id"], repo="app#7")
        assert added["branch"] == "pr/7" and _git(Path(added["path"]), "rev-parse", "HEAD") == second

        # A pipeline's messaging.createSpace takes the same form.
        template = {
            "id": "open-pr",
            "steps": [
                {"id": "start", "kind": "trigger"},
                {
                    "id": "open",
                    "kind": "listen",
                    "body": "messaging.createSpace",
                    "trigger": {"sourceStepIds": ["start"]},
                    "config": {"repoIds": ["app#7"]},
                },
            ],
        }
        await client.call("pipelines.templates.create", workspace_id=ws, template=template)
        started = await client.call("pipelines.runs.start", workspace_id=ws, templateId="open-pr")
        run = await finished(client, ws, started["runId"])
        assert_completed(run)
        piped = await client.call("spaces.get", workspace_id=ws, spaceId=run["state"]["pipeline_space_id"])
        assert _git(Path(piped["folder"]) / "app", "rev-parse", "HEAD") == second

        # A pull request the origin does not have fails the space with the reason, naming the field.
        with pytest.raises(RpcError) as err:
            await client.call("spaces.create", workspace_id=ws, title="missing", repoIds=["app#8"])
        assert err.value.code == "invalid_args"
        assert err.value.message.startswith("repoIds: pull request #8 cannot be fetched from the origin of repo app")
        missing = await space_titled(client, ws, "missing")
        assert missing["provisioning"]["state"] == "failed"
        assert "pull request #8" in missing["provisioning"]["error"]
        assert [s[:2] for s in await steps_of(client, ws, missing["id"])] == [
            ("provisioning", "repo"),
            ("provisioning", "prCheckout"),
            ("failed", None),
        ]

        # A malformed number is refused before any space opens.
        for bad in ("app#x", "app#0", "app#-1"):
            with pytest.raises(RpcError) as err:
                await client.call("spaces.create", workspace_id=ws, title="bad", repoIds=[bad])
            assert err.value.code == "invalid_args" and "repoIds" in err.value.message
            assert "pull request number" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call("worktrees.add", workspace_id=ws, spaceId=other["id"], repo="app#1e3")
        assert err.value.code == "invalid_args" and err.value.message.startswith("repo: ")
        spaces = (await client.call("spaces.list", workspace_id=ws, includeHidden=True))["spaces"]
        assert "bad" not in {s["title"] for s in spaces}


@pytest.mark.packs("terminal")
async def test_a_setup_script_runs_confined_in_its_worktree(tmp_path: Path) -> None:
    await ready_pack()
    data_dir = tmp_path / "data"  # where workspace_server keeps the server's data
    origin = make_repo(tmp_path / "src", "app")
    with_setup_script(
        origin,
        "#!/bin/sh\nset -e\n"
        'echo "cwd=$(pwd)" > setup-ran.txt\n'
        'echo "repo=$HANGAR_REPO worktree=$HANGAR_WORKTREE" >> setup-ran.txt\n'
        f'if [ -e "{data_dir}" ]; then echo data=visible; else echo data=hidden; fi >> setup-ran.txt\n'
        'echo "uid=$(id -u) gid=$(id -g)" >> setup-ran.txt\n',
    )
    async with workspace_server(tmp_path) as (srv, client, ws):
        assert srv.data_dir == data_dir
        await client.call("repos.register", workspace_id=ws, path=str(origin))
        space = await client.call("spaces.create", workspace_id=ws, title="setup", repoIds=["app"])
        assert space["provisioning"]["state"] == "ready", space
        written = Path(space["folder"]) / "app" / "setup-ran.txt"
        ran = dict(line.split("=", 1) for line in written.read_text().replace(" ", "\n").splitlines())
        assert ran["cwd"] == ran["worktree"] == "/home/rig/worktree/app"
        assert ran["repo"] == "app"
        assert ran["data"] == "hidden"  # confined: the data directory is not there
        # As the rig user, whose uid no host account has; what it writes on the host is that uid's too.
        assert (ran["uid"], ran["gid"]) == (str(RIG_UID), str(RIG_GID))
        assert (written.stat().st_uid, written.stat().st_gid) == (RIG_UID, RIG_GID)
        assert await steps_of(client, ws, space["id"]) == [
            ("provisioning", "repo", "app"),
            ("provisioning", "script", "app"),
            ("ready", None, None),
        ]


@pytest.mark.packs("terminal")
async def test_a_failing_setup_script_fails_the_space_with_its_stderr_tail(tmp_path: Path) -> None:
    await ready_pack()
    origin = make_repo(tmp_path / "src", "app")
    chatter = "".join(f"progress line {i}\n" for i in range(400))
    (origin / "chatter.txt").write_text(chatter)
    with_setup_script(
        origin,
        "#!/bin/sh\necho 'installing' \ncat chatter.txt >&2\necho 'npm ERR! missing peer dependency' >&2\nexit 3\n",
    )
    async with workspace_server(tmp_path) as (_srv, client, ws):
        await client.call("repos.register", workspace_id=ws, path=str(origin))
        with pytest.raises(RpcError) as err:
            await client.call("spaces.create", workspace_id=ws, title="broken", repoIds=["app"])
        assert err.value.code == "conflict"
        assert err.value.message.startswith("the setup script of app exited with status 3: ")
        assert err.value.message.endswith("npm ERR! missing peer dependency")
        assert "progress line 0\n" not in err.value.message  # the tail, not the whole output
        space = await space_titled(client, ws, "broken")
        assert space["provisioning"]["state"] == "failed"
        assert space["provisioning"]["error"] == err.value.message
        assert [s[:2] for s in await steps_of(client, ws, space["id"])] == [
            ("provisioning", "repo"),
            ("provisioning", "script"),
            ("failed", None),
        ]


async def test_without_enclosures_a_setup_script_is_refused_not_run_on_the_host(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "src", "app")
    with_setup_script(origin, "#!/bin/sh\ntouch ran-on-host\n")
    rigs = make_rigs_part(
        lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=PACKS, tool_path="/nonexistent")
    )
    parts = [*(p for p in all_parts() if p.name != "rigs"), rigs]
    async with running_server(tmp_path / "data", parts=parts) as srv:
        ws = await srv.new_workspace("refused")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            await client.call("repos.register", workspace_id=ws, path=str(origin))
            with pytest.raises(RpcError) as err:
                await client.call("spaces.create", workspace_id=ws, title="refused", repoIds=["app"])
            assert err.value.code == "unavailable"
            assert "user code runs confined in an enclosure" in err.value.message
            assert "bwrap (Debian package bubblewrap)" in err.value.message
            assert "hangar admin trusted-host-exec on" in err.value.message
            space = await space_titled(client, ws, "refused")
            assert space["provisioning"] == {"state": "failed", "step": None, "error": err.value.message}
            assert not (Path(space["folder"]) / "app" / "ran-on-host").exists()
