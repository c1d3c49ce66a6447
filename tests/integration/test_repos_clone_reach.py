"""A repo's clone and its later fetches run as the server: a workspace admin who is not the server owner must not
use them to reach what the server reaches and they do not, neither the server's SSH identity (ssh URLs), nor this
host's loopback, its own addresses, the private network or the metadata service (names resolving there,
redirects leading there, a name that resolves elsewhere by the next fetch), nor the server user's git
configuration and credentials. The server owner's repos work as before.

Real server, real RPC clients, real git against a real git server over HTTP on this host (``git http-backend``).
The server runs in the test's process, so names are pointed at addresses through the host's resolver there
(``tests.support.resolver``); a loopback address of the test's own stands in for a public server. No connection
of these tests leaves this host: every name they use resolves nowhere but here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.workspace.sources import MAX_TRUSTED_REPO_HOSTS, SETTING_TRUSTED_REPO_HOSTS, reach
from tests.integration.test_workspace_repos import _git, make_repo
from tests.peers.git_http import GitHttp
from tests.support.resolver import answering, loopback_address, public_stand_in
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer
from tests.unit.agents.support import workspace_server

HANGAR = str(Path(sys.executable).parent / "hangar")
TRUSTED_FIX = "hangar admin trusted-repo-hosts"


def hosts_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HANGAR, "admin", "trusted-repo-hosts", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},  # the error box wraps at the terminal's width
    )


def forge_root(tmp_path: Path) -> Path:
    """A folder of bare repositories a git server serves: ``app.git`` (branches main and feature)."""
    root = tmp_path / "forge"
    root.mkdir()
    _git(tmp_path, "clone", "-q", "--bare", str(make_repo(tmp_path / "src", "app")), str(root / "app.git"))
    return root


@asynccontextmanager
async def admin_of(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RpcClient, RpcClient, str]]:
    """A running server, its owner's client, a workspace admin's (not the owner) and the workspace id."""
    async with workspace_server(tmp_path) as (srv, owner, ws):
        token = await srv.new_user_token(ws, role="admin", name="admin")
        async with RpcClient(srv.ws_url, token) as admin:
            yield srv, owner, admin, ws


async def refused(client: RpcClient, ws: str, url: str, code: str = "forbidden") -> str:
    with pytest.raises(RpcError) as err:
        await client.call("repos.register", workspace_id=ws, url=url)
    assert err.value.code == code, err.value.message
    return err.value.message


async def test_ssh_urls_are_the_server_owners_unless_the_owner_names_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ssh URL is fetched with the server's own SSH keys and agent: refused for an admin, naming the field and
    the command that opens a host; the owner's attempt reaches git (which fails to connect, nothing listens)."""
    closed = loopback_address()  # nothing listens there
    async with admin_of(tmp_path) as (srv, owner, admin, ws):
        for url in (f"ssh://git@{closed}:2222/team/app.git", "git@forge.example.test:team/app.git"):
            message = await refused(admin, ws, url)
            assert message.startswith(f"url: {url} would be fetched with this server's own SSH identity"), message
            assert TRUSTED_FIX in message and "register its https:// URL instead" in message
        assert (await admin.call("repos.list", workspace_id=ws))["repos"] == []

        # The owner's ssh URL goes to git as before: ssh's own failure, not a refusal.
        with pytest.raises(RpcError) as err:
            await owner.call("repos.register", workspace_id=ws, url=f"ssh://git@{closed}:2222/team/app.git")
        assert err.value.code == "invalid_args" and "cannot be cloned" in err.value.message, err.value.message

        # Named by the owner, a host's ssh URLs are an admin's too. Here the server's resolver gives a public
        # address for the name and ssh (resolving by itself) finds this host's loopback, where nothing listens.
        done = hosts_cli(srv.data_dir, "localhost", "forge.example.test")
        assert done.returncode == 0 and "localhost, forge.example.test" in done.stdout, done.stderr
        with monkeypatch.context() as dns:
            answering(dns, {"localhost": "192.0.2.10"})
            with pytest.raises(RpcError) as err:
                await admin.call("repos.register", workspace_id=ws, url="ssh://git@localhost:1/team/app.git")
        assert err.value.code == "invalid_args" and "cannot be cloned" in err.value.message, err.value.message
        # ... but never to this host's loopback, named or not.
        message = await refused(admin, ws, "ssh://git@localhost/team/app.git")
        assert "127.0.0.1, a loopback address, which a workspace admin's clones never reach" in message, message

        assert "only the server owner" in hosts_cli(srv.data_dir, "--clear").stdout
        await refused(admin, ws, "git@forge.example.test:team/app.git")


