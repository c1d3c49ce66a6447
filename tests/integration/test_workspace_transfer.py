"""``workspaces.export`` and the import route against real running servers: a workspace exported from one server
and imported into another arrives with every row and file (ids remapped where they must be); who may export, and
the download checking that again; the archive is readable without Hangar."""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from hangar.backup.export.dump import json_value
from hangar.backup.export.load import loaded_tables
from hangar.backup.export.signing import ExportSigner
from hangar.core.principal import Role
from hangar.identity import DeviceScope, IdentityService
from tests.integration.test_backup_restore import files_of
from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server
from tests.support.streams import read_around

IMPORT = "/workspace-transfer/import"


async def export_bytes(srv: RunningServer, ws: str, token: str | None = None) -> bytes:
    async with RpcClient(srv.ws_url, token or srv.owner_token) as client:
        link = await client.call("workspaces.export", workspace_id=ws)
    async with httpx.AsyncClient(timeout=120) as http:
        got = await http.get(link["url"])
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "application/x-tar"
    return got.content


async def upload(srv: RunningServer, archive: bytes, token: str | None = None, **params: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=120) as http:
        return await http.post(
            f"{srv.url}{IMPORT}",
            content=archive,
            params=params,
            headers={"Authorization": f"Bearer {token or srv.owner_token}"},
        )


async def rows_of(srv: RunningServer, ws: str) -> dict[str, list[dict[str, Any]]]:
    """Every row an import writes, as the export writes values, sorted."""
    engine = await srv.ctx.dbs.workspace(ws)
    out: dict[str, list[dict[str, Any]]] = {}
    async with engine.connect() as conn:
        for table in loaded_tables(srv.ctx.dbs.workspace_sets):
            rows = (await conn.execute(sa.select(table))).mappings().all()
            out[table.name] = sorted(
                ({k: json_value(v) for k, v in r.items()} for r in rows), key=lambda r: json.dumps(r, sort_keys=True)
            )
    return out


async def populate(srv: RunningServer, ws: str, tmp: Path) -> dict[str, Any]:
    """A workspace with spaces, messages, a ticket, an agent, a repository checked out in a space, and files."""
    src = make_repo(tmp / "src", "app")
    async with RpcClient(srv.ws_url, srv.owner_token) as client:
        repo = await client.call("repos.register", workspace_id=ws, path=str(src))
        space = await client.call("spaces.create", workspace_id=ws, title="work", repoIds=[repo["id"]])
        other = await client.call("spaces.create", workspace_id=ws, title="chat")
        for i in range(25):
            await client.call("messages.post", workspace_id=ws, space_id=other["id"], content=f"message {i} ✈")
        await client.call("tickets.create", workspace_id=ws, title="a ticket", description="with words")
        await client.call(
            "agents.create",
            workspace_id=ws,
            name="helper",
            adapter={"type": "openai", "baseUrl": "https://models.example.test/v1", "model": "m", "apiKey": "sk-X1"},
        )
    folder = Path(space["folder"])
    (folder / "notes.txt").write_text("notes\n")
    (folder / "link").symlink_to("/etc/passwd")  # stored as a symlink, never followed
    return {"space": space, "repo": repo}


def trees(srv: RunningServer, ws: str) -> dict[str, tuple[str, int, bytes]]:
    root = srv.data_dir / ws
    out: dict[str, tuple[str, int, bytes]] = {}
    for tree in ("repos", "spaces", "worktrees"):
        if (root / tree).is_dir():
            out.update({f"{tree}/{k}": v for k, v in files_of(root / tree).items()})
    return out


def _git_link(value: tuple[str, int, bytes], old: str, new: str) -> tuple[str, int, bytes]:
    return (value[0], value[1], value[2].replace(old.encode(), new.encode()))


