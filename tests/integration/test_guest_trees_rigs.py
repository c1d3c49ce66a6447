"""A space's guests own what is inside its folder, and nothing they plant there reaches the host: a repository's
setup script (code the repository's authors wrote, run in the space's enclosure) swaps its worktree for a symlink
to the data directory or to some other host folder, and the next terminal opened in the space must neither mount
it nor grant the rig user anything through it. Everything runs through a real server and real enclosures."""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from pathlib import Path

import pytest

from hangar.errors import Refused as BackendRefused
from hangar.rigs.backends.base import GuestTree
from tests.integration.rigs_enclosure_env import enclosure, spec
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_space_provisioning import with_setup_script
from tests.integration.test_workspace_repos import make_repo

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

ACL = "system.posix_acl_access"
# What a hostile repository's setup script does (it starts in its worktree, inside the space's folder).
PLANT = '#!/bin/sh\nset -e\ncd ..\nmv "$HANGAR_REPO" ".$HANGAR_REPO.orig"\nln -s {target} "$HANGAR_REPO"\n'


def has_acl(path: Path) -> bool:
    try:
        os.getxattr(path, ACL, follow_symlinks=False)
    except OSError as exc:
        assert exc.errno == errno.ENODATA, exc
        return False
    return True


async def space_with(env: RigsEnv, repo: Path, title: str) -> tuple[str, Path]:
    await env.call("repos.register", path=str(repo))
    space = await env.call("spaces.create", title=title, repoIds=[repo.name])
    assert space["provisioning"]["state"] == "ready", space
    return str(space["id"]), Path(space["folder"])


async def seen_in_terminal(env: RigsEnv, space_id: str) -> str:
    rig = await env.open(space_id)
    try:
        ran = await env.exec(
            rig, "ls -A /home/rig/worktree 2>/dev/null; cat /home/rig/worktree/secret.txt 2>/dev/null; true"
        )
        return str(ran["stdout"])
    finally:
        await env.call("rig_close", rigId=rig)


@pytest.mark.sqlite_only("plants links to the data directory's server.db")
async def test_a_symlink_planted_over_the_worktree_is_never_mounted_or_granted(tmp_path: Path) -> None:
    victim = tmp_path / "victim"  # some host folder the rig user has no business reading
    victim.mkdir()
    (victim / "secret.txt").write_text("host secret\n")
    (victim / "secret.txt").chmod(0o600)
    to_data = make_repo(tmp_path / "src", "app")
    with_setup_script(to_data, PLANT.format(target="../../.."))  # <dataDir>/<ws>/spaces/<id>/app -> <dataDir>
    to_host = make_repo(tmp_path / "src", "lib")
    with_setup_script(to_host, PLANT.format(target=victim))
    honest = make_repo(tmp_path / "src", "plain")
    async with rigs_server(tmp_path) as env:
        data = env.srv.data_dir

        space, folder = await space_with(env, to_data, "to the data directory")
        assert (folder / "app").is_symlink() and (folder / "app").resolve() == data.resolve()  # the attack is in place
        seen = await seen_in_terminal(env, space)
        assert "server.db" not in seen and env.ws not in seen, seen

        space, folder = await space_with(env, to_host, "to a host folder")
        assert (folder / "lib").resolve() == victim.resolve()
        seen = await seen_in_terminal(env, space)
        assert "secret.txt" not in seen and "host secret" not in seen, seen

        # Nothing outside the spaces' own folders got an ACL for the rig user, and it stays so once the rigs are gone.
        for path in (
            data,
            data / "server.db",
            data / env.ws,
            data / env.ws / "workspace.db",
            victim,
            victim / "secret.txt",
        ):
            assert not has_acl(path), path

        # A worktree left as it was is still there, in its terminal, writable by the rig user.
        space, folder = await space_with(env, honest, "honest")
        rig = await env.open(space)
        ran = await env.exec(rig, "cat /home/rig/worktree/README.md && echo edited >> /home/rig/worktree/README.md")
        assert ran["exitCode"] == 0 and ran["stdout"] == "# plain\n", ran
        assert (folder / "plain" / "README.md").read_text() == "# plain\nedited\n"
        await env.call("rig_close", rigId=rig)


@pytest.mark.parametrize("inside", [True, False])
async def test_a_worktree_swapped_for_a_symlink_is_refused_by_the_backend(tmp_path: Path, inside: bool) -> None:
    """Between the opener's check and the boot, the worktree turns into a symlink (to a folder beside it, or
    elsewhere on the host): the backend opens it beneath its folder itself, so the boot is refused naming the
    reason instead of mounting or granting what the link names."""
    folder, victim = tmp_path / "space", tmp_path / "victim"
    (folder / ".app.orig").mkdir(parents=True)
    victim.mkdir()
    (folder / "app").symlink_to("../.app.orig" if inside else victim)
    async with enclosure() as backend:
        with pytest.raises(BackendRefused) as err:
            await backend.start(replace(spec("swapped"), worktree=GuestTree(folder, "app")), print)
    assert "worktree 'app' is not a folder inside its space's folder" in err.value.message
    assert not has_acl(folder / ".app.orig") and not has_acl(victim)
