"""Connecting a workspace to GitHub (an app or a token), its status, linking repos and disconnecting, over the real
server's RPC against the GitHub API emulator (``tests.peers.github_emulator``): the app's JWT is checked there
with its public key. Credentials are write-only (in no reply, no audit row), kept 0600 in a 0700 folder; each
op needs a workspace admin or the owner: a member, a guest and another workspace's admin are refused."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hangar.forges.reach import SETTING_TRUSTED_FORGE_HOSTS
from hangar.identity import IdentityService
from tests.integration.test_workspace_repos import _git, make_repo
from tests.peers.git_http import GitHttp
from tests.peers.github_emulator import GitHubEmulator, github_emulator, new_app_key
from tests.support.records import on_postgresql, stored_secret
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

APP_ID = 4242


async def trust_forge(srv: RunningServer, api_url: str) -> None:
    """The server owner names the forge's API host and port (``trustedForgeHosts``): the emulator serves on this
    host's loopback, which a workspace admin's connection reaches only then."""
    where = urlsplit(api_url)
    await srv.ctx.service(IdentityService).set_setting(SETTING_TRUSTED_FORGE_HOSTS, [f"{where.hostname}:{where.port}"])


@asynccontextmanager
async def forge_server(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RpcClient, str, GitHubEmulator]]:
    async with github_emulator() as gh, running_server(tmp_path / "data") as srv:
        await trust_forge(srv, gh.api_url)
        ws = await srv.new_workspace("forged")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            yield srv, owner, ws, gh


def forge_files(srv: RunningServer, ws: str) -> Path:
    return srv.data_dir / ws / "forge_credentials"


def stored_forge(srv: RunningServer, ws: str) -> Any:
    """The workspace's stored forge connection, wherever the install keeps it (None: none)."""
    raw = stored_secret(srv.data_dir, "forge_credentials/github", ws)
    return None if raw is None else json.loads(raw)


async def audit_rows(srv: RunningServer, ws: str) -> str:
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        return json.dumps(await c.call("audit.list", workspace_id=ws))


async def test_an_admin_connects_an_app_whose_installations_are_listed_and_its_key_is_never_answered(
    tmp_path: Path,
) -> None:
    async with forge_server(tmp_path) as (srv, _owner, ws, gh):
        key = gh.add_app(APP_ID)
        installation = gh.install(APP_ID, "acme", ["app", "site"])
        admin_token = await srv.new_user_token(ws, "admin", name="ada")
        async with RpcClient(srv.ws_url, admin_token) as admin:
            before = await admin.call("forge.status", workspace_id=ws)
            assert before["connected"] is False
            assert before["setupUrl"].startswith("https://github.com/settings/apps/new?name=Hangar&")
            assert "contents=write" in before["setupUrl"] and "pull_requests=write" in before["setupUrl"]
            org = await admin.call("forge.status", workspace_id=ws, org="acme", baseUrl="https://ghe.example.test")
            assert org["setupUrl"].startswith("https://ghe.example.test/organizations/acme/settings/apps/new?")
            for bad in ("acme/../x", "-acme", "a" * 40):
                with pytest.raises(RpcError) as not_an_org:
                    await admin.call("forge.status", workspace_id=ws, org=bad)
                assert not_an_org.value.code == "invalid_args" and "org" in not_an_org.value.message
            at_limit = await admin.call("forge.status", workspace_id=ws, org="a" * 39)
            assert f"/organizations/{'a' * 39}/settings" in at_limit["setupUrl"]

            status = await admin.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
            assert status["connected"] is True and status["kind"] == "app" and status["host"] == "github.com"
            assert status["appId"] == APP_ID and status["brokersTokens"] is True and "error" not in status
            assert status["installations"] == [
                {"id": installation, "account": "acme", "repositorySelection": "selected"}
            ]
            assert "GET /app/installations app:4242" in gh.requests  # the JWT, checked with the app's public key
            again = await admin.call("forge.status", workspace_id=ws)
            assert again["installations"] == status["installations"]

        body = key.splitlines()[1]
        assert body not in json.dumps(status) and body not in json.dumps(again)
        assert body not in await audit_rows(srv, ws)
        if not on_postgresql(srv.data_dir):  # files on SQLite, owner-only (sealed rows on PostgreSQL)
            folder = forge_files(srv, ws)
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
            assert stat.S_IMODE((folder / "github.json").stat().st_mode) == 0o600
        assert stored_forge(srv, ws)["privateKey"].strip() == key.strip()
        assert '"fields": ["appId", "privateKey"]' in await audit_rows(srv, ws)


