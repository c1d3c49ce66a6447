"""The terminal's "worktree's own forge host" comes from the server's record of the repo's origin, never from the
worktree the rig writes; and the gate refuses names that resolve to loopback, private or link-local addresses.

Real server, real rigs. A member forges the worktree's ``.git`` (a ``gitdir:`` of their own with a remote naming
an internal host) from inside a rig; the next rig of the space does not reach that host, which an upstream
override points at a listener here. Names are pointed at this host's loopback or at private and metadata
addresses through the host's resolver (``tests.support.resolver``); no connection of these tests leaves the host.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.agents.adapters.command import agent_run_key
from hangar.core.confine import Confinement, Job, Scope
from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.egress import EgressGate
from hangar.workspace import SpaceService
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_workspace_repos import make_repo
from tests.support.resolver import answering, loopback_address, only_loopback
from tests.support.rpc import RpcClient

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]

INTERNAL = "internal-admin.corp.invalid"
FORGE = "https://internal-admin.corp.invalid/x.git"
# What a member writes over the worktree's ".git": a gitdir of their own whose config names an internal host.
FORGE_GITDIR = (
    "cd {where} && mkdir -p .forged && "
    "printf '[remote \"origin\"]\\n\\turl = {url}\\n' > .forged/config && printf 'gitdir: .forged\\n' > .git"
)


class Listener:
    """An HTTP peer on this host standing in for an internal service; records every request."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0) -> None:
        self.address, self.port = address, port
        self.requests: list[str] = []
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> Listener:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append(head.split(b"\r\n")[0].decode())
            body = b"internal service answered\n"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(handle, self.address, self.port)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


def curl(url: str) -> str:
    return f"curl -sS -m 10 {url}; echo rc=$?"


async def space_with_worktree(env: RigsEnv, tmp_path: Path, source: dict[str, str]) -> None:
    """A repo registered by the admin (``source``: ``path=`` or ``url=``) and checked out in the test space."""
    repo = await env.call("repos.register", **source)
    await env.call("worktrees.add", spaceId=env.space, repo=repo["id"])


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[tuple[RigsEnv, RpcClient, Listener]]:
    async with Listener() as internal:
        overrides = {f"{INTERNAL}:80": ("127.0.0.1", internal.port)}
        async with rigs_server(tmp_path, overrides=overrides) as env:
            await space_with_worktree(env, tmp_path, {"path": str(make_repo(tmp_path, "app"))})
            token = await env.srv.new_user_token(env.ws, "member", name="m")
            async with RpcClient(env.srv.ws_url, token) as client:
                yield env, client, internal


def gate_of(env: RigsEnv, rig_id: str) -> EgressGate:
    live = env.manager.rigs.get(rig_id)
    assert live is not None and isinstance(live.handle, EnclosureRig)
    return live.handle.gate


async def open_rig(env: RigsEnv, client: RpcClient) -> str:
    reply = await client.call("rig.open", workspace_id=env.ws, space_id=env.space, surface="terminal")
    assert reply["phase"] == "ready", reply
    return str(reply["rigId"])


async def run(env: RigsEnv, client: RpcClient, rig: str, command: str) -> str:
    out = await client.call("rig.exec", workspace_id=env.ws, rigId=rig, command=command)
    return str(out["stdout"]) + str(out["stderr"])


async def test_a_forged_gitdir_in_the_worktree_does_not_open_the_gate(
    member: tuple[RigsEnv, RpcClient, Listener],
) -> None:
    env, client, internal = member
    first = await open_rig(env, client)
    await run(env, client, first, FORGE_GITDIR.format(where="~/worktree", url=FORGE))
    assert "gitdir: .forged" in await run(env, client, first, "cat ~/worktree/.git")
    await client.call("rig_close", workspace_id=env.ws, rigId=first)
    second = await open_rig(env, client)  # its allowlist is made now, after the forgery
    out = await run(env, client, second, curl(f"http://{INTERNAL}/admin"))
    assert "internal service answered" not in out and "rc=0" not in out, out
    assert internal.requests == []
    events = [e for e in gate_of(env, second).events if e.target == INTERNAL]
    assert events and all(not e.allowed and e.reason == "name not allow-listed" for e in events)


async def test_a_single_label_forge_name_does_not_make_the_spaces_rigs_unbootable(
    member: tuple[RigsEnv, RpcClient, Listener],
) -> None:
    env, client, _internal = member
    first = await open_rig(env, client)
    await run(env, client, first, FORGE_GITDIR.format(where="~/worktree", url="http://intranet/x.git"))
    await client.call("rig_close", workspace_id=env.ws, rigId=first)
    second = await open_rig(env, client)
    assert "rig-ok" in await run(env, client, second, "echo rig-ok")


