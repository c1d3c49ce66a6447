"""Where a forge connection may send the server: a workspace admin's (not the server owner's) reaches only public
addresses unless the server owner names the host (``trustedForgeHosts``); every call through it (the connect's
check, the status, linking, minting and revoking a token) goes to exactly an address checked for it, checked again
at each use. Over the real server's RPC against the GitHub API emulator on this host's loopback; the test's
resolver answers as a hostile DNS record would, and no connection leaves this host (``only_loopback``)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hangar.errors import InvalidArgs, Refused
from hangar.forges.broker import CredentialBroker
from hangar.forges.reach import MAX_TRUSTED_FORGE_HOSTS, SETTING_TRUSTED_FORGE_HOSTS, TRUSTED_FORGE_HOSTS_FIX
from hangar.identity import IdentityService
from tests.integration.test_forges_connect import APP_ID, forge_files
from tests.integration.test_workspace_repos import make_repo
from tests.peers.github_emulator import API, github_emulator
from tests.support.processes import cli
from tests.support.resolver import only_loopback
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

WHO = "a workspace admin's forge connections"
NAMED_ONLY = f"which {WHO} reach only when the server owner names the host ({TRUSTED_FORGE_HOSTS_FIX})"
NEVER = f"which {WHO} never reach"


class Records:
    """The names the test's resolver answers for, each with its answers in turn (the last one from then on)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []
        real = socket.getaddrinfo

        def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
            if isinstance(host, bytes):
                host = host.decode("ascii", "replace")
            if isinstance(host, str) and host in self.answers:
                self.asked.append(host)
                queued = self.answers[host]
                address = queued.pop(0) if len(queued) > 1 else queued[0]
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", lookup)


async def trust(srv: RunningServer, hosts: list[str]) -> None:
    await srv.ctx.service(IdentityService).set_setting(SETTING_TRUSTED_FORGE_HOSTS, hosts)


async def refused(client: RpcClient, ws: str, key: str, code: str = "forbidden", **where: str) -> str:
    with pytest.raises(RpcError) as err:
        await client.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, **where)
    assert err.value.code == code, err.value.message
    return err.value.message


@pytest.mark.sqlite_only("reads the forge's credential file, a sealed row on PostgreSQL")
async def test_an_admins_forge_connection_reaches_no_internal_address_unless_the_owner_names_its_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_loopback(monkeypatch)
    records = Records(monkeypatch)
    async with github_emulator() as gh, running_server(tmp_path / "data") as srv:
        port = urlsplit(gh.api_url).port
        records.answers["ghe.inside.test"] = ["127.0.0.1"]
        ws = await srv.new_workspace("forged")
        key = gh.add_app(APP_ID)
        gh.install(APP_ID, "acme", ["app"])
        admin_token = await srv.new_user_token(ws, "admin", name="ada")
        loopback = {"apiUrl": gh.api_url}
        by_base = {"baseUrl": f"http://127.0.0.1:{port}"}  # the API at <baseUrl>/api/v3
        private = {"apiUrl": "http://10.1.2.3/api/v3"}
        metadata = {"apiUrl": "http://169.254.169.254/api/v3"}
        by_name = {"apiUrl": f"http://ghe.inside.test:{port}{API}"}
        async with RpcClient(srv.ws_url, admin_token) as admin:
            told = await refused(admin, ws, key, **loopback)
            assert told.startswith(f"apiUrl: {gh.api_url} is not reached from this server")
            assert f"127.0.0.1 is a loopback address, {NAMED_ONLY}" in told
            assert "baseUrl:" in await refused(admin, ws, key, **by_base)
            assert f"10.1.2.3 is a private address, {NAMED_ONLY}" in await refused(admin, ws, key, **private)
            assert f"the cloud metadata service, {NEVER}" in await refused(admin, ws, key, **metadata)
            assert f"resolves to 127.0.0.1, a loopback address, {NAMED_ONLY}" in await refused(
                admin, ws, key, **by_name
            )
            with pytest.raises(RpcError) as token:
                await admin.call("forge.connect", workspace_id=ws, token="ghp_x", **loopback)
            assert token.value.code == "forbidden"
            assert gh.requests == []  # nothing was sent to any of them
            assert not (forge_files(srv, ws) / "github.json").exists()
            assert (await admin.call("forge.status", workspace_id=ws))["connected"] is False

            # the server owner names the hosts: loopback and private addresses open, metadata never does
            await trust(srv, [f"127.0.0.1:{port}", f"ghe.inside.test:{port}", "10.1.2.3", "169.254.169.254"])
            for where in (loopback, by_base, by_name):
                status = await admin.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, **where)
                assert status["connected"] is True and "error" not in status, (where, status)
                assert status["installations"][0]["account"] == "acme"
            # checked and allowed: the connection is tried (this test's guard keeps it from leaving the host)
            assert "could not be reached" in await refused(admin, ws, key, "unavailable", **private)
            assert f"the cloud metadata service, {NEVER}" in await refused(admin, ws, key, **metadata)
            # a host named at one port is not named at another, nor at the port this server listens on
            await trust(srv, [f"127.0.0.1:{port + 1}", "localhost"])
            assert NAMED_ONLY in await refused(admin, ws, key, **loopback)
            own = urlsplit(srv.url).port
            records.answers["localhost"] = ["127.0.0.1"]
            assert f"at port {own}, where this server listens" in await refused(
                admin, ws, key, apiUrl=f"http://localhost:{own}/api/v3"
            )

        # the server owner's connection reaches any address, named or not
        await trust(srv, [])
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            mine = await owner.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, **loopback)
            assert mine["connected"] is True and "error" not in mine
            assert json_of(forge_files(srv, ws) / "github.json")["byOwner"] is True


