"""A backup file is input: restoring one never writes outside the folder it restores into, whatever its paths and
symlinks say, and refuses naming the item; a sealed stream refuses reordered, dropped or cut chunks."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from hangar.backup import BackupRefused, archive, crypt, restore_backup
from hangar.backup.archive import FORMAT, ArchiveWriter, Manifest
from hangar.backup.crypt import CHUNK, Damaged, OpeningReader, SealingWriter
from hangar.core.dblocation import parse_database_url


def manifest_of(writer: ArchiveWriter) -> Manifest:
    return Manifest(FORMAT, "0.0.1", "2026-01-01T00:00:00+00:00", "sqlite", False, tuple(writer.items))


def test_a_symlink_in_the_archive_is_never_followed_by_a_later_item(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    backup = tmp_path / "evil.backup"
    with backup.open("wb") as out:
        writer = ArchiveWriter(out)
        writer.add_bytes("server.db", b"x", 0o600)
        writer.add_dir("ws1", 0o700)
        writer.add_dir("ws1/repos", 0o755)
        writer.add_symlink("ws1/repos/r1", str(outside))  # allowed: a guest's tree holds symlinks
        writer.add_bytes("ws1/repos/r1/planted", b"owned", 0o644)
        writer.finish(manifest_of(writer))
    with pytest.raises(BackupRefused, match="the item 'ws1/repos/r1/planted' cannot be restored"):
        restore_backup(backup, tmp_path / "r", None)
    assert list(outside.iterdir()) == [] and not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["../escape", "/etc/escape", "a/../../escape", "a//b", "."])
def test_a_path_that_is_not_plain_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = 5
        tar.addfile(info, io.BytesIO(b"owned"))
        digest = hashlib.sha256(b"owned").hexdigest()
        items = [{"path": name, "kind": "file", "mode": 0o644, "size": 5, "sha256": digest}]
        meta = {
            "format": FORMAT,
            "hangar_version": "0.0.1",
            "created_at": "x",
            "database": "sqlite",
            "without_files": False,
            "items": items,
        }
        body = json.dumps(meta).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    backup = tmp_path / "evil.backup"
    backup.write_bytes(raw.getvalue())
    with pytest.raises(BackupRefused, match="is not a plain path"):
        restore_backup(backup, tmp_path / "sub" / "r", None)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "sub").exists()


def _sealed(data: bytes) -> bytes:
    out = io.BytesIO()
    writer = SealingWriter(out, b"passphrase")
    writer.write(data)
    writer.close()
    return out.getvalue()


def test_a_sealed_stream_round_trips_at_and_around_the_chunk_size() -> None:
    for size in (0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK):
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        assert OpeningReader(io.BytesIO(_sealed(data)), b"passphrase").read() == data


def test_a_sealed_stream_refuses_dropped_and_reordered_chunks() -> None:
    data = b"a" * CHUNK + b"b" * CHUNK + b"c" * 10
    sealed = _sealed(data)
    head = 8 + 3 + 16 + 7 + 16
    first_len = 4 + CHUNK + 16
    chunks = [sealed[head : head + first_len], sealed[head + first_len : head + 2 * first_len]]
    rest = sealed[head + 2 * first_len :]
    dropped = sealed[:head] + chunks[0] + rest  # chunk 1 dropped: chunk 2 fails as chunk 1
    with pytest.raises(Damaged, match="chunk 1 fails its check"):
        OpeningReader(io.BytesIO(dropped), b"passphrase").read()
    swapped = sealed[:head] + chunks[1] + chunks[0] + rest
    with pytest.raises(Damaged, match="chunk 0 fails its check"):
        OpeningReader(io.BytesIO(swapped), b"passphrase").read()
    cut = sealed[:head] + chunks[0] + chunks[1]  # the flagged last chunk cut off
    with pytest.raises(Damaged, match="truncated"):
        OpeningReader(io.BytesIO(cut), b"passphrase").read()


def test_an_item_twice_is_refused_when_written_and_when_restored(tmp_path: Path) -> None:
    backup = tmp_path / "twice.backup"
    with backup.open("wb") as out:
        writer = ArchiveWriter(out)
        writer.add_dir("rigs", 0o700)
        with pytest.raises(BackupRefused, match="the item 'rigs' would be in the backup twice"):
            writer.add_dir("rigs", 0o700)
        writer._paths.clear()  # as a writer without the check would have
        writer.add_dir("rigs", 0o700)
        writer.finish(manifest_of(writer))
    with pytest.raises(BackupRefused, match="the backup holds the item 'rigs' twice"):
        restore_backup(backup, tmp_path / "r", None)
    assert not (tmp_path / "r").exists()


def _hostile(tmp_path: Path, add: Callable[[ArchiveWriter], None]) -> Path:
    backup = tmp_path / "hostile.backup"
    with backup.open("wb") as out:
        writer = ArchiveWriter(out)
        writer.add_bytes("server.db", b"x", 0o600)
        writer.add_dir("ws1", 0o700)
        writer.add_bytes("ws1/workspace.db", b"x", 0o600)
        add(writer)
        writer.finish(manifest_of(writer))
    return backup


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("server.db-wal", "symlink"),  # SQLite would write through it
        ("server.db-wal", "file"),
        ("server.db-shm", "file"),
        ("ws1/workspace.db-wal", "symlink"),
        ("ws1/workspace.db-journal", "file"),
        ("database-url", "file"),  # would point the install at another database
        ("database-url", "dir"),
        ("pipelines", "dir"),
        ("server.db-wal", "dir"),
        ("secrets.json", "symlink"),
        ("sign-in-origin", "symlink"),
        ("ws1/chat_credentials", "symlink"),
        ("ws1/chat_credentials/slack.json", "symlink"),
        ("ws1/chat_credentials/.lock", "file"),
        ("ws1/repos", "symlink"),
        ("rigs", "symlink"),
        ("rigs/tls", "symlink"),
        ("rigs/tls/ca.key", "symlink"),
        ("rigs/tls/.lock", "file"),
        ("rigs/microvm-packs", "dir"),
        ("server.lock", "file"),
        ("not a workspace", "dir"),
        ("ws1/anything", "file"),
        ("ws1/chat_credentials/deeper", "dir"),
        ("rigs/workspace.db", "file"),
        ("postgresql.dump", "symlink"),
        ("postgresql.dump", "dir"),
        ("ws1/postgresql.dump", "file"),
    ],
)
def test_an_item_a_backup_never_holds_is_refused_by_name_before_anything_is_written(
    tmp_path: Path, path: str, kind: str
) -> None:
    outside = tmp_path / "authorized_keys"
    outside.write_text("mine")

    def add(writer: ArchiveWriter) -> None:
        for i in range(len(path.split("/")) - 1):
            so_far = "/".join(path.split("/")[: i + 1])
            if so_far != "ws1":
                writer.add_dir(so_far, 0o700)
        if kind == "symlink":
            writer.add_symlink(path, str(outside))
        elif kind == "dir":
            writer.add_dir(path, 0o700)
        else:
            writer.add_bytes(path, b"postgresql://evil@attacker.example/db", 0o600)

    backup = _hostile(tmp_path, add)
    with pytest.raises(BackupRefused, match=f"item {path!r}"):
        restore_backup(backup, tmp_path / "r", None)
    assert not (tmp_path / "r").exists() and outside.read_text() == "mine"
    assert not any(p.name.startswith(".r.restoring") for p in tmp_path.iterdir())


def test_what_a_backup_takes_is_restored_with_symlinks_only_in_the_files_of_workspaces(tmp_path: Path) -> None:
    def add(writer: ArchiveWriter) -> None:
        writer.add_bytes("secrets.json", b"{}", 0o600)
        writer.add_bytes("sign-in-origin", b"https://x.example", 0o600)
        writer.add_dir("rigs", 0o700)
        writer.add_dir("rigs/tls", 0o700)
        writer.add_bytes("rigs/tls/ca.pem", b"pem", 0o600)
        writer.add_dir("rigs/tls/leaves", 0o700)
        writer.add_bytes("rigs/tls/leaves/a.pem", b"pem", 0o600)
        writer.add_dir("ws1/chat_credentials", 0o700)
        writer.add_bytes("ws1/chat_credentials/slack.json", b"{}", 0o600)
        for tree in ("repos", "spaces", "worktrees"):
            writer.add_dir(f"ws1/{tree}", 0o755)
            writer.add_dir(f"ws1/{tree}/a", 0o755)
            writer.add_bytes(f"ws1/{tree}/a/Cargo.lock", b"lock", 0o644)
            writer.add_symlink(f"ws1/{tree}/a/link", "/etc/passwd")

    restore_backup(_hostile(tmp_path, add), tmp_path / "r", None)
    root = tmp_path / "r"
    assert (root / "rigs/tls/leaves/a.pem").read_text() == "pem"
    assert (root / "ws1/chat_credentials/slack.json").read_text() == "{}"
    for tree in ("repos", "spaces", "worktrees"):
        assert (root / f"ws1/{tree}/a/link").is_symlink()
        assert (root / f"ws1/{tree}/a/Cargo.lock").read_text() == "lock"


@pytest.mark.parametrize(("log_n", "r", "p"), [(22, 32, 16), (18, 8, 1), (17, 9, 1), (17, 8, 2), (16, 8, 1)])
def test_a_header_asking_another_scrypt_cost_is_refused_before_any_key_is_derived(
    monkeypatch: pytest.MonkeyPatch, log_n: int, r: int, p: int
) -> None:
    sealed = bytearray(_sealed(b"data"))
    derived: list[tuple[int, int, int]] = []
    real = crypt._key
    monkeypatch.setattr(
        crypt, "_key", lambda pw, n, rr, pp, salt: derived.append((n, rr, pp)) or real(pw, n, rr, pp, salt)
    )
    crypt._opening_key.cache_clear()
    # The writer's own cost opens (the limit, accepted)...
    assert OpeningReader(io.BytesIO(bytes(sealed)), b"passphrase").read() == b"data"
    assert derived == [(17, 8, 1)]
    # ...any other is refused by one sentence, without deriving a key (16 GiB of memory for 22, 32, 16).
    sealed[8:11] = bytes((log_n, r, p))
    crypt._opening_key.cache_clear()
    with pytest.raises(Damaged, match=rf"^the backup's encryption cost \(scrypt N=2\^{log_n}, r={r}, p={p}\) is not"):
        OpeningReader(io.BytesIO(bytes(sealed)), b"passphrase")
    assert derived == [(17, 8, 1)]


def _of_items(tmp_path: Path, count: int) -> tuple[Path, int]:
    """A backup of ``count`` items; its manifest's size."""
    backup = tmp_path / f"{count}.backup"
    with backup.open("wb") as out:
        writer = ArchiveWriter(out)
        writer.add_bytes("server.db", b"x", 0o600)
        for name in ("secrets.json", "sign-in-origin")[: count - 1]:
            writer.add_bytes(name, b"x", 0o600)
        manifest = manifest_of(writer)
        writer.finish(manifest)
    return backup, len(manifest.to_json())


