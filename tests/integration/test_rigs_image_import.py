"""Importing a desktop qcow2 (``rigs.importImage``) on the real server with the real qemu-img and QEMU: only the
server owner may; every check refuses with the problem named and keeps nothing (a missing or wrong checksum, a file
that is not a qcow2, a backing file or an external data file, a virtual size out of bounds on either side, a file
too large, an image whose guest agent never answers, KVM where the probe marked it unusable); the desktop image the
repository's script builds passes under fullvm-tcg and is stored 0644 under ``rigs/images/`` by its id."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.backends.fullvm import imports
from hangar.rigs.lifecycle.manager import RigManager
from tests.support.desktopimage import TCG_TEST_TIMEOUT_S, desktop_image, needs_qemu, sha256_of, tcg_turn
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

pytestmark = [pytest.mark.asyncio, needs_qemu]


@contextlib.asynccontextmanager
async def server() -> AsyncIterator[tuple[RunningServer, RpcClient]]:
    # A short data directory: the boot check's sockets live under it (a unix socket path is at most 108 bytes).
    with tempfile.TemporaryDirectory(prefix="hi-", dir="/tmp") as short:
        async with running_server(Path(short)) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
            yield srv, owner


def stored(srv: RunningServer) -> list[str]:
    """What the images directory holds, staging files included: a refusal leaves nothing."""
    root = srv.ctx.datadir.root / "rigs" / "images"
    return sorted(os.listdir(root)) if root.exists() else []


def qcow2(path: Path, size: int | str, *options: str) -> Path:
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", *options, str(path), str(size)], check=True)
    return path


async def refused(owner: RpcClient, code: str, **args: Any) -> str:
    with pytest.raises(RpcError) as e:
        await owner.call("rigs.importImage", **{"name": "desktop", "backend": "fullvm-tcg", **args})
    assert e.value.code == code, e.value
    return e.value.message


async def test_only_the_server_owner_imports_images(tmp_path: Path) -> None:
    image = qcow2(tmp_path / "a.qcow2", "1G")
    async with server() as (srv, owner):
        ws = await srv.new_workspace()
        admin = await srv.new_user_token(ws, "admin", name="admin")
        async with RpcClient(srv.ws_url, admin) as a:
            for op, args in (
                ("rigs.importImage", {"source": str(image), "sha256": sha256_of(image), "name": "x"}),
                ("rigs.images", {}),
            ):
                with pytest.raises(RpcError) as e:
                    await a.call(op, **args)
                assert e.value.code == "forbidden", op
        assert stored(srv) == [] and await owner.call("rigs.images") == []


async def test_a_checksum_is_required_and_must_match(tmp_path: Path) -> None:
    image = qcow2(tmp_path / "a.qcow2", "1G")
    async with server() as (srv, owner):
        assert "sha256" in await refused(owner, "invalid_args", source=str(image))
        assert "sha256" in await refused(owner, "invalid_args", source=str(image), sha256="abc")
        wrong = "0" * 64
        message = await refused(owner, "refused", source=str(image), sha256=wrong)
        # It differs, and that is all it says: the digest found would hash any file the server can read.
        assert sha256_of(image) not in message and "differs" in message and "nothing was imported" in message
        assert stored(srv) == []


async def test_a_url_is_downloaded_and_its_checksum_checked(tmp_path: Path) -> None:
    image = qcow2(tmp_path / "a.qcow2", "1G")
    with serve_directory(tmp_path) as base:
        async with server() as (srv, owner):
            message = await refused(owner, "refused", source=f"{base}/a.qcow2", sha256="1" * 64)
            assert sha256_of(image) not in message and "differs" in message
            assert "404" in await refused(owner, "refused", source=f"{base}/missing.qcow2", sha256="1" * 64)
            assert stored(srv) == []


async def test_a_source_that_is_neither_a_path_nor_a_url_or_not_a_file_is_refused(tmp_path: Path) -> None:
    async with server() as (srv, owner):
        assert "source" in await refused(owner, "invalid_args", source="relative.qcow2", sha256="1" * 64)
        assert "source" in await refused(owner, "invalid_args", source="ftp://host/a.qcow2", sha256="1" * 64)
        assert "regular file" in await refused(owner, "invalid_args", source=str(tmp_path), sha256="1" * 64)
        assert "source" in await refused(owner, "invalid_args", source=str(tmp_path / "none"), sha256="1" * 64)
        assert "source" in await refused(owner, "invalid_args", source="/tmp/a\x00b", sha256="1" * 64)
        assert stored(srv) == []


async def test_kernel_and_device_files_and_the_data_directory_are_refused_as_sources(tmp_path: Path) -> None:
    shm = Path(tempfile.mkstemp(dir="/dev/shm")[1])
    try:
        async with server() as (srv, owner):
            data = srv.ctx.datadir.root
            (data / "secret.txt").write_text("of the server")
            (tmp_path / "via-link").symlink_to(data / "secret.txt")  # a link outside leading inside
            beside = data.with_name(data.name + "-beside")  # a sibling whose name starts as the data directory's
            beside.mkdir()
            (beside / "a.qcow2").write_bytes(b"x")
            try:
                for source in ("/proc/self/environ", "/sys/kernel/mm/transparent_hugepage/enabled", str(shm)):
                    said = await refused(owner, "invalid_args", source=source, sha256="1" * 64)
                    assert "must not lie under /proc, /sys or /dev" in said, source
                for source in (data / "secret.txt", tmp_path / "via-link"):
                    said = await refused(owner, "invalid_args", source=str(source), sha256="1" * 64)
                    assert "data directory" in said, source
                # Just outside: read and checked (its digest differs).
                said = await refused(owner, "refused", source=str(beside / "a.qcow2"), sha256="1" * 64)
                assert "differs" in said
            finally:
                shutil.rmtree(beside)
            assert stored(srv) == []
    finally:
        shm.unlink()


async def test_what_is_not_a_plain_qcow2_is_refused(tmp_path: Path) -> None:
    raw = tmp_path / "raw.img"
    raw.write_bytes(b"\0" * (1 << 20))
    base = qcow2(tmp_path / "base.qcow2", "1G")
    backed = qcow2(tmp_path / "backed.qcow2", "1G", "-F", "qcow2", "-b", str(base))
    data_file = qcow2(tmp_path / "data.qcow2", "1G", "-o", f"data_file={tmp_path / 'data.raw'}")
    async with server() as (srv, owner):
        said = await refused(owner, "refused", source=str(raw), sha256=sha256_of(raw))
        assert "not a qcow2" in said and "'raw'" in said
        assert "backing file" in await refused(owner, "refused", source=str(backed), sha256=sha256_of(backed))
        said = await refused(owner, "refused", source=str(data_file), sha256=sha256_of(data_file))
        assert "external data file" in said
        assert stored(srv) == []


async def test_the_virtual_size_is_bounded_on_both_sides(tmp_path: Path) -> None:
    small = qcow2(tmp_path / "small.qcow2", str(imports.MIN_VIRTUAL_BYTES - 512))
    large = qcow2(tmp_path / "large.qcow2", str(imports.MAX_VIRTUAL_BYTES + 512))
    at_min = qcow2(tmp_path / "at-min.qcow2", str(imports.MIN_VIRTUAL_BYTES))
    at_max = qcow2(tmp_path / "at-max.qcow2", str(imports.MAX_VIRTUAL_BYTES))
    async with server() as (srv, owner):
        for image in (small, large):
            said = await refused(owner, "refused", source=str(image), sha256=sha256_of(image))
            assert "virtual size" in said, said
        # At the bounds the header passes and the check goes on to boot the (empty) disk: no guest agent answers.
        for image in (at_min, at_max):
            said = await refused(owner, "refused", source=str(image), sha256=sha256_of(image), bootDeadlineS=10)
            assert "did not answer guest-ping within" in said, said
        assert stored(srv) == []
        assert not os.listdir(srv.ctx.datadir.root / "rigs" / "run")  # the boot checks' overlays are gone


async def test_the_file_size_is_bounded_on_both_sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imports, "MAX_IMAGE_BYTES", 1 << 20)
    at_limit = tmp_path / "at.img"
    at_limit.write_bytes(b"x" * (1 << 20))
    over = tmp_path / "over.img"
    over.write_bytes(b"x" * ((1 << 20) + 1))
    async with server() as (srv, owner):
        assert "larger than" in await refused(owner, "refused", source=str(over), sha256=sha256_of(over))
        # At the limit the copy is taken and the next check speaks (it is no qcow2).
        assert "not a qcow2" in await refused(owner, "refused", source=str(at_limit), sha256=sha256_of(at_limit))
        assert stored(srv) == []


async def test_fullvm_kvm_is_refused_where_the_probe_marked_kvm_unusable(tmp_path: Path) -> None:
    image = qcow2(tmp_path / "a.qcow2", "1G")
    async with server() as (srv, owner):
        verdict = await srv.ctx.service(RigManager).kvm.verdict()
        if verdict.usable:
            pytest.skip("KVM works on this host")
        said = await refused(owner, "unavailable", source=str(image), sha256=sha256_of(image), backend="fullvm-kvm")
        assert "fullvm-kvm cannot run on this host" in said and "fullvm-tcg" in said
        assert stored(srv) == []


@pytest.mark.slow
@pytest.mark.timeout(TCG_TEST_TIMEOUT_S)
async def test_the_built_desktop_image_is_imported_under_tcg(tmp_path: Path) -> None:
    image = await desktop_image()
    digest = sha256_of(image)
    async with tcg_turn(), server() as (srv, owner):
        args = {"source": str(image), "sha256": digest.upper(), "name": "Desktop", "backend": "fullvm-tcg"}
        reply = await owner.request("rigs.importImage", args, timeout_s=900)  # a TCG boot takes minutes
        assert reply["ok"], reply
        done = reply["result"]
        print(f"import boot check under TCG: {done['bootSeconds']} s")
        assert done["imageId"] == imports.image_id_for(digest) and done["sha256"] == digest
        assert done["accelerator"] == "fullvm-tcg" and done["virtualBytes"] >= imports.MIN_VIRTUAL_BYTES
        assert await owner.call("rigs.images") == [done]
        root = srv.ctx.datadir.root / "rigs" / "images"
        assert stored(srv) == [f"{done['imageId']}.json", f"{done['imageId']}.qcow2"]
        for name in stored(srv):
            assert stat.S_IMODE((root / name).stat().st_mode) == 0o644
        assert sha256_of(root / f"{done['imageId']}.qcow2") == digest
        said = await refused(owner, "conflict", source=str(image), sha256=digest)
        assert done["imageId"] in said


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *_args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        thread.join()