async def test_round_trip_into_another_running_server(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "one") as one,
        running_server(tmp_path / "two") as two,
    ):
        ws = await one.new_workspace("source ws")
        await populate(one, ws, tmp_path)
        # A chat connection's credentials: a file of the workspace's secret folder, or a sealed row on PostgreSQL.
        one.ctx.secret_folder("chat_credentials").write(ws, "chatprovider", {"botToken": "xoxb-EXPORTED-NEVER"})
        archive = await export_bytes(one, ws)

        # Readable without Hangar: a tar with a README, JSON lines and a manifest naming every item's SHA-256.
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            names = tar.getnames()
            assert names[0] == "README.txt" and names[-1] == "MANIFEST.json"
            manifest = json.loads(tar.extractfile("MANIFEST.json").read())  # type: ignore[union-attr]
            lines = tar.extractfile("tables/messages.jsonl").read().decode().splitlines()  # type: ignore[union-attr]
            readme = tar.extractfile("README.txt").read().decode()  # type: ignore[union-attr]
            agents = tar.extractfile("tables/agents.jsonl").read()  # type: ignore[union-attr]
        assert "tables/<table>.jsonl" in readme
        assert manifest["kind"] == "hangar-workspace-export" and manifest["schema"]["workspace"]
        assert {i["path"] for i in manifest["items"]} == set(names) - {"MANIFEST.json"}
        assert all(len(i["sha256"]) == 64 for i in manifest["items"])
        assert sorted(json.loads(line)["content"] for line in lines) == sorted(f"message {i} ✈" for i in range(25))
        assert "tables/chat_user_links.jsonl" not in names and "tables/event_cursors.jsonl" not in names
        assert b"sk-X1" not in archive and b"sk-X1" not in agents  # the agent's key stays in the secrets file
        assert b"xoxb-EXPORTED-NEVER" not in archive  # and the workspace's secrets where the install keeps them
        assert any(n.startswith("files/spaces/") and n.endswith("/link") for n in names)

        before = await rows_of(one, ws)
        answer = await upload(two, archive)
        assert answer.status_code == 201, answer.text
        new = answer.json()["id"]
        assert answer.json()["name"] == "source ws" and new != ws
        after = await rows_of(two, new)

        # Every row, the exporter (the server owner of one) now the importer (the owner of two); the trust the
        # first server's owner gave is not carried; worktree folders are the new workspace's.
        old_dir, new_dir = str(one.data_dir / ws), str(two.data_dir / new)
        expected = json.loads(json.dumps(before).replace(one.owner_id, two.owner_id).replace(old_dir, new_dir))
        for row in expected["repos"]:
            row["registered_by_owner"] = False
        for row in expected["agents"]:
            row["endpoint_by_owner"] = False
        assert after == expected
        assert len(after["messages"]) == 25 and len(after["worktrees"]) == 1

        # Every file: the clones, the space's folder with the checkout, its notes and its symlink as a symlink.
        # A checkout's .git file names its clone's folder, which is the new workspace's only in name.
        files_before, files_after = trees(one, ws), trees(two, new)
        del files_before["worktrees/.staging"]  # where checkouts are made: not part of an export
        assert files_after.keys() == files_before.keys()
        assert any(v[0] == "symlink" for v in files_after.values())
        for key, value in files_before.items():
            assert files_after[key] in (value, _git_link(value, old_dir, new_dir)), key

        async with RpcClient(two.ws_url, two.owner_token) as client:
            listed = {w["id"]: w["role"] for w in await client.call("workspaces.list")}
            assert listed[new] == "owner"
            spaces = await client.call("spaces.list", workspace_id=new)
            assert {s["title"] for s in spaces["spaces"]} >= {"work", "chat"}
            audit = await two.ctx.audit.entries(new, action="workspaces.import")
            assert [a.principal for a in audit] == [f"user:{two.owner_id}"]


async def test_who_may_export(tmp_path: Path) -> None:
    async with running_server(tmp_path / "d") as srv:
        ws = await srv.new_workspace()
        admin = await srv.new_user_token(ws, Role.admin, name="ada")
        member = await srv.new_user_token(ws, Role.member, name="mel")
        guest = await srv.new_user_token(ws, Role.guest, name="gus")
        outsider = await srv.new_user_token(None, name="otto")
        assert (await export_bytes(srv, ws)).startswith(b"README.txt")  # the owner
        assert (await export_bytes(srv, ws, admin)).startswith(b"README.txt")
        for token, role in ((member, "member"), (guest, "guest")):
            async with RpcClient(srv.ws_url, token) as client:
                with pytest.raises(RpcError) as refused:
                    await client.call("workspaces.export", workspace_id=ws)
            assert refused.value.code == "forbidden" and role in refused.value.message
        async with RpcClient(srv.ws_url, outsider) as client:
            with pytest.raises(RpcError) as refused:
                await client.call("workspaces.export", workspace_id=ws)
        assert refused.value.code == "forbidden"

        # The server owner, holding only the member role in someone else's workspace, may export it.
        owned = await srv.new_workspace("theirs", owner_token=admin)
        await srv.ctx.service(IdentityService).add_member(owned, srv.owner_id, Role.member)
        assert (await export_bytes(srv, owned)).startswith(b"README.txt")