async def test_credentials_the_forge_refuses_or_that_are_malformed_are_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    async with forge_server(tmp_path) as (srv, owner, ws, gh):
        gh.add_app(APP_ID)
        other_key, _ = new_app_key()  # not the app's: its JWT fails the emulator's check
        with pytest.raises(RpcError) as refused:
            await owner.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=other_key, apiUrl=gh.api_url)
        assert refused.value.code == "refused"
        assert refused.value.message == "github.com refused to list the app's installations (401: Bad credentials)"
        for args, field in (
            ({"appId": APP_ID, "privateKey": "not a key"}, "privateKey"),
            ({"appId": APP_ID}, "appId"),
            ({"appId": 0, "privateKey": other_key}, "appId"),
            ({"appId": APP_ID, "privateKey": other_key, "token": "t"}, "token"),
            ({"token": "t", "baseUrl": "ftp://ghe.example.test"}, "baseUrl"),
            ({"token": "t", "apiUrl": "https://user:pw@ghe.example.test/api/v3"}, "apiUrl"),
        ):
            with pytest.raises(RpcError) as bad:
                await owner.call("forge.connect", workspace_id=ws, **{"apiUrl": gh.api_url, **args})
            assert bad.value.code == "invalid_args", (args, bad.value)
            assert field in bad.value.message, (args, bad.value.message)
        with pytest.raises(RpcError) as denied_token:
            await owner.call("forge.connect", workspace_id=ws, token="ghp_unknown0000", apiUrl=gh.api_url)
        assert denied_token.value.message == "github.com refused to identify the token (401: Bad credentials)"
        assert stored_forge(srv, ws) is None
        assert (await owner.call("forge.status", workspace_id=ws))["connected"] is False


