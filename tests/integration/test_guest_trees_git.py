"""Git on the host and the worktrees a space's guests can change: checking out, releasing and sweeping never write
or delete through a symlink the guests planted, and host git never takes a repository, config or hook from a
worktree. Each attack is run from inside the space's real enclosure (a repository's setup script, a command
agent) against a real server."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.test_space_provisioning import with_setup_script
from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcClient
from tests.unit.agents.support import wait_run, workspace_server

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

ATTEMPTS = 24
# A command agent of the space, in its enclosure (cwd: the space's folder): the names the next checkouts will take
# are a symlink to a host folder half of the time, nothing the other half, until the test says stop.
FLICKER = r"""
import os, sys, time

names = [f"lib{i}" for i in range(ATTEMPTS)]
open("flickering", "w").close()
end = time.monotonic() + 240
while not os.path.exists("stop") and time.monotonic() < end:
    for step in (lambda name: os.symlink(VICTIM, name), os.unlink):
        for name in names:
            try:
                step(name)
            except OSError:
                pass
print("stopped")
"""


async def test_a_checkout_never_writes_through_a_symlink_planted_while_it_runs(tmp_path: Path) -> None:
    await ready_pack()
    victim = tmp_path / "victim"  # an empty host folder (a crontab spool, say): git would fill it through a link
    victim.mkdir()
    make_repo(tmp_path / "src", "app")
    async with workspace_server(tmp_path) as (_srv, client, ws):
        for i in range(ATTEMPTS):
            await client.call("repos.register", workspace_id=ws, path=str(tmp_path / "src" / "app"), name=f"lib{i}")
        space = await client.call("spaces.create", workspace_id=ws, title="race")
        folder = Path(space["folder"])
        source = FLICKER.replace("ATTEMPTS", str(ATTEMPTS)).replace("VICTIM", repr(str(victim)))
        agent = await client.call(
            "agents.create",
            workspace_id=ws,
            name="Flicker",
            adapter={"type": "command", "argv": ["python3", "-c", source], "timeoutSeconds": 300},
        )
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="go"
        )
        try:
            for _ in range(1200):
                if (folder / "flickering").exists():
                    break
                await asyncio.sleep(0.1)
            assert (folder / "flickering").exists()
            outcomes = []
            for i in range(ATTEMPTS):
                try:
                    await client.call("worktrees.add", workspace_id=ws, spaceId=space["id"], repo=f"lib{i}")
                    outcomes.append("checked out")
                except Exception as exc:
                    outcomes.append(f"{getattr(exc, 'code', '')}: {exc}")
        finally:
            (folder / "stop").touch()
            run = await wait_run(client, ws, started["runId"], timeout=300)
        assert run["outcome"] == "ok", run
        assert os.listdir(victim) == [], (os.listdir(victim), outcomes)
        assert {o.split(":")[0] for o in outcomes} <= {"checked out", "conflict", "invalid_args"}, outcomes
        for i, outcome in enumerate(outcomes):  # what was checked out is a real folder in the space, not a link
            if outcome == "checked out":
                assert not (folder / f"lib{i}").is_symlink() and (folder / f"lib{i}" / "README.md").is_file()


# A setup script that turns its worktree into a symlink to a host folder (the back-link in that folder stands for a
# folder git would take as the worktree itself; the guest could not write it, but nothing may rely on that).
DIVERT = '#!/bin/sh\nset -e\ncd ..\nmv "$HANGAR_REPO" ".$HANGAR_REPO.orig"\nln -s {victim} "$HANGAR_REPO"\n'
# A setup script that points its worktree's .git at a repository of its own whose config and hooks run commands.
HIJACK = """#!/bin/sh
set -e
rm .git
git init -q --bare .evil
git config -f .evil/config core.fsmonitor "touch {marker}-fsmonitor"
git config -f .evil/config core.hooksPath "$PWD/.evil/hooks"
printf '#!/bin/sh\\ntouch {marker}-hook\\n' > .evil/hooks/post-checkout
chmod +x .evil/hooks/post-checkout
cp .evil/hooks/post-checkout .evil/hooks/reference-transaction
echo "gitdir: .evil" > .git
"""


async def test_releasing_and_sweeping_follow_nothing_the_guests_planted(tmp_path: Path) -> None:
    await ready_pack()
    victim, marker = tmp_path / "victim", tmp_path / "ran-on-host"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    diverted = make_repo(tmp_path / "src", "app")
    with_setup_script(diverted, DIVERT.format(victim=shlex.quote(str(victim))))
    hijacked = make_repo(tmp_path / "src", "lib")
    with_setup_script(hijacked, HIJACK.format(marker=marker))
    async with workspace_server(tmp_path) as (srv, client, ws):
        app = await client.call("repos.register", workspace_id=ws, path=str(diverted))
        await client.call("repos.register", workspace_id=ws, path=str(hijacked))
        space = await client.call("spaces.create", workspace_id=ws, title="planted", repoIds=["app", "lib"])
        assert space["provisioning"]["state"] == "ready", space
        folder = Path(space["folder"])
        assert (folder / "app").is_symlink() and (folder / "lib" / ".git").read_text() == "gitdir: .evil\n"
        admin = srv.data_dir / ws / "repos" / f"{app['id']}.git" / "worktrees" / "app"
        (victim / ".git").write_text(f"gitdir: {admin}\n")

        # Provisioned again (the setup scripts run again), then released with the space's folder.
        await client.call("spaces.create", workspace_id=ws, title="again", repoIds=["lib"])
        done = await client.call("worktrees.cleanup", workspace_id=ws, space_id=space["id"])
        assert done["folders"] == [str(folder)] and not folder.exists()
        assert (victim / "precious.txt").read_text() == "keep me\n"

        # A worktree turned into a link counts as gone in a sweep: the link goes, never what it points at.
        other = await client.call("spaces.create", workspace_id=ws, title="swept", repoIds=["app"])
        link = Path(other["folder"]) / "app"
        assert link.is_symlink()
        (victim / ".git").write_text(f"gitdir: {admin}\n")
        swept = await client.call("worktrees.cleanup", workspace_id=ws)
        assert swept["worktrees"] == [str(link)]
        assert not link.exists() and not link.is_symlink()
        assert (victim / "precious.txt").read_text() == "keep me\n"

        assert not list(tmp_path.glob("ran-on-host*"))  # no config or hook of the guests' ran on the host
        left = (await client.call("worktrees.list", workspace_id=ws))["worktrees"]
        assert [w["spaceId"] for w in left] == [next(iter(await spaces_titled(client, ws, "again")))]


async def spaces_titled(client: RpcClient, ws: str, title: str) -> list[str]:
    spaces = (await client.call("spaces.list", workspace_id=ws, includeHidden=True))["spaces"]
    return [s["id"] for s in spaces if s["title"] == title]