def test_the_manifest_size_is_bounded_on_both_sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backup, size = _of_items(tmp_path, 3)
    monkeypatch.setattr(archive, "MAX_MANIFEST_BYTES", size)
    restore_backup(backup, tmp_path / "at", None)  # at the bound: accepted
    monkeypatch.setattr(archive, "MAX_MANIFEST_BYTES", size - 1)
    said = f"the backup's manifest is {size} bytes, more than the {size - 1} a backup holds"
    with pytest.raises(BackupRefused, match=f"^{said}"):
        restore_backup(backup, tmp_path / "past", None)
    assert not (tmp_path / "past").exists()
    with pytest.raises(BackupRefused, match="manifest would be"):
        writer = ArchiveWriter(io.BytesIO())  # and a backup past it is refused when taken, never written unrestorable
        writer.add_bytes("server.db", b"x", 0o600)
        writer.add_bytes("secrets.json", b"x", 0o600)
        writer.add_bytes("sign-in-origin", b"x", 0o600)
        writer.finish(manifest_of(writer))


def test_the_item_count_is_bounded_on_both_sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backup, _ = _of_items(tmp_path, 3)
    monkeypatch.setattr(archive, "MAX_ITEMS", 3)
    restore_backup(backup, tmp_path / "at", None)  # at the bound: accepted
    monkeypatch.setattr(archive, "MAX_ITEMS", 2)
    with pytest.raises(BackupRefused, match=r"^the backup holds more than 2 items, more than a backup holds"):
        restore_backup(backup, tmp_path / "past", None)
    assert not (tmp_path / "past").exists()
    with tarfile.open(backup) as tar:
        raw = tar.extractfile("MANIFEST.json").read()  # type: ignore[union-attr]
    with pytest.raises(BackupRefused, match=r"^the backup's manifest lists more than 2 items"):
        Manifest.from_json(raw)
    writer = ArchiveWriter(io.BytesIO())  # and a backup past it is refused when taken
    writer.add_bytes("server.db", b"x", 0o600)
    writer.add_bytes("secrets.json", b"x", 0o600)
    with pytest.raises(BackupRefused, match=r"^the data directory holds more than 2 items"):
        writer.add_bytes("sign-in-origin", b"x", 0o600)


