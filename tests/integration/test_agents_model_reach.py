"""An ``openai`` agent's turns are requests the server makes, with the agent's API key, and their answers flow back
into the run: a workspace admin who is not the server owner must not point them at what the server reaches and
nobody else does, and cannot: neither this host's loopback (by address, by ``localhost``, by a name resolving
there, when the agent is saved or by a later turn), nor its own addresses, the private network or the metadata
service; nor through a redirect or the server's proxy. The server owner names a model host for admins
(``trustedModelHosts``): loopback and private addresses of it, never metadata, never the server's own port. The
server owner's agents work as before.

Real server, real RPC clients, real agent runs against a real OpenAI-compatible server (``fake_openai``) on this
host. The server runs in the test's process, so names are pointed at addresses through the host's resolver there
(``tests.support.resolver``); a loopback address of the test's own stands in for a public server. No connection
of these tests leaves this host (``only_loopback``).
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from tests.support.certs import self_signed
from tests.support.processes import cli
from tests.support.resolver import answering, loopback_address, only_loopback, public_stand_in
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer
from tests.unit.agents.fake_openai import FakeOpenAI, Reply, running_fake_openai, text
from tests.unit.agents.support import wait_run, workspace_server

SETTING = "trustedModelHosts"
FIX = "hangar admin trusted-model-hosts <host>[:<port>]..."
WHO = "a workspace admin's model endpoints"
NAMED_ONLY = f"which {WHO} reach only when the server owner names the host ({FIX})"
NEVER = f"which {WHO} never reach"


def hosts_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(data_dir, "admin", "trusted-model-hosts", *args, check=False)


@asynccontextmanager
async def admin_of(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RpcClient, RpcClient, str, str]]:
    """A running server, its owner's client, a workspace admin's (not the owner), the workspace and a space."""
    async with workspace_server(tmp_path) as (srv, owner, ws):
        token = await srv.new_user_token(ws, role="admin", name="admin")
        async with RpcClient(srv.ws_url, token) as admin:
            space = await owner.call("spaces.create", workspace_id=ws, title="models")
            yield srv, owner, admin, ws, space["id"]


def adapter(base_url: str, model: str = "m") -> dict[str, Any]:
    return {"type": "openai", "baseUrl": base_url, "model": model, "apiKey": "sk-workspace-key"}


async def refused(client: RpcClient, ws: str, base_url: str, code: str = "forbidden") -> str:
    with pytest.raises(RpcError) as err:
        await client.call("agents.create", workspace_id=ws, name="Local", adapter=adapter(base_url))
    assert err.value.code == code, err.value.message
    return err.value.message


async def run(client: RpcClient, ws: str, space: str, agent: str) -> dict[str, Any]:
    started = await client.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt="Hello")
    return await wait_run(client, ws, started["runId"], timeout=60)


async def test_an_admins_agent_reaches_no_internal_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real model server on this host's loopback: the admin's agent naming it (by address, by ``localhost``, by a
    name resolving there, by an IPv6 form) is refused when saved, and so are names and addresses of this host's own,
    private or metadata addresses, by create and by update alike; the server owner's agent reaches it as before."""
    only_loopback(monkeypatch)
    answering(
        monkeypatch,
        {
            "model.example.test": "127.0.0.1",
            "gpu.corp.example.test": "10.9.8.7",
            "meta.corp.example.test": "169.254.169.254",
            "gone.example.test": None,
        },
    )
    async with running_fake_openai() as fake, admin_of(tmp_path) as (_srv, owner, admin, ws, space):
        port = fake.url.split(":")[2].split("/")[0]
        message = await refused(admin, ws, fake.url)
        assert message == (
            f"adapter.baseUrl: {fake.url} is not reached from this server for a workspace admin's agent: 127.0.0.1 is "
            f"a loopback address, {NAMED_ONLY} (the server owner's agents reach any address)"
        )
        for host in ("localhost", "model.example.test", "[::ffff:127.0.0.1]", "127.1"):
            message = await refused(admin, ws, f"http://{host}:{port}/v1")
            assert f"a loopback address, {NAMED_ONLY}" in message, message
        message = await refused(admin, ws, "http://169.254.169.254/latest/meta-data")
        assert f"169.254.169.254 is the cloud metadata service, {NEVER}" in message, message
        message = await refused(admin, ws, "http://meta.corp.example.test/v1")
        assert f"resolves to 169.254.169.254, the cloud metadata service, {NEVER}" in message, message
        message = await refused(admin, ws, "https://10.1.2.3:8000/v1")
        assert f"10.1.2.3 is a private address, {NAMED_ONLY}" in message, message
        message = await refused(admin, ws, "https://gpu.corp.example.test/v1")
        assert f"gpu.corp.example.test resolves to 10.9.8.7, a private address, {NAMED_ONLY}" in message, message
        message = await refused(admin, ws, "https://gone.example.test/v1", code="invalid_args")
        assert message.startswith("adapter.baseUrl: the host gone.example.test of https://gone.example.test/v1 does")
        assert (await admin.call("agents.list", workspace_id=ws))["agents"] == []

        # The owner's agent reaches the loopback as before; an admin may not point it (or another) elsewhere.
        mine = await owner.call("agents.create", workspace_id=ws, name="Mine", adapter=adapter(fake.url))
        assert (await run(admin, ws, space, mine["id"]))["outcome"] == "ok"
        assert len(fake.requests) == 1 and fake.headers[0]["authorization"] == "Bearer sk-workspace-key"
        with pytest.raises(RpcError) as err:
            await admin.call(
                "agents.update", workspace_id=ws, agent_id=mine["id"], adapter=adapter("http://10.1.2.3/v1")
            )
        assert err.value.code == "forbidden" and err.value.message.startswith("adapter.baseUrl: http://10.1.2.3/v1")
        # An admin changing another setting of the owner's endpoint leaves it the owner's.
        await admin.call("agents.update", workspace_id=ws, agent_id=mine["id"], adapter=adapter(fake.url, "m2"))
        assert (await run(admin, ws, space, mine["id"]))["outcome"] == "ok"
        assert len(fake.requests) == 2 and fake.requests[1]["model"] == "m2"
        stored = await owner.call("agents.get", workspace_id=ws, agent_id=mine["id"])
        assert stored["adapter"]["baseUrl"] == fake.url


