"""A backup file is input: restoring one never writes outside the folder it restores into, whatever its paths and
symlinks say, and refuses naming the item; a sealed stream refuses reordered, dropped or cut chunks."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from hangar.backup import BackupRefused, restore_backup
from hangar.backup.archive import FORMAT, ArchiveWriter, Manifest
from hangar.backup.crypt import CHUNK, Damaged, OpeningReader, SealingWriter


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
        writer.add_symlink("ws1/repos", str(outside))
        writer.add_bytes("ws1/repos/planted", b"owned", 0o644)
        writer.finish(manifest_of(writer))
    with pytest.raises(BackupRefused, match="the item 'ws1/repos/planted' cannot be restored"):
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
