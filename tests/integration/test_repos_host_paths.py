"""A repository on the server's disk is cloned with the server's rights: a workspace admin who is not the server owner
must not register one by path or ``file://`` URL (and so read it in a rig), unless it lies under a folder the owner
named with ``hangar admin local-repo-roots``. Real server, real command line, real git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.workspace.sources import MAX_LOCAL_REPO_ROOTS, SETTING_LOCAL_REPO_ROOTS
from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server

HANGAR = str(Path(sys.executable).parent / "hangar")


def roots_cli(data_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [HANGAR, "admin", "local-repo-roots", *args, "--data-dir", str(data_dir)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def refused(admin: RpcClient, ws: str, **args: str) -> str:
    with pytest.raises(RpcError) as err:
        await admin.call("repos.register", workspace_id=ws, **args)
    assert err.value.code == "forbidden", err.value.message
    return err.value.message


async def test_only_the_server_owner_registers_repositories_on_the_servers_disk(tmp_path: Path) -> None:
    private = make_repo(tmp_path / "host" / "private", "secret-app")  # any repository the server can read
    shared = tmp_path / "shared"
    allowed = make_repo(shared, "tool")
    (shared / "sneaky").symlink_to(private)  # under the named folder by name, elsewhere in truth
    async with workspace_server(tmp_path) as (srv, owner, ws):
        admin_token = await srv.new_user_token(ws, role="admin", name="admin")
        async with RpcClient(srv.ws_url, admin_token) as admin:
            message = await refused(admin, ws, path=str(private))
            assert message.startswith("path: a repository on this server's disk is read with the server's rights")
            assert "hangar admin local-repo-roots" in message
            assert (await refused(admin, ws, url=f"file://{private}")).startswith("url: ")
            assert (await refused(admin, ws, url=f"file://{allowed}")).startswith("url: ")  # nothing is named yet
            assert (await admin.call("repos.list", workspace_id=ws))["repos"] == []

            assert roots_cli(srv.data_dir, str(shared)) == f"workspace admins may register repositories under: {shared}"
            tool = await admin.call("repos.register", workspace_id=ws, path=str(allowed))
            assert tool["name"] == "tool"
            by_url = await admin.call("repos.register", workspace_id=ws, url=f"file://{allowed}", name="tool-again")
            assert by_url["sourceKind"] == "url"
            await refused(admin, ws, path=str(private))  # still outside
            await refused(admin, ws, path=str(shared / "sneaky"))  # a symlink under the folder names what it points at
            await refused(admin, ws, url=f"file://{shared}/../host/private/secret-app")

            both = subprocess.run(
                [HANGAR, "admin", "local-repo-roots", str(shared), "--clear", "--data-dir", str(srv.data_dir)],
                capture_output=True,
                text=True,
            )
            assert both.returncode != 0 and "give folders or --clear, not both" in both.stderr
            assert "only the server owner" in roots_cli(srv.data_dir, "--clear")
            await refused(admin, ws, path=str(allowed))
            # ... and the repos an admin registered under it are no longer fetched from there.
            space = await admin.call("spaces.create", workspace_id=ws, title="work")
            for repo in ("tool", "tool-again"):
                with pytest.raises(RpcError) as err:
                    await admin.call("worktrees.add", workspace_id=ws, repo=repo, spaceId=space["id"])
                assert err.value.code == "forbidden" and err.value.message.startswith(
                    f"repo: the origin of repo {repo} ("
                ), err.value.message
                assert "is a repository on this server's disk, read with the server's rights" in err.value.message

        # The server owner registers any repository of this machine, as before.
        mine = await owner.call("repos.register", workspace_id=ws, path=str(private))
        assert mine["source"] == str(private.resolve())
        assert (await owner.call("repos.register", workspace_id=ws, url=f"file://{private}", name="by-url"))["name"]
        for bad in ("file:///srv/%00nul", "file://relative"):
            with pytest.raises(RpcError) as err:
                await owner.call("repos.register", workspace_id=ws, url=bad)
            assert (err.value.code, err.value.message) == (
                "invalid_args",
                "url must name an absolute path on this server",
            )

        # The setting takes absolute folders only, at most MAX_LOCAL_REPO_ROOTS of them.
        identity = srv.ctx.service(IdentityService)
        for bad in (["relative/dir"], "/not/a/list", [str(shared)] * (MAX_LOCAL_REPO_ROOTS + 1), ["/a\0b"]):
            with pytest.raises(InvalidArgs) as err:
                await identity.set_setting(SETTING_LOCAL_REPO_ROOTS, bad)
            assert err.value.field == SETTING_LOCAL_REPO_ROOTS
        await identity.set_setting(SETTING_LOCAL_REPO_ROOTS, [str(shared)] * MAX_LOCAL_REPO_ROOTS)