def json_of(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


async def test_every_later_call_goes_to_an_address_checked_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name answers loopback when checked and a private address when asked once more: each call connects to the
    address checked, the name is looked up once per use (a client resolving it itself would be stopped by the
    guard). When the name later answers the metadata service, the status, a link and a token are refused, nothing
    sent."""
    only_loopback(monkeypatch)
    records = Records(monkeypatch)
    name = "ghe.rebind.test"
    async with github_emulator() as gh, running_server(tmp_path / "data") as srv:
        port = urlsplit(gh.api_url).port
        api = f"http://{name}:{port}{API}"
        ws = await srv.new_workspace("forged")
        key = gh.add_app(APP_ID)
        gh.install(APP_ID, "acme", ["app", "lib"])
        await trust(srv, [f"{name}:{port}"])
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            app = await owner.call("repos.register", workspace_id=ws, path=str(make_repo(tmp_path / "src", "app")))
        async with RpcClient(srv.ws_url, await srv.new_user_token(ws, "admin", name="ada")) as admin:
            # each op checks the name once per use (its own call, then the status it answers) and connects to the
            # answer checked: a third lookup, a client resolving the name itself, would get the private address
            records.answers[name] = ["127.0.0.1", "127.0.0.1", "10.9.9.9"]
            status = await admin.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=api)
            assert status["connected"] is True and "error" not in status, status
            assert records.asked == [name] * 2
            records.answers[name] = ["127.0.0.1", "127.0.0.1", "10.9.9.9"]
            linked = await admin.call("forge.linkRepo", workspace_id=ws, repoId=app["id"], fullName="acme/app")
            assert [k["fullName"] for k in linked["links"]] == ["acme/app"] and "error" not in linked
            assert records.asked == [name] * 4

            records.answers[name] = ["127.0.0.1", "10.9.9.9"]
            broker = CredentialBroker(srv.ctx)

            async def reaches(host: str) -> bool:
                return True

            async with broker.token(ws, [app["id"]], reaches) as brokered:
                assert brokered.repositories == ("acme/app",)
            assert gh.minted[-1].revoked  # revoked through the address it was minted through
            assert records.asked == [name] * 5
            minting_path = f"/app/installations/{gh.minted[-1].installation_id}/access_tokens"
            assert gh.requests[-2:] == [f"POST {minting_path} app:{APP_ID}", "DELETE /installation/token"]

            # the record changes: every later call is checked again and refused
            records.answers[name] = ["169.254.169.254"]
            sent = len(gh.requests)
            now = await admin.call("forge.status", workspace_id=ws)
            assert now["connected"] is True
            assert now["error"].startswith(f"the forge {api} is not reached from this server: {name} resolves to")
            assert NEVER in now["error"]
            with pytest.raises(RpcError) as link:
                await admin.call("forge.linkRepo", workspace_id=ws, repoId=app["id"], fullName="acme/lib")
            assert link.value.code == "refused" and NEVER in link.value.message
            with pytest.raises(Refused) as minting:
                async with broker.token(ws, [app["id"]], reaches):
                    pass
            assert NEVER in minting.value.message
            assert len(gh.requests) == sent and len(gh.minted) == 1


async def test_the_trusted_forge_hosts_setting_holds_at_most_32_hosts_and_the_command_line_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the command line's error box wraps at the terminal's width
    async with running_server(tmp_path / "data") as srv:
        identity = srv.ctx.service(IdentityService)
        for bad in ("ghe.lan", ["https://ghe.lan"], ["a b"], ["*.lan"], [3], ["ghe.lan:0"], ["h:65536"]):
            with pytest.raises(InvalidArgs) as err:
                await identity.set_setting(SETTING_TRUSTED_FORGE_HOSTS, bad)
            assert err.value.field == SETTING_TRUSTED_FORGE_HOSTS
        most = [f"h{i}.example.test" for i in range(MAX_TRUSTED_FORGE_HOSTS)]
        await identity.set_setting(SETTING_TRUSTED_FORGE_HOSTS, most)
        with pytest.raises(InvalidArgs):
            await identity.set_setting(SETTING_TRUSTED_FORGE_HOSTS, [*most, "one-more.example.test"])

        def hosts_cli(*args: str) -> subprocess.CompletedProcess[str]:
            return cli(srv.data_dir, "admin", "trusted-forge-hosts", *args, check=False)

        assert hosts_cli("GHE.lan.", "127.0.0.1:8443").returncode == 0
        assert await identity.get_setting(SETTING_TRUSTED_FORGE_HOSTS) == ["ghe.lan", "127.0.0.1:8443"]
        assert "private and local addresses of: ghe.lan, 127.0.0.1:8443" in hosts_cli().stdout
        wrong = hosts_cli("not a host")
        assert wrong.returncode != 0 and "must be a list of at most 32 host names or IP addresses" in wrong.stderr
        assert "public addresses only" in hosts_cli("--clear").stdout
        assert await identity.get_setting(SETTING_TRUSTED_FORGE_HOSTS) == []