def certificates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> list[Path]:
    """A folder per name holding a certificate for it (``cert.pem``, ``key.pem``), all of them trusted by the
    server started after this (``SSL_CERT_FILE``)."""
    folders = [tmp_path / f"tls-{name}" for name in names]
    for name, folder in zip(names, folders, strict=True):
        folder.mkdir()
        self_signed(folder, name)
    bundle = tmp_path / "trusted.pem"
    bundle.write_bytes(b"".join((folder / "cert.pem").read_bytes() for folder in folders))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    return folders


async def test_a_turn_goes_to_the_address_checked_and_a_name_moved_to_loopback_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin's name resolves to a public address (the stand-in) when saved: its turns go there, to exactly the
    address checked, looked up once per turn, with TLS speaking to the name and checking its certificate (one for
    another name is refused). By a later run the name resolves to this host's loopback, where a model server with
    the same certificate answers on the same port: the run fails saying why, and nothing reaches the loopback."""
    only_loopback(monkeypatch)
    public, elsewhere = loopback_address(), loopback_address()
    public_stand_in(monkeypatch, public)
    public_stand_in(monkeypatch, elsewhere)
    records: dict[str, str | None] = {"model.example.test": public, "impostor.example.test": elsewhere}
    answering(monkeypatch, records)
    tls, impostors = certificates(tmp_path, monkeypatch, "model.example.test", "other.example.test")
    near = FakeOpenAI(default=text("from the loopback"))
    far = FakeOpenAI(default=text("from the internet"))
    async with (
        running_fake_openai(near, tls=tls) as near,
        running_fake_openai(far, host=public, port=int(near.url.split(":")[2].split("/")[0]), tls=tls),
        running_fake_openai(host=elsewhere, tls=impostors) as impostor,
        admin_of(tmp_path) as (_srv, _owner, admin, ws, space),
    ):
        base_url = near.url.replace("127.0.0.1", "model.example.test")
        agent = await admin.call("agents.create", workspace_id=ws, name="Remote", adapter=adapter(base_url))
        done = await run(admin, ws, space, agent["id"])
        assert done["outcome"] == "ok", done["error"]
        assert len(far.requests) == 1 and near.requests == []
        assert far.headers[0]["host"] == base_url.split("/")[2]  # the name, though the address was connected to

        # A name answering the checked address first and the loopback after gains nothing: it is looked up once.
        lookups: list[str] = []
        real = socket.getaddrinfo

        def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host in ("model.example.test", b"model.example.test"):
                lookups.append(str(host))
                records["model.example.test"] = public if len(lookups) % 2 else "127.0.0.1"
            return real(host, *args, **kwargs)

        with monkeypatch.context() as dns:
            dns.setattr(socket, "getaddrinfo", rebinding)
            done = await run(admin, ws, space, agent["id"])
        assert done["outcome"] == "ok", done["error"]
        assert len(far.requests) == 2 and near.requests == [] and lookups == ["model.example.test"]

        # A certificate for another name than the URL's is refused, though the address is the one checked.
        other_url = impostor.url.replace(elsewhere, "impostor.example.test")
        other = await admin.call("agents.create", workspace_id=ws, name="Impostor", adapter=adapter(other_url))
        done = await run(admin, ws, space, other["id"])
        assert done["outcome"] == "failed" and "CERTIFICATE_VERIFY_FAILED" in done["error"], done["error"]
        assert "impostor.example.test" in done["error"] and impostor.requests == []

        records["model.example.test"] = "127.0.0.1"
        done = await run(admin, ws, space, agent["id"])
        assert near.requests == [] and len(far.requests) == 2
        assert done["outcome"] == "failed"
        assert done["error"] == (
            f"the model endpoint {base_url} is not reached from this server: model.example.test resolves to "
            f"127.0.0.1, a loopback address, {NAMED_ONLY}"
        )


async def test_the_owner_names_a_local_model_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server owner names a model server on this host's loopback (with its port, or the whole host): the admin's
    agent reaches it, at that port only; never this server's own port, never the metadata service, named or not.
    The owner taking the name back stops the agent's next turn."""
    only_loopback(monkeypatch)
    answering(monkeypatch, {"meta.corp.example.test": "169.254.169.254"})
    async with running_fake_openai() as fake, admin_of(tmp_path) as (srv, _owner, admin, ws, space):
        port = int(fake.url.split(":")[2].split("/")[0])
        await refused(admin, ws, fake.url)

        done = hosts_cli(srv.data_dir, f"127.0.0.1:{port + 1}")
        assert done.returncode == 0 and f"127.0.0.1:{port + 1}" in done.stdout, done.stderr
        await refused(admin, ws, fake.url)  # another port of the host named
        done = hosts_cli(srv.data_dir, f"127.0.0.1:{port}", "169.254.169.254", "meta.corp.example.test")
        assert done.returncode == 0, done.stderr
        agent = await admin.call("agents.create", workspace_id=ws, name="Local", adapter=adapter(fake.url))
        done_run = await run(admin, ws, space, agent["id"])
        assert done_run["outcome"] == "ok", done_run["error"]
        assert fake.headers[0]["authorization"] == "Bearer sk-workspace-key"
        for url in ("http://169.254.169.254/latest/meta-data", "http://meta.corp.example.test/v1"):
            message = await refused(admin, ws, url)
            assert f"the cloud metadata service, {NEVER}" in message, message

        # The whole host named: any of its ports but the ones this server listens on.
        assert hosts_cli(srv.data_dir, "127.0.0.1", "localhost").returncode == 0
        await admin.call(
            "agents.create", workspace_id=ws, name="ByName", adapter=adapter(f"http://localhost:{port}/v1")
        )
        own = srv.ctx.settings.port
        message = await refused(admin, ws, f"http://127.0.0.1:{own}/v1")
        assert f"127.0.0.1 is a loopback address at port {own}, where this server listens, {NEVER}" in message

        # Named no more: the agent saved while it was is refused at its next turn.
        assert "public addresses only" in hosts_cli(srv.data_dir, "--clear").stdout
        done_run = await run(admin, ws, space, agent["id"])
        assert done_run["outcome"] == "failed" and f"a loopback address, {NAMED_ONLY}" in done_run["error"]
        assert len(fake.requests) == 1