async def test_a_token_connection_says_whose_it_is_and_that_it_brokers_no_step_tokens(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (srv, owner, ws, gh):
        gh.user_tokens["ghp_personal_token_123"] = "ada"
        status = await owner.call(
            "forge.connect",
            workspace_id=ws,
            token="ghp_personal_token_123",
            baseUrl="https://ghe.example.test",
            apiUrl=gh.api_url,
        )
        assert status["kind"] == "token" and status["login"] == "ada" and status["host"] == "ghe.example.test"
        assert status["brokersTokens"] is False and "cannot be narrowed" in status["note"]
        assert "ghp_personal_token_123" not in json.dumps(status) + await audit_rows(srv, ws)
        gh.user_tokens.clear()  # revoked at the forge: the status says so, and stays readable
        later = await owner.call("forge.status", workspace_id=ws)
        assert (
            later["connected"] is True
            and later["error"] == "ghe.example.test refused to identify the token (401: Bad credentials)"
        )
        gone = await owner.call("forge.disconnect", workspace_id=ws)
        assert gone["connected"] is False and stored_forge(srv, ws) is None
        assert "forge.disconnect" in await audit_rows(srv, ws)


async def test_only_a_workspace_admin_or_the_owner_uses_the_forge_ops(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (srv, owner, ws, gh):
        key = gh.add_app(APP_ID)
        other_ws = await srv.new_workspace("elsewhere")
        callers = {
            "member": await srv.new_user_token(ws, "member", name="mem"),
            "guest": await srv.new_user_token(ws, "guest", name="gus"),
            "another workspace's admin": await srv.new_user_token(other_ws, "admin", name="oth"),
        }
        calls: list[tuple[str, dict[str, Any]]] = [
            ("forge.connect", {"appId": APP_ID, "privateKey": key, "apiUrl": gh.api_url}),
            ("forge.status", {}),
            ("forge.disconnect", {}),
            ("forge.linkRepo", {"repoId": "app", "fullName": "acme/app"}),
        ]
        for who, token in callers.items():
            async with RpcClient(srv.ws_url, token) as c:
                for name, args in calls:
                    with pytest.raises(RpcError) as refused:
                        await c.call(name, workspace_id=ws, **args)
                    assert refused.value.code == "forbidden", (who, name, refused.value)
                if who != "member":  # nor may they run a shell step, the way a forge token is asked for
                    step = {
                        "id": "s",
                        "kind": "listen",
                        "body": "shell.run",
                        "config": {"script": "true", "repoIds": ["app"]},
                    }
                    with pytest.raises(RpcError) as no_run:
                        await c.call(
                            "pipelines.templates.create", workspace_id=ws, template={"id": "t", "steps": [step]}
                        )
                    assert no_run.value.code == "forbidden", (who, no_run.value)
                    with pytest.raises(RpcError) as no_start:
                        await c.call("pipelines.runs.start", workspace_id=ws, templateId="t")
                    assert no_start.value.code == "forbidden", (who, no_start.value)
        assert stored_forge(srv, ws) is None and gh.requests == []
        # the owner and an admin may
        admin = await srv.new_user_token(ws, "admin", name="adm")
        async with RpcClient(srv.ws_url, admin) as c:
            assert (await c.call(*calls[0][:1], workspace_id=ws, **calls[0][1]))["connected"] is True
            assert (await c.call("forge.disconnect", workspace_id=ws))["connected"] is False
        assert (await owner.call("forge.connect", workspace_id=ws, **calls[0][1]))["connected"] is True
        assert (await owner.call("forge.status", workspace_id=ws))["connected"] is True


async def test_repos_link_through_their_origin_on_the_forge_host_or_by_hand(tmp_path: Path) -> None:
    root = tmp_path / "forge"
    (root / "acme").mkdir(parents=True)
    _git(tmp_path, "clone", "-q", "--bare", str(make_repo(tmp_path / "src", "app")), str(root / "acme" / "app.git"))
    _git(tmp_path, "clone", "-q", "--bare", str(make_repo(tmp_path / "src2", "lib")), str(root / "lib.git"))
    with GitHttp(root) as git:
        async with forge_server(tmp_path) as (_srv, owner, ws, gh):
            with pytest.raises(RpcError) as unconnected:
                await owner.call("forge.linkRepo", workspace_id=ws, repoId="app", fullName="acme/app")
            assert unconnected.value.message.startswith("no forge is connected to this workspace")
            key = gh.add_app(APP_ID)
            gh.install(APP_ID, "acme", ["app", "lib"])
            # a GitHub Enterprise Server at the git server's address: repos cloned from it link by their origin
            await owner.call(
                "forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, baseUrl=git.url(""), apiUrl=gh.api_url
            )
            app = await owner.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
            lib = await owner.call("repos.register", workspace_id=ws, url=git.url("lib.git"))
            status = await owner.call("forge.status", workspace_id=ws)
            assert status["links"] == [
                {"repoId": app["id"], "repoName": app["name"], "fullName": "acme/app", "how": "origin"}
            ]
            for bad in ("acme", "acme/app/x", "-x/app", "acme/a b", "acme/..", "acme/.", "a" * 40 + "/app"):
                with pytest.raises(RpcError) as malformed:
                    await owner.call("forge.linkRepo", workspace_id=ws, repoId=lib["id"], fullName=bad)
                assert malformed.value.code == "invalid_args", bad
            with pytest.raises(RpcError) as not_installed:
                await owner.call("forge.linkRepo", workspace_id=ws, repoId=lib["id"], fullName="other/lib")
            assert not_installed.value.message.startswith(
                "127.0.0.1 refused to find the app's installation on other/lib (404"
            )
            gh.install(APP_ID, "a" * 39, ["x" * 100])  # the longest owner and name GitHub allows
            longest = await owner.call(
                "forge.linkRepo", workspace_id=ws, repoId=lib["id"], fullName=f"{'a' * 39}/{'x' * 100}"
            )
            assert f"{'a' * 39}/{'x' * 100}" in [k["fullName"] for k in longest["links"]]
            with pytest.raises(RpcError) as too_long:
                await owner.call("forge.linkRepo", workspace_id=ws, repoId=lib["id"], fullName=f"acme/{'x' * 101}")
            assert too_long.value.code == "invalid_args"
            linked = await owner.call("forge.linkRepo", workspace_id=ws, repoId=lib["name"], fullName="acme/lib.git")
            assert {"repoId": lib["id"], "repoName": lib["name"], "fullName": "acme/lib", "how": "given"} in linked[
                "links"
            ]
            unlinked = await owner.call("forge.linkRepo", workspace_id=ws, repoId=lib["id"])
            assert [k["repoName"] for k in unlinked["links"]] == [app["name"]]
            # PR checkouts and fetches are the repos' own: linking changes nothing of them
            assert (await owner.call("repos.list", workspace_id=ws))["repos"]


async def test_a_command_agent_names_at_most_twenty_forge_repos(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, _gh):
        repos = [f"r{i}" for i in range(21)]
        adapter = {"type": "command", "argv": ["true"], "forgeRepos": repos[:20]}
        made = await owner.call("agents.create", workspace_id=ws, name="Twenty", adapter=adapter)
        assert made["adapter"]["forgeRepos"] == repos[:20]
        with pytest.raises(RpcError) as refused:
            await owner.call(
                "agents.create", workspace_id=ws, name="Too many", adapter={**adapter, "forgeRepos": repos}
            )
        assert refused.value.code == "invalid_args" and "forgeRepos" in refused.value.message