async def test_git_protocol_and_remote_helpers(tmp_path: Path) -> None:
    """``git://`` cannot be held to a checked address: the owner's only. Remote helpers (``ext::`` runs a
    command) are nobody's."""
    closed = loopback_address()
    async with admin_of(tmp_path) as (_srv, owner, admin, ws):
        message = await refused(admin, ws, f"git://{closed}/app.git")
        assert message.startswith(f"url: git://{closed}/app.git uses git://, which only the server owner registers")
        with pytest.raises(RpcError) as err:
            await owner.call("repos.register", workspace_id=ws, url=f"git://{closed}/app.git")
        assert err.value.code == "invalid_args" and "cannot be cloned" in err.value.message
        for client in (owner, admin):
            for url in ("ext::sh -c touch% /tmp/pwned", "fd::3", "testgit::/srv/app"):
                message = await refused(client, ws, url, code="invalid_args")
                assert "names a git remote helper" in message, message


async def test_an_admins_clone_reaches_no_internal_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real git server on this host's loopback: the admin's URL naming it (by address, by ``localhost``, by a
    name resolving there) is refused before git runs, and so are names resolving to this host's own, private or
    metadata addresses; the server owner clones it as before."""
    answering(
        monkeypatch,
        {
            "forge.example.test": "127.0.0.1",
            "db.corp.example.test": "10.9.8.7",
            "meta.corp.example.test": "169.254.169.254",
            "v6.corp.example.test": "::ffff:127.0.0.1",
            "gone.example.test": None,
        },
    )
    with GitHttp(forge_root(tmp_path)) as forge:
        port = forge.port
        async with admin_of(tmp_path) as (srv, owner, admin, ws):
            message = await refused(admin, ws, forge.url("app.git"))
            assert message == (
                f"url: {forge.url('app.git')} is not reached from this server: 127.0.0.1 is a loopback address, "
                "which a workspace admin's clones never reach"
            )
            for host in ("localhost", "forge.example.test", "[::ffff:127.0.0.1]", "v6.corp.example.test"):
                message = await refused(admin, ws, f"http://{host}:{port}/app.git")
                assert "a loopback address, which a workspace admin's clones never reach" in message, message
            message = await refused(admin, ws, f"https://meta.corp.example.test:{port}/app.git")
            assert (
                "169.254.169.254, the cloud metadata service, which a workspace admin's clones never reach" in message
            )
            message = await refused(admin, ws, f"https://db.corp.example.test:{port}/app.git")
            assert message.endswith(
                "db.corp.example.test resolves to 10.9.8.7, a private address, which a workspace admin's clones "
                f"reach only when the server owner names the host ({TRUSTED_FIX} <host>...)"
            )
            message = await refused(admin, ws, "https://gone.example.test/app.git", code="invalid_args")
            assert message == (
                "url: https://gone.example.test/app.git: the host gone.example.test does not resolve ([Errno -2] Name "
                "or service not known)"
            )
            assert forge.requests == []
            assert (await admin.call("repos.list", workspace_id=ws))["repos"] == []

            # Named by the owner, a private address is reachable, pinned to the address checked.
            await srv.ctx.service(IdentityService).set_setting(SETTING_TRUSTED_REPO_HOSTS, ["DB.corp.example.test."])
            way = await reach(srv.ctx, "url", f"https://db.corp.example.test:{port}/a.git", by_owner=False, field="url")
            assert f"http.curloptResolve=db.corp.example.test:{port}:10.9.8.7" in way.options
            assert not way.server_identity and "http.followRedirects=false" in way.options
            await refused(admin, ws, f"https://meta.corp.example.test:{port}/app.git")  # never, named or not

            repo = await owner.call("repos.register", workspace_id=ws, url=forge.url("app.git"))
            assert repo["defaultBranch"] == "main" and forge.requests


async def test_git_connects_only_to_the_address_checked_and_checks_again_at_every_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin's name resolves to a public address (the stand-in) when registered: git connects there, not
    wherever its own lookup would go. By the next checkout it resolves to this host's loopback, where the same
    repository is served too: the fetch is refused and nothing reaches the loopback.

    The name is ``localhost`` because git on this host resolves it by itself (no test DNS reaches git), so code
    that checks nothing takes the same steps and fetches from the loopback."""
    public = loopback_address()
    public_stand_in(monkeypatch, public)
    root = forge_root(tmp_path)
    with GitHttp(root) as near, GitHttp(root, public, near.port) as far:
        url = f"http://localhost:{near.port}/app.git"
        async with admin_of(tmp_path) as (_srv, _owner, admin, ws):
            with monkeypatch.context() as dns:
                answering(dns, {"localhost": public})
                repo = await admin.call("repos.register", workspace_id=ws, url=url)
            assert repo["source"] == url
            pinned, looked_up = list(far.requests), list(near.requests)
            near.requests.clear()
            space = await admin.call("spaces.create", workspace_id=ws, title="work")

            with pytest.raises(RpcError) as err:
                await admin.call("worktrees.add", workspace_id=ws, repo="app", spaceId=space["id"])
            assert err.value.code == "forbidden"
            assert err.value.message.startswith(
                f"repo: the origin of repo app ({url}) is not reached from this server: localhost resolves to "
                "127.0.0.1, a loopback address, which a workspace admin's clones never reach"
            )
            with pytest.raises(RpcError) as err:
                await admin.call("worktrees.add", workspace_id=ws, repo="app#1", spaceId=space["id"])
            assert err.value.code == "forbidden" and "loopback" in err.value.message
            assert near.requests == []
            # When registered, git went to the address checked, not where its own lookup would have gone.
            assert pinned and looked_up == []