async def test_no_redirect_and_no_proxy_for_an_admins_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's environment names a proxy: an admin's turns do not go through it (it would resolve the name
    again), the owner's do as before. A public model server (the stand-in) answering with a redirect to this host's
    loopback is not followed: the run says where it led."""
    only_loopback(monkeypatch)
    public = loopback_address()
    public_stand_in(monkeypatch, public)
    proxied: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        proxied.append(await reader.read(200))
        writer.close()

    listener = await asyncio.start_server(proxy, "127.0.0.1", 0)
    proxy_url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy_url)
    for name in ("NO_PROXY", "no_proxy"):  # the test's own RPC client reads them too
        monkeypatch.setenv(name, "127.0.0.1")
    answering(monkeypatch, {"model.example.test": public})
    inside = FakeOpenAI(default=text("from the loopback"))
    try:
        async with (
            running_fake_openai(inside) as inside,
            running_fake_openai(host=public) as far,
            admin_of(tmp_path) as (_srv, owner, admin, ws, space),
        ):
            base_url = far.url.replace(public, "model.example.test")
            agent = await admin.call("agents.create", workspace_id=ws, name="Remote", adapter=adapter(base_url))
            done = await run(admin, ws, space, agent["id"])
            assert proxied == []
            assert done["outcome"] == "ok", done["error"]
            assert len(far.requests) == 1

            far.default = Reply(redirect=f"{inside.url}/chat/completions")
            done = await run(admin, ws, space, agent["id"])
            assert done["outcome"] == "failed"
            assert done["error"] == (
                f"the model endpoint answered HTTP 307, a redirect to {inside.url}/chat/completions, which is not "
                "followed: set adapter.baseUrl to the address it leads to"
            )
            assert inside.requests == [] and proxied == []

            mine = await owner.call("agents.create", workspace_id=ws, name="Mine", adapter=adapter(base_url))
            assert (await run(owner, ws, space, mine["id"]))["outcome"] == "failed"
            assert proxied and b"model.example.test" in proxied[0]  # the owner's client reads the environment
    finally:
        listener.close()


async def test_trusted_model_hosts_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host names or addresses, each with an optional port, normalized; at most 32; the command line shows, sets and
    clears them."""
    monkeypatch.setenv("COLUMNS", "400")  # the command line's error box wraps at the terminal's width
    async with workspace_server(tmp_path) as (srv, _owner, _ws):
        identity = srv.ctx.service(IdentityService)
        for bad in ("ollama.lan", ["http://ollama.lan"], ["a b"], ["*.lan"], [3], ["ollama.lan:0"], ["h:65536"]):
            with pytest.raises(InvalidArgs) as err:
                await identity.set_setting(SETTING, bad)
            assert err.value.field == SETTING
        most = [f"h{i}.example.test" for i in range(32)]
        await identity.set_setting(SETTING, most)
        with pytest.raises(InvalidArgs):
            await identity.set_setting(SETTING, [*most, "one-more.example.test"])
        given = ["Ollama.LAN.", "127.0.0.1:11434", "[::1]:11434", "::FFFF:a00:1", "gpu.lan:8000", "ollama.lan"]
        await identity.set_setting(SETTING, given)
        assert await identity.get_setting(SETTING) == [
            "ollama.lan",
            "127.0.0.1:11434",
            "[::1]:11434",
            "::ffff:a00:1",
            "gpu.lan:8000",
        ]
        both = hosts_cli(srv.data_dir, "ollama.lan", "--clear")
        assert both.returncode != 0 and "give hosts or --clear, not both" in both.stderr
        wrong = hosts_cli(srv.data_dir, "not a host")
        assert wrong.returncode != 0
        assert "must be a list of at most 32 host names or IP addresses, each with an optional :port" in wrong.stderr
        shown = hosts_cli(srv.data_dir).stdout
        assert "private and local addresses of: ollama.lan, 127.0.0.1:11434" in shown, shown