async def test_the_download_checks_authority_again(tmp_path: Path) -> None:
    async with running_server(tmp_path / "d") as srv:
        ws = await srv.new_workspace()
        identity = srv.ctx.service(IdentityService)
        links: dict[str, str] = {}
        users: dict[str, str] = {}
        for name in ("demoted", "removed", "deactivated"):
            token = await srv.new_user_token(ws, Role.admin, name=name)
            async with RpcClient(srv.ws_url, token) as client:
                links[name] = (await client.call("workspaces.export", workspace_id=ws))["url"]
                users[name] = (await client.call("users.me"))["id"]
        await identity.set_role(ws, users["demoted"], Role.member)
        await identity.remove_member(ws, users["removed"])
        await identity.deactivate_user(users["deactivated"])
        async with httpx.AsyncClient(timeout=60) as http:
            for name, url in links.items():
                got = await http.get(url)
                assert got.status_code == 403, name
                assert got.json()["error"]["code"] == "forbidden"
            # An altered, an expired, a missing token: nothing.
            url = links["demoted"]
            assert (await http.get(url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB"))).status_code == 403
            expired, _ = srv.ctx.service(ExportSigner).mint(ws, srv.owner_id, ttl_s=-1)
            got = await http.get(f"{srv.url}/workspace-transfer/export", params={"token": expired})
            assert got.status_code == 403 and "expired" in got.json()["error"]["message"]
            assert (await http.get(f"{srv.url}/workspace-transfer/export")).status_code == 403
            # The URL carries no key of the server's.
            key = srv.ctx.secrets.get("workspaces.exportKey")
            assert key and key not in url


async def test_narrower_credentials(tmp_path: Path) -> None:
    """An agent's credential exports nothing, even for an admin; a credential limited to one workspace or to reads
    imports nothing (an import makes a workspace)."""
    async with running_server(tmp_path / "d") as srv:
        ws = await srv.new_workspace()
        identity = srv.ctx.service(IdentityService)
        agent = await identity.issue_device(srv.owner_id, "agent", scope=DeviceScope(workspace_id=ws, agent_id="a1"))
        async with RpcClient(srv.ws_url, agent) as client:
            with pytest.raises(RpcError) as refused:
                await client.call("workspaces.export", workspace_id=ws)
        assert refused.value.code == "forbidden" and "agent" in refused.value.message
        archive = await export_bytes(srv, ws)
        before = set(await identity.list_workspace_ids())
        for scope, said in (
            (DeviceScope(workspace_id=ws), "limited to workspace"),
            (DeviceScope(read_only=True), "read-only"),
        ):
            token = await identity.issue_device(srv.owner_id, "narrow", scope=scope)
            answer = await upload(srv, archive, token)
            assert answer.status_code == 403 and said in answer.json()["error"]["message"], answer.text
        assert set(await identity.list_workspace_ids()) == before


async def test_a_person_removed_mid_export_gets_no_further_piece(tmp_path: Path) -> None:
    # A workspace far larger than what the sockets between server and client hold, so the server is still
    # sending (waiting for the reader) when the removal lands.
    async with running_server(tmp_path / "d") as srv:
        ws = await srv.new_workspace("big")
        folder = srv.ctx.datadir.workspace_dir(ws) / "spaces" / "held"
        folder.mkdir(parents=True)
        (folder / "big.bin").write_bytes(os.urandom(48 << 20))
        identity = srv.ctx.service(IdentityService)
        ada = await srv.new_user_token(ws, "admin", name="ada")
        ada_id = (await identity.authenticate(ada)).user_id

        async def download(midway: Callable[[], Awaitable[None]]) -> tuple[int, BaseException | None]:
            async with RpcClient(srv.ws_url, ada) as client:
                link = await client.call("workspaces.export", workspace_id=ws)
            async with httpx.AsyncClient(timeout=120) as http, http.stream("GET", link["url"]) as r:
                assert r.status_code == 200
                return await read_around(r, midway)

        async def pause() -> None:
            await asyncio.sleep(0.5)

        whole, error = await download(pause)  # an admin who stays gets it all
        assert error is None and whole > 48 << 20

        async def remove_her() -> None:
            await asyncio.sleep(0.5)  # the server fills the sockets and waits for the reader
            await identity.remove_member(ws, ada_id)

        got, error = await download(remove_her)
        assert got < whole and isinstance(error, httpx.RemoteProtocolError), (got, error)