async def test_a_redirect_to_an_internal_address_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public server (the stand-in) answers the admin's URL with a redirect to this host's loopback: git does not
    follow it, and the admin is told to register the URL it leads to. The owner's clone follows it as before."""
    public = loopback_address()
    public_stand_in(monkeypatch, public)
    root = forge_root(tmp_path)
    with GitHttp(root) as internal, GitHttp(root, public) as redirecting:
        redirecting.redirects["/app.git"] = internal.url("app.git")
        async with admin_of(tmp_path) as (_srv, owner, admin, ws):
            message = await refused(admin, ws, redirecting.url("app.git"), code="invalid_args")
            assert "returned error: 302" in message and "register the URL it leads to" in message, message
            assert internal.requests == [] and redirecting.requests
            assert (await admin.call("repos.list", workspace_id=ws))["repos"] == []
            await owner.call("repos.register", workspace_id=ws, url=redirecting.url("app.git"))
            assert internal.requests


async def test_an_admins_clone_uses_none_of_the_server_users_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's user has a credential helper and a ``.netrc`` for the forge: an admin's clone of a repository
    that asks for credentials gets none of them (and fails), the owner's gets them."""
    public = loopback_address()
    public_stand_in(monkeypatch, public)
    home = tmp_path / "home"
    home.mkdir()
    used = home / "helper-used"
    (home / ".gitconfig").write_text(
        f'[credential]\n\thelper = "!f() {{ echo used >> {used}; echo username=server; echo password=s3cret; }}; f"\n'
    )
    (home / ".netrc").write_text(f"machine {public} login server password s3cret\n")
    (home / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with GitHttp(forge_root(tmp_path), public) as forge:
        forge.needs_auth = True
        async with admin_of(tmp_path) as (_srv, owner, admin, ws):
            message = await refused(admin, ws, forge.url("app.git"), code="invalid_args")
            assert "cannot be cloned" in message, message
            assert forge.credentials == [] and not used.exists()
            await owner.call("repos.register", workspace_id=ws, url=forge.url("app.git"))
            assert forge.credentials


async def test_trusted_repo_hosts_setting(tmp_path: Path) -> None:
    """Host names or addresses, normalized; at most MAX_TRUSTED_REPO_HOSTS; the command line shows and clears."""
    async with workspace_server(tmp_path) as (srv, _owner, _ws):
        identity = srv.ctx.service(IdentityService)
        for bad in ("forge.example.test", ["https://forge.example.test"], ["a b"], ["*.example.test"], [3]):
            with pytest.raises(InvalidArgs) as err:
                await identity.set_setting(SETTING_TRUSTED_REPO_HOSTS, bad)
            assert err.value.field == SETTING_TRUSTED_REPO_HOSTS
        most = [f"h{i}.example.test" for i in range(MAX_TRUSTED_REPO_HOSTS)]
        await identity.set_setting(SETTING_TRUSTED_REPO_HOSTS, most)
        with pytest.raises(InvalidArgs):
            await identity.set_setting(SETTING_TRUSTED_REPO_HOSTS, [*most, "one-more.example.test"])
        await identity.set_setting(SETTING_TRUSTED_REPO_HOSTS, ["Forge.Example.Test.", "10.1.2.3", "::FFFF:a00:1"])
        stored = await identity.get_setting(SETTING_TRUSTED_REPO_HOSTS)
        assert stored == ["forge.example.test", "10.1.2.3", "::ffff:a00:1"]
        both = hosts_cli(srv.data_dir, "forge.example.test", "--clear")
        assert both.returncode != 0 and "give hosts or --clear, not both" in both.stderr
        wrong = hosts_cli(srv.data_dir, "not a host")
        assert wrong.returncode != 0 and "must be a list of at most 32 host names or IP addresses" in wrong.stderr
        assert "workspace admins may register ssh URLs of" in hosts_cli(srv.data_dir).stdout