def test_an_extended_header_is_bounded_on_both_sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long = "ws1/repos/" + "a" * 200  # past tar's 100 bytes: the path goes in a pax header
    backup = _hostile(tmp_path, lambda w: (w.add_dir("ws1/repos", 0o755), w.add_bytes(long, b"x", 0o644)))
    monkeypatch.setattr(archive, "MAX_HEADER_BYTES", 1)
    with pytest.raises(BackupRefused, match=r"^the backup has an extended header of (\d+) bytes") as refused:
        restore_backup(backup, tmp_path / "probe", None)
    size = int(str(refused.value.message).split()[7])
    monkeypatch.setattr(archive, "MAX_HEADER_BYTES", size)
    restore_backup(backup, tmp_path / "at", None)  # at the bound: accepted
    assert (tmp_path / "at" / long).read_bytes() == b"x"
    monkeypatch.setattr(archive, "MAX_HEADER_BYTES", size - 1)
    said = rf"^the backup has an extended header of {size} bytes, more than the {size - 1} an item's name takes"
    with pytest.raises(BackupRefused, match=said):
        restore_backup(backup, tmp_path / "past", None)
    assert not (tmp_path / "past").exists()


def test_a_sparse_member_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    """A sparse member declares far more than it holds (here 64 MiB in a few KiB, listed with its right checksum):
    a backup never writes one, and a restore refuses it before writing a byte of it."""
    import os
    import subprocess

    size = 64 << 20
    tree = tmp_path / "t"
    tree.mkdir()
    with (tree / "server.db").open("wb") as big:
        big.truncate(size)
    os.chmod(tree / "server.db", 0o600)
    digest = hashlib.sha256(bytes(size)).hexdigest()
    item = {"path": "server.db", "kind": "file", "mode": 0o600, "size": size, "sha256": digest}
    listed = {"format": FORMAT, "hangar_version": "0", "created_at": "", "database": "sqlite", "without_files": True}
    (tree / "MANIFEST.json").write_text(json.dumps({**listed, "items": [item]}))
    backup = tmp_path / "sparse.backup"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(backup), "server.db", "MANIFEST.json"], cwd=tree,
                   check=True)  # fmt: skip
    assert backup.stat().st_size < 64 << 10
    with pytest.raises(BackupRefused, match=r"'server\.db' is a sparse file"):
        restore_backup(backup, tmp_path / "restored", None)
    assert not (tmp_path / "restored").exists()


