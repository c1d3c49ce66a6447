"""The file lane over real HTTP into real enclosures: landing in ~/drops without overwriting, reading out,
signatures and membership, take-over, limits, traversal and symlink escapes, audit without content."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.rigs.lanes import files as file_lane
from hangar.rigs.lanes.signing import LaneSigner
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcClient
from tests.support.streams import read_around

pytestmark = pytest.mark.packs("terminal")


def b64(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).rstrip(b"=").decode()


async def lane_path(env: RigsEnv, rig: str, client: RpcClient | None = None) -> str:
    c = client or env.client
    return str((await c.call("rig.fileLaneUrl", workspace_id=env.ws, rigId=rig))["path"])


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def drop(env: RigsEnv, path: str, parts: list[tuple[str, bytes]], token: str | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=env.srv.url) as http:
        return await http.post(
            path,
            headers=auth(token or env.srv.owner_token),
            files=[("file", (name, data)) for name, data in parts],
        )


async def read(env: RigsEnv, path: str, guest: str, token: str | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=env.srv.url) as http:
        return await http.get(f"{path}&p={b64(guest)}", headers=auth(token or env.srv.owner_token))


def code(resp: httpx.Response) -> str:
    body: dict[str, Any] = resp.json()
    return str(body["error"]["code"])


async def test_drops_land_in_drops_never_overwriting_and_read_back(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        r = await drop(env, path, [("a.txt", b"first"), ("b.bin", bytes(range(256))), ("a.txt", b"second")])
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["delivery"] == "landed" and body["directory"] == "/home/rig/drops"
        assert [(f["name"], f["path"], f["size"]) for f in body["files"]] == [
            ("a.txt", "/home/rig/drops/a.txt", 5),
            ("b.bin", "/home/rig/drops/b.bin", 256),
            ("a.txt", "/home/rig/drops/2-a.txt", 6),
        ]
        r = await drop(env, path, [("a.txt", b"third")])
        assert r.json()["files"][0]["path"] == "/home/rig/drops/3-a.txt"
        out = await env.exec(rig, "cd ~/drops && ls && cat a.txt 2-a.txt 3-a.txt && stat -c %U a.txt")
        assert out["stdout"] == "2-a.txt\n3-a.txt\na.txt\nb.bin\nfirstsecondthirdrig\n"
        r = await read(env, path, "/home/rig/drops/b.bin")
        assert r.status_code == 200 and r.content == bytes(range(256))
        assert "b.bin" in r.headers["content-disposition"]
        await env.exec(rig, "mkdir -p ~/worktree-ish && seq 1 100000 > ~/big.txt")
        r = await read(env, path, "/home/rig/big.txt")
        assert r.content == "".join(f"{i}\n" for i in range(1, 100001)).encode()


async def test_file_lane_audit_keeps_counts_sizes_and_paths_only(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        assert (await drop(env, path, [("s.txt", b"TOPSECRET-CONTENT")])).status_code == 200
        assert (await read(env, path, "/home/rig/drops/s.txt")).content == b"TOPSECRET-CONTENT"
        await asyncio.sleep(0.1)  # the read is audited when its stream ends
        rows = await env.call("audit.list", target=f"rig:{rig}")
        dropped = next(r for r in rows if r["action"] == "rig.drop_files")
        assert dropped["details"] == {
            "count": 1,
            "bytes": 17,
            "files": [{"name": "s.txt", "path": "/home/rig/drops/s.txt", "size": 17}],
        }
        got = next(r for r in rows if r["action"] == "rig.read_file")
        assert got["details"] == {"count": 1, "files": [{"path": "/home/rig/drops/s.txt", "size": 17}]}
        log = await env.manager.store.actions(env.ws, rig)
        assert {"drop_files", "read_file"} <= {e.verb for e in log}
        assert "TOPSECRET" not in repr(rows) + repr([e.details for e in log])


async def test_signatures_membership_and_credentials(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        signer = LaneSigner(env.srv.ctx.secrets, env.srv.ctx.clock)
        owner = env.srv.owner_id
        for lane in ("watch", "terminal"):
            token, _ = signer.mint(lane, env.ws, rig, owner)  # type: ignore[arg-type]
            r = await drop(env, f"/rig/files/{rig}?sig={token}", [("x", b"x")])
            assert r.status_code == 403 and "another lane" in r.text
        async with httpx.AsyncClient(base_url=env.srv.url) as http:
            assert (await http.post(path, files=[("file", ("x", b"x"))])).status_code == 401
            r = await http.post(f"/rig/files/{rig}", headers=auth(env.srv.owner_token), files=[("file", ("x", b"x"))])
            assert r.status_code == 403 and "signed URL" in r.text
        # A URL minted for one person is not another person's, even a member's.
        member = await env.srv.new_user_token(env.ws, "member", name="m")
        r = await drop(env, path, [("x", b"x")], token=member)
        assert r.status_code == 403 and "another person" in r.text
        # Membership is checked at use: a minted URL dies with the membership.
        async with RpcClient(env.srv.ws_url, member) as m:
            mine = await lane_path(env, rig, m)
            me = (await m.call("users.me"))["id"]
        assert (await drop(env, mine, [("ok.txt", b"ok")], token=member)).status_code == 200
        await env.call("members.remove", user_id=me)
        r = await drop(env, mine, [("x", b"x")], token=member)
        assert r.status_code == 403 and "membership" in r.text
        assert (await env.exec(rig, "ls ~/drops"))["stdout"] == "ok.txt\n"


async def test_drops_are_refused_while_someone_else_holds_control(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        await drop(env, path, [("before.txt", b"1")])
        member = await env.srv.new_user_token(env.ws, "member", name="driver")
        async with RpcClient(env.srv.ws_url, member) as m:
            await m.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
            r = await drop(env, path, [("during.txt", b"2")])
            assert r.status_code == 403 and code(r) == "refused"
            assert (await read(env, path, "/home/rig/drops/before.txt")).content == b"1"  # reading is allowed
            their = await lane_path(env, rig, m)
            assert (await drop(env, their, [("theirs.txt", b"3")], token=member)).status_code == 200
            await m.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
        assert (await env.exec(rig, "ls ~/drops"))["stdout"] == "before.txt\ntheirs.txt\n"


async def test_traversal_bad_names_and_symlink_escapes_are_refused(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        for name in ("../escape.txt", "a/b.txt", "..", "x\\y"):
            r = await drop(env, path, [("fine.txt", b"ok"), (name, b"boom")])
            assert r.status_code == 400 and code(r) == "invalid_args", (name, r.text)
            assert "files[1].filename" in r.json()["error"]["field"]
        for guest in ("/home/rig/../../etc/passwd", "relative/path"):
            r = await read(env, path, guest)
            assert r.status_code == 400 and r.json()["error"]["field"] == "p"
        async with httpx.AsyncClient(base_url=env.srv.url) as http:
            r = await http.get(path, headers=auth(env.srv.owner_token))
            assert r.status_code == 400 and "p is required" in r.text
        assert (await env.exec(rig, "ls -A ~"))["stdout"] == ""  # nothing of a refused drop landed
        # Symlinks cannot lead the lane out of the rig: host paths outside it stay untouched and unread.
        outside = env.srv.data_dir / "outside"
        outside.mkdir()
        (outside / "host-secret.txt").write_text("HOST-ONLY")
        await env.exec(rig, f"ln -s {outside}/host-secret.txt ~/link.txt && ln -s {outside} ~/drops")
        r = await read(env, path, "/home/rig/link.txt")
        assert r.status_code in (403, 404) and "HOST-ONLY" not in r.text
        r = await drop(env, path, [("planted.txt", b"x")])
        assert r.status_code == 403 and code(r) == "refused"
        assert sorted(p.name for p in outside.iterdir()) == ["host-secret.txt"]
        r = await read(env, path, "/home/rig/nothing-here")
        assert r.status_code == 404


async def test_drop_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        r = await drop(env, path, [(f"f{i}.txt", b"x") for i in range(65)])
        assert r.status_code == 413 and "64 files" in r.text
        assert (await drop(env, path, [(f"f{i}.txt", b"x") for i in range(64)])).status_code == 200
        await env.exec(rig, "rm -rf ~/drops")
        # A declared body over the per-drop limit is refused before it is read.
        url = urlsplit(env.srv.url)
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {env.srv.owner_token}\r\n"
                "Content-Type: multipart/form-data; boundary=zz\r\nContent-Length: 629145600\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 30)
        writer.close()
        assert b" 413 " in status
        # The streaming limits, with small numbers standing in for 256 MB per file and 512 MB per drop.
        monkeypatch.setattr(file_lane, "MAX_FILE_BYTES", 1000)
        monkeypatch.setattr(file_lane, "MAX_DROP_BYTES", 1500)
        r = await drop(env, path, [("ok.txt", b"x" * 10), ("big.bin", b"x" * 1001)])
        assert r.status_code == 413 and "per-file" in r.text
        r = await drop(env, path, [("a.bin", b"x" * 1000), ("b.bin", b"x" * 501)])
        assert r.status_code == 413 and "per-drop" in r.text
        assert (await env.exec(rig, "ls -A ~"))["stdout"] == ""
        assert list((env.srv.data_dir / "rigs" / "spool").iterdir()) == []  # spooled parts are removed


async def test_read_only_mode_refuses_drops_but_not_reading(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        assert (await drop(env, path, [("kept.txt", b"kept")])).status_code == 200
        await env.call("guardrails.set", space_id=env.space, readOnly=True)
        r = await drop(env, path, [("new.txt", b"x")])
        assert r.status_code == 403 and code(r) == "refused" and "read-only" in r.text
        assert (await read(env, path, "/home/rig/drops/kept.txt")).content == b"kept"


async def _stream_drop(env: RigsEnv, path: str, sizes: list[int]) -> bytes:
    """Send a multipart drop of zero-filled files of ``sizes`` bytes over a raw socket, streaming it (no
    Content-Length: chunked), and return the response's status line."""
    url = urlsplit(env.srv.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(
        (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {env.srv.owner_token}\r\n"
            "Content-Type: multipart/form-data; boundary=zz\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
    )

    def chunk(data: bytes) -> None:
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    block = bytes(1 << 20)
    status = asyncio.ensure_future(reader.readline())
    try:
        for i, size in enumerate(sizes):
            chunk(f'--zz\r\nContent-Disposition: form-data; name="file"; filename="f{i}.bin"\r\n\r\n'.encode())
            left = size
            while left and not status.done():
                piece = block[: min(left, len(block))]
                chunk(piece)
                left -= len(piece)
                await writer.drain()
            chunk(b"\r\n")
        chunk(b"--zz--\r\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    except ConnectionError:
        pass  # the server answered and closed before the whole body was sent
    line = await asyncio.wait_for(status, 120)
    writer.close()
    return line


@pytest.mark.slow
async def test_the_real_size_limits_hold_while_streaming(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        assert b" 413 " in await _stream_drop(env, path, [256 * 1024 * 1024 + 1])
        assert b" 413 " in await _stream_drop(env, path, [200 * 1024 * 1024, 200 * 1024 * 1024, 113 * 1024 * 1024])
        assert (await env.exec(rig, "ls -A ~"))["stdout"] == ""
        assert list((env.srv.data_dir / "rigs" / "spool").iterdir()) == []


async def test_files_are_read_and_written_as_the_rig_user_inside_the_rig(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        for guest in ("/etc/shadow", "/proc/1/environ", "/root/.bashrc"):
            r = await read(env, path, guest)
            assert r.status_code in (403, 404), (guest, r.status_code, r.text[:200])
            assert code(r) in ("refused", "not_found")
        kallsyms = await read(env, path, "/proc/kallsyms")
        if kallsyms.status_code == 200:  # readable, but only as the rig user sees it: no kernel addresses
            addresses = {line.split()[0] for line in kallsyms.text.splitlines()[:50]}
            assert addresses <= {"0000000000000000"}, sorted(addresses)[:3]
        await env.exec(rig, "printf mine > /home/rig/note.txt")
        assert (await read(env, path, "/home/rig/note.txt")).content == b"mine"


async def test_dropped_file_names_are_unicode(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        path = await lane_path(env, rig)
        names = ["日本語のメモ.txt", "party 🎉.md", "Ünïcödé—name.csv"]
        r = await drop(env, path, [(n, n.encode()) for n in names])
        assert r.status_code == 200, r.text
        landed = [f["path"] for f in r.json()["files"]]
        assert landed == [f"/home/rig/drops/{n}" for n in names]
        for n in names:
            got = await read(env, path, f"/home/rig/drops/{n}")
            assert got.status_code == 200 and got.content == n.encode()
        listing = await env.exec(rig, "ls /home/rig/drops")
        assert sorted(listing["stdout"].split("\n")[:3]) == sorted(names) or set(names) <= set(
            listing["stdout"].splitlines()
        )
        for bad in ("a/b.txt", ".."):
            r = await drop(env, path, [(bad, b"x")])
            assert r.status_code == 400, (bad, r.text)


async def test_access_is_checked_again_as_a_drop_ends_and_while_a_file_is_read_out(tmp_path: Path) -> None:
    # A member removed while their drop's body arrives lands nothing; removed while a file streams out, they get
    # no further chunk. The removals are made over another connection, the transfers held open in between.
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await env.exec(rig, "head -c 64M /dev/zero > ~/big.bin && mkdir -p ~/drops")
        member = await env.srv.new_user_token(env.ws, "member", name="mo")
        async with RpcClient(env.srv.ws_url, member) as m:
            mine = await lane_path(env, rig, m)
            me = (await m.call("users.me"))["id"]

        boundary = "hangar-test-boundary"
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="late.txt"\r\n'
        form = f"{head}Content-Type: application/octet-stream\r\n\r\n{'x' * 100_000}\r\n--{boundary}--\r\n".encode()

        async def slow_drop(midway: Any) -> httpx.Response:
            async def body() -> Any:
                yield form[: len(form) // 2]
                await midway()
                yield form[len(form) // 2 :]

            headers = {**auth(member), "Content-Type": f"multipart/form-data; boundary={boundary}"}
            async with httpx.AsyncClient(base_url=env.srv.url, timeout=120) as http:
                return await http.post(mine, content=body(), headers=headers)

        async def pause() -> None:
            await asyncio.sleep(0.5)

        assert (await slow_drop(pause)).status_code == 200  # the same slow drop by a member who stays lands
        assert (await env.exec(rig, "ls ~/drops"))["stdout"] == "late.txt\n"

        async def read_out(midway: Any) -> tuple[int, BaseException | None]:
            url = f"{mine}&p={b64('/home/rig/big.bin')}"
            async with (
                httpx.AsyncClient(base_url=env.srv.url, timeout=120) as http,
                http.stream("GET", url, headers=auth(member)) as r,
            ):
                assert r.status_code == 200
                return await read_around(r, midway)

        assert await read_out(pause) == (64 << 20, None)  # a reader who stays gets it all

        async def remove() -> None:
            await asyncio.sleep(0.5)  # the server fills the sockets and waits for the reader
            await env.call("members.remove", user_id=me)

        got, error = await read_out(remove)
        assert got < 64 << 20 and isinstance(error, httpx.RemoteProtocolError), (got, error)

        await env.srv.ctx.service(IdentityService).add_member(env.ws, me, Role.member)
        async with RpcClient(env.srv.ws_url, member) as m:
            mine = await lane_path(env, rig, m)
        answer = await slow_drop(remove)
        assert answer.status_code == 403 and "membership" in answer.text, answer.text
        assert (await env.exec(rig, "ls ~/drops"))["stdout"] == "late.txt\n"  # nothing more landed