async def test_the_forge_host_comes_from_the_repos_recorded_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repos registered by URL: the forge host of the recorded origin is on the space's terminal allowlist; one
    whose host is a single label (``gitserver``) is left off, and the rigs still boot."""
    origins = {"https://forge.example.test/team/app.git": make_repo(tmp_path, "forge"),
               "http://gitserver/team/lib.git": make_repo(tmp_path, "label")}  # fmt: skip
    async with Listener() as forge:
        overrides = {"forge.example.test:80": ("127.0.0.1", forge.port)}
        async with rigs_server(tmp_path, overrides=overrides) as env:
            for url, local in origins.items():
                # Cloned from a local copy (no forge answers here); the record then says what a registration by
                # URL records: the URL, which is all the allowlist reads.
                repo = await env.call("repos.register", path=str(local))
                engine = await env.srv.ctx.dbs.workspace(env.ws)
                async with engine.begin() as conn:
                    await conn.execute(
                        sa.text("UPDATE repos SET source_kind = 'url', source = :url WHERE id = :id"),
                        {"url": url, "id": repo["id"]},
                    )
                await env.call("worktrees.add", spaceId=env.space, repo=repo["id"])
            rig = await env.open()
            out = (await env.exec(rig, curl("http://forge.example.test/team/app.git/info/refs")))["stdout"]
            assert "internal service answered" in out and forge.requests == ["GET /team/app.git/info/refs HTTP/1.1"]
            allow = gate_of(env, rig).allowlist
            assert "forge.example.test" in allow and "gitserver" not in allow


async def test_the_spaces_enclosure_for_user_code_ignores_a_forged_gitdir(
    member: tuple[RigsEnv, RpcClient, Listener],
) -> None:
    """Command agents and setup scripts run in enclosures over the space's folder, which they write: a ``.git``
    they leave there does not name the next enclosure's forge host."""
    env, _client, internal = member
    confinement = env.srv.ctx.service(Confinement)
    folder = env.srv.ctx.service(SpaceService).folder(env.ws, env.space)
    scope = Scope(agent_run_key("run-1"), env.ws, folder, space_id=env.space)
    forged = await confinement.run(scope, Job(("bash", "-c", FORGE_GITDIR.format(where=".", url=FORGE))))
    assert forged.exit_code == 0, forged
    assert (folder / ".git").read_text() == "gitdir: .forged\n"
    await confinement.release(scope.key)  # the next job boots a new enclosure, its allowlist made anew
    done = await confinement.run(scope, Job(("bash", "-c", curl(f"http://{INTERNAL}/admin"))))
    assert "internal service answered" not in done.stdout and "rc=0" not in done.stdout, done
    assert internal.requests == []


async def test_names_resolving_to_loopback_private_or_link_local_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin grants names; what they resolve to on the host decides. The host's loopback and the metadata
    service are refused even for an exact grant; a private address is refused for a name allowed only by a
    ``*.suffix`` grant. The rig reads why in the gate's answer; the log says it against the rig."""
    only_loopback(monkeypatch)
    async with Listener(loopback_address(), 80) as local_service:
        answering(
            monkeypatch,
            {
                "intranet.example.test": local_service.address,
                "db.corp.example.test": "10.9.8.7",
                "meta.corp.example.test": "169.254.169.254",
                "v6.corp.example.test": "::ffff:127.0.0.1",
            },
        )
        async with rigs_server(tmp_path) as env:
            rig = await env.open()
            await env.call("rig.grantHosts", rigId=rig, hosts=["intranet.example.test", "*.corp.example.test"])
            said: dict[str, str] = {}
            for name in ("intranet", "db.corp", "meta.corp", "v6.corp"):
                command = f"curl -sS -m 10 -w ' status=%{{http_code}}' http://{name}.example.test/"
                said[name] = (await env.exec(rig, command))["stdout"]
            # Told why, never the address the name resolved to (the server's log keeps that).
            assert said["intranet"] == (
                "egress to intranet.example.test is refused: intranet.example.test resolves to "
                "a loopback address, which rigs never reach\n status=403"
            )
            private = "resolves to a private address, which rigs reach only when an admin named the host"
            assert private in said["db.corp"]
            assert "resolves to the cloud metadata service, which rigs never reach" in said["meta.corp"]
            assert "resolves to a loopback address" in said["v6.corp"]
            for address in (local_service.address, "10.9.8.7", "169.254.169.254", "::ffff:127.0.0.1"):
                assert all(address not in out for out in said.values()), (address, said)
            assert all(out.endswith("status=403") for out in said.values()), said
            assert local_service.requests == []
            events = gate_of(env, rig).events
            refused = {e.target for e in events if not e.allowed and "resolves to" in e.reason}
            assert refused == {f"{name}.example.test" for name in said}
            # HTTPS to the same name: the connection is dropped (inside TLS nothing can say why) and logged
            out = (await env.exec(rig, "curl -sS -m 10 https://intranet.example.test/; echo rc=$?"))["stdout"]
            assert "rc=0" not in out and local_service.requests == []