def _records(tmp_path: Path, database: str, paths: list[str]) -> Path:
    backup = tmp_path / f"{database}.backup"
    with backup.open("wb") as out:
        writer = ArchiveWriter(out)
        for path in paths:
            if "/" in path and path.split("/")[0] not in writer._paths:
                writer.add_dir(path.split("/")[0], 0o700)
            writer.add_bytes(path, b"x", 0o600)
        writer.finish(Manifest(FORMAT, "0.0.1", "2026-01-01T00:00:00+00:00", database, False, tuple(writer.items)))
    return backup


@pytest.mark.parametrize(
    ("database", "paths", "url", "said"),
    [
        ("postgresql", ["postgresql.dump", "server.db"], "postgresql://h@db/x", "says its records are in PostgreSQL"),
        ("postgresql", ["postgresql.dump", "ws1/workspace.db"], "postgresql://h@db/x", "holds 'ws1/workspace.db'"),
        ("postgresql", ["secrets.json"], "postgresql://h@db/x", "holds no postgresql.dump"),
        ("postgresql", ["postgresql.dump"], None, "give --database-url of an empty PostgreSQL database"),
        ("sqlite", ["server.db", "postgresql.dump"], None, "says its records are SQLite files"),
        ("sqlite", ["server.db"], "postgresql://h@db/x", "restore it without --database-url"),
        ("mysql", ["server.db"], None, "records are in 'mysql'"),
    ],
)
def test_the_records_must_be_what_the_manifest_says_and_go_where_they_belong(
    tmp_path: Path, database: str, paths: list[str], url: str | None, said: str
) -> None:
    """Refused before anything is written, and before any database is connected to (the URLs lead nowhere)."""
    backup = _records(tmp_path, database, paths)
    given = parse_database_url(url) if url is not None else None
    with pytest.raises(BackupRefused, match=re.escape(said)):
        restore_backup(backup, tmp_path / "r", None, database_url=given)
    assert not (tmp_path / "r").exists()
