"""The import route takes a hostile archive: bounded size, items and line length (both sides of each bound);
plain paths only and nothing followed; every checksum checked before anything is written; rows checked against
the tables of the export's schema revision (an older one migrated, a newer one refused naming both); people of
the other server handled; and a refused import leaves no workspace and nothing in the data directory."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.backup.export.layout import MAX_BYTES_SETTING, MAX_ITEMS_SETTING, MAX_LINE_SETTING
from hangar.backup.export.slots import TransferSlots
from hangar.core.principal import Role
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from tests.integration.test_workspace_repos import make_repo
from tests.integration.test_workspace_transfer import IMPORT, export_bytes, upload
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server

Entry = dict[str, Any]  # {"path", "kind", "mode", "data" | "target"}


def entries_of(archive: bytes) -> tuple[list[Entry], dict[str, Any]]:
    """The items of an archive, in order, and its manifest (without its items)."""
    out: list[Entry] = []
    manifest: dict[str, Any] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for m in tar.getmembers():
            if m.name == "MANIFEST.json":
                manifest = json.loads(tar.extractfile(m).read())  # type: ignore[union-attr]
                manifest.pop("items")
            elif m.isdir():
                out.append({"path": m.name, "kind": "dir", "mode": m.mode})
            elif m.issym():
                out.append({"path": m.name, "kind": "symlink", "mode": 0o777, "target": m.linkname})
            else:
                data = tar.extractfile(m).read()  # type: ignore[union-attr]
                out.append({"path": m.name, "kind": "file", "mode": m.mode, "data": data})
    return out, manifest


def build(entries: list[Entry], manifest: dict[str, Any]) -> bytes:
    """A tar of ``entries`` closed by ``manifest`` listing each with its right checksum (names unchecked)."""
    buf = io.BytesIO()
    items = []
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            info = tarfile.TarInfo(e["path"])
            info.mode = e["mode"]
            item = {"path": e["path"], "kind": e["kind"], "mode": e["mode"] & 0o1777}
            if e["kind"] == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                item.update(size=0, sha256=hashlib.sha256().hexdigest())
            elif e["kind"] == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, e["target"]
                tar.addfile(info)
                raw = e["target"].encode()
                item.update(size=len(raw), sha256=hashlib.sha256(raw).hexdigest(), target=e["target"])
            else:
                info.size = len(e["data"])
                tar.addfile(info, io.BytesIO(e["data"]))
                item.update(size=len(e["data"]), sha256=hashlib.sha256(e["data"]).hexdigest())
            items.append(item)
        raw_manifest = json.dumps({**manifest, "items": items}).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size = len(raw_manifest)
        tar.addfile(info, io.BytesIO(raw_manifest))
    return buf.getvalue()


def rows(entries: list[Entry], table: str) -> list[dict[str, Any]]:
    found = next(e for e in entries if e["path"] == f"tables/{table}.jsonl")
    return [json.loads(line) for line in found["data"].decode().splitlines()]


def set_rows(entries: list[Entry], table: str, new: list[dict[str, Any]]) -> None:
    found = next(e for e in entries if e["path"] == f"tables/{table}.jsonl")
    found["data"] = "".join(json.dumps(r) + "\n" for r in new).encode()


def changed(archive: bytes, change: Callable[[list[Entry], dict[str, Any]], None]) -> bytes:
    entries, manifest = entries_of(archive)
    change(entries, manifest)
    return build(entries, manifest)


async def workspaces(srv: RunningServer) -> set[str]:
    return set(await srv.ctx.service(IdentityService).list_workspace_ids())


def data_entries(srv: RunningServer) -> set[str]:
    return {p.name for p in srv.data_dir.iterdir()}


async def refused(srv: RunningServer, archive: bytes, status: int, said: str) -> None:
    """The upload is refused with ``status`` and a message containing ``said``; nothing is left of it."""
    before, files = await workspaces(srv), data_entries(srv)
    answer = await upload(srv, archive)
    assert answer.status_code == status, answer.text
    assert said in answer.json()["error"]["message"], answer.json()
    assert await workspaces(srv) == before
    assert data_entries(srv) == files


@pytest.fixture
async def source(tmp_path: Path) -> bytes:
    """A real export: a space with a long message, a repository checked out in it, files."""
    async with running_server(tmp_path / "src") as srv:
        ws = await srv.new_workspace("source")
        repo_src = make_repo(tmp_path / "repo", "app")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            repo = await client.call("repos.register", workspace_id=ws, path=str(repo_src))
            space = await client.call("spaces.create", workspace_id=ws, title="work", repoIds=[repo["id"]])
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="x" * 1000)
        return await export_bytes(srv, ws)


async def test_bounds_on_both_sides(tmp_path: Path, source: bytes) -> None:
    entries, _ = entries_of(source)
    longest = max(len(line) for e in entries if e["path"].startswith("tables/") for line in e["data"].split(b"\n"))
    async with running_server(tmp_path / "d") as srv:
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting(MAX_BYTES_SETTING, len(source) - 1)
        await refused(srv, source, 413, "larger than")
        await identity.set_setting(MAX_BYTES_SETTING, len(source))
        assert (await upload(srv, source)).status_code == 201

        await identity.set_setting(MAX_ITEMS_SETTING, len(entries) - 1)
        await refused(srv, source, 422, "workspaceImport.maxItems")
        await identity.set_setting(MAX_ITEMS_SETTING, len(entries))
        assert (await upload(srv, source)).status_code == 201

        await identity.set_setting(MAX_LINE_SETTING, longest - 1)
        await refused(srv, source, 422, "workspaceImport.maxLineBytes")
        await identity.set_setting(MAX_LINE_SETTING, longest)
        assert (await upload(srv, source)).status_code == 201


async def test_a_damaged_or_truncated_archive_is_refused_before_anything_is_written(
    tmp_path: Path, source: bytes
) -> None:
    at = source.rindex(b"x" * 1000)  # in tables/messages.jsonl (the event announcing it comes first)
    damaged = source[:at] + b"y" + source[at + 1 :]
    async with running_server(tmp_path / "d") as srv:
        await refused(srv, damaged, 422, "tables/messages.jsonl' fails its checksum")
        await refused(srv, source[: len(source) // 2], 422, "truncated")
        await refused(srv, b"not a tar at all" * 100, 422, "damaged")


def _add(entry: Entry) -> Callable[[list[Entry], dict[str, Any]], None]:
    return lambda entries, _m: entries.insert(len(entries) - 1, entry)


async def test_paths_that_are_not_plain_or_not_an_exports_are_refused(tmp_path: Path, source: bytes) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    file = {"kind": "file", "mode": 0o644, "data": b"planted"}
    async with running_server(tmp_path / "d") as srv:
        for path, said in (
            ("files/spaces/../../../planted", "not a plain path"),
            ("/etc/planted", "not a plain path"),
            ("server.db", "never holds"),
            ("secrets.json", "never holds"),
            ("files/other/planted", "never holds"),
            ("tables/notes.txt", "never holds"),
        ):
            await refused(srv, changed(source, _add({"path": path, **file})), 422, said)
        # A symlink the archive holds is made as a symlink and never followed: a file through it is refused.
        jump = {"path": "files/spaces/jump", "kind": "symlink", "mode": 0o777, "target": str(outside)}
        through = changed(changed(source, _add(jump)), _add({"path": "files/spaces/jump/planted", **file}))
        await refused(srv, through, 422, "cannot be restored")
        assert list(outside.iterdir()) == []


async def test_rows_are_checked_against_the_tables(tmp_path: Path, source: bytes) -> None:
    def with_rows(table: str, edit: Callable[[list[dict[str, Any]]], None]) -> bytes:
        def change(entries: list[Entry], _m: dict[str, Any]) -> None:
            found = rows(entries, table)
            edit(found)
            set_rows(entries, table, found)

        return changed(source, change)

    def table_file(name: str, data: bytes) -> Callable[[list[Entry], dict[str, Any]], None]:
        return _add({"path": f"tables/{name}.jsonl", "kind": "file", "mode": 0o644, "data": data})

    async with running_server(tmp_path / "d") as srv:
        await refused(srv, with_rows("spaces", lambda r: r[0].update(planted=1)), 422, "column 'planted'")
        await refused(srv, with_rows("spaces", lambda r: r[0].update(hidden="yes")), 422, "hidden must be true or")
        await refused(srv, with_rows("spaces", lambda r: r[0].update(created_at=5)), 422, "created_at")
        await refused(srv, with_rows("messages", lambda r: r[0].update(space_id="nope")), 422, "not in the export")
        await refused(srv, with_rows("spaces", lambda r: r.append(dict(r[0]))), 422, "refuses")
        await refused(srv, changed(source, table_file("users", b"{}\n")), 422, "'users' is not one")
        await refused(srv, changed(source, table_file("chat_user_links", b"")), 422, "'chat_user_links'")
        await refused(srv, with_rows("tickets", lambda r: r.append([1, 2])), 422, "not a JSON object")
        # Found only as the rows are written, after the files are in place: the folder goes with the refusal.
        await refused(srv, with_rows("worktrees", lambda r: r[0].update(path="/etc")), 422, "'/etc' is not in its")  # type: ignore[arg-type]


async def test_schema_revisions(tmp_path: Path, source: bytes) -> None:
    def at(revision: str, drop_registrant: bool = False) -> bytes:
        def change(entries: list[Entry], manifest: dict[str, Any]) -> None:
            manifest["schema"]["workspace"] = revision
            if drop_registrant:  # w0003 added the column
                found = rows(entries, "repos")
                for row in found:
                    del row["registered_by_owner"]
                set_rows(entries, "repos", found)

        return changed(source, change)

    async with running_server(tmp_path / "d") as srv:
        await refused(srv, at("w9999"), 422, "revision w9999, this version's at w0003")
        await refused(srv, at("w0002"), 422, "registered_by_owner")  # a column its revision did not have
        older = await upload(srv, at("w0002", drop_registrant=True))
        assert older.status_code == 201, older.text
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            listed = await client.call("repos.list", workspace_id=older.json()["id"])
        assert [r["name"] for r in listed["repos"]] == ["app"]
        await refused(srv, changed(source, lambda _e, m: m["schema"].update(future="f1")), 422, "'future'")
        await refused(srv, changed(source, lambda _e, m: m.update(format=2)), 422, "format 2")


async def test_people_of_the_other_server(tmp_path: Path) -> None:
    async with running_server(tmp_path / "one") as one, running_server(tmp_path / "two") as two:
        ws = await one.new_workspace()
        bob = await one.new_user_token(ws, Role.member, name="bob")
        async with RpcClient(one.ws_url, bob) as client:
            bob_id = (await client.call("users.me"))["id"]
            space = await client.call("spaces.create", workspace_id=ws, title="bob's")
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="hi from bob")
        archive = await export_bytes(one, ws)
        # Bob's id as a user of the second server: the import must not make him the author there.
        await two.ctx.service(IdentityService).create_user(email="b@example.test", display_name="other bob")
        answer = await upload(two, archive)
        assert answer.status_code == 201, answer.text
        new = answer.json()["id"]
        async with RpcClient(two.ws_url, two.owner_token) as client:
            spaces = (await client.call("spaces.list", workspace_id=new))["spaces"]
            msgs = await client.call("messages.list", workspace_id=new, space_id=spaces[0]["id"])
            members = await client.call("members.list", workspace_id=new)
        author = msgs["messages"][0]["author"]
        assert author["name"] == "bob" and author["id"] != bob_id
        users = {u.id for u in await two.ctx.service(IdentityService).list_users()}
        assert author["id"] not in users
        assert [m["userId"] for m in members] == [two.owner_id]


async def test_who_may_import(tmp_path: Path, source: bytes) -> None:
    async with running_server(tmp_path / "d") as srv:
        ws = await srv.new_workspace()
        member = await srv.new_user_token(ws, Role.member, name="mel")
        await srv.ctx.service(IdentityService).set_setting("workspaceCreators", "serverOwner")
        before = await workspaces(srv)
        assert (await upload(srv, source, member)).status_code == 403
        assert (await upload(srv, source, "not-a-credential")).status_code == 401
        assert await workspaces(srv) == before
        await srv.ctx.service(IdentityService).set_setting("workspaceCreators", "members")
        mine = await upload(srv, source, member, name="renamed")
        assert mine.status_code == 201 and mine.json()["name"] == "renamed"


@pytest.mark.parametrize(
    ("key", "taken", "refused_values"),
    [
        (MAX_BYTES_SETTING, [1024, 1 << 40], [1023, (1 << 40) + 1, "4096", True]),
        (MAX_ITEMS_SETTING, [4, 1_000_000], [3, 1_000_001, 2.5]),
        (MAX_LINE_SETTING, [256, 1 << 30], [255, (1 << 30) + 1, None]),
    ],
)
async def test_the_bounds_settings_take_whole_numbers_in_range(
    tmp_path: Path, key: str, taken: list[Any], refused_values: list[Any]
) -> None:
    async with running_server(tmp_path / "d") as srv:
        identity = srv.ctx.service(IdentityService)
        for value in taken:
            await identity.set_setting(key, value)
        for value in refused_values:
            with pytest.raises(InvalidArgs) as exc:
                await identity.set_setting(key, value)
            assert key in str(exc.value)


async def test_a_sparse_member_is_refused_before_it_is_written(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "files" / "spaces").mkdir(parents=True)
    (tree / "README.txt").write_text("hi\n")
    with (tree / "files" / "spaces" / "big").open("wb") as big:  # 8 MiB, nearly all of it a hole
        big.truncate(8 << 20)
        big.seek(4_000_000)
        big.write(b"x")
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(tmp_path / "s.tar"), "README.txt", "files"],
                   cwd=tree, check=True)  # fmt: skip
    archive = (tmp_path / "s.tar").read_bytes()
    assert len(archive) < 64 << 10
    async with running_server(tmp_path / "d") as srv:
        await refused(srv, archive, 422, "'files/spaces/big' is a sparse file, which an export never holds")


async def _slow_import(
    srv: RunningServer, archive: bytes, token: str, midway: Callable[[], Awaitable[None]]
) -> httpx.Response:
    """An import whose body stops halfway until the server is receiving it and ``midway`` has run."""
    slots = srv.ctx.service(TransferSlots)

    async def body() -> AsyncIterator[bytes]:
        yield archive[: len(archive) // 2]
        for _ in range(2400):
            if slots.active == 1:  # past the start's checks, receiving
                break
            await asyncio.sleep(0.025)
        await midway()
        yield archive[len(archive) // 2 :]

    async with httpx.AsyncClient(timeout=120) as http:
        return await http.post(f"{srv.url}{IMPORT}", content=body(), headers={"Authorization": f"Bearer {token}"})


async def test_access_is_checked_again_when_the_import_ends(tmp_path: Path, source: bytes) -> None:
    async with running_server(tmp_path / "d") as srv:
        identity = srv.ctx.service(IdentityService)
        ws = await srv.new_workspace()
        member = await srv.new_user_token(ws, Role.member, name="mel")
        await identity.set_setting("workspaceCreators", "members")
        before, files = await workspaces(srv), data_entries(srv)

        async def forbid() -> None:
            await identity.set_setting("workspaceCreators", "serverOwner")

        answer = await _slow_import(srv, source, member, forbid)
        assert answer.status_code == 403 and "as the import ended" in answer.json()["error"]["message"], answer.text
        assert await workspaces(srv) == before and data_entries(srv) == files

        await identity.set_setting("workspaceCreators", "members")
        device_id = (await identity.authenticate(member)).device_id

        async def revoke() -> None:
            await identity.revoke_device_id(device_id)

        answer = await _slow_import(srv, source, member, revoke)
        assert answer.status_code == 401 and "as the import ended" in answer.json()["error"]["message"], answer.text
        assert await workspaces(srv) == before and data_entries(srv) == files

        async def nothing() -> None:
            return None

        # The same slow import by a person whose access holds makes the workspace.
        again = await srv.new_user_token(ws, Role.member, name="mo")
        assert (await _slow_import(srv, source, again, nothing)).status_code == 201
