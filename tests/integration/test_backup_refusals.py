"""Every refusal of ``hangar admin backup`` and ``restore`` is one sentence on stderr, exit 1, and changes nothing:
a non-empty target, a truncated file, one flipped byte (named by its item), a wrong or missing passphrase, a
backup into a missing folder or into the data directory itself; the passphrase's bounds on both sides. Backups are
gzipped; one written before they were (a plain tar archive: ``old_format``) restores, and its damage is refused
as before."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from hangar.backup import BackupRefused, read_passphrase
from hangar.backup.crypt import MAX_PASSPHRASE, MIN_PASSPHRASE

pytestmark = pytest.mark.sqlite_only(
    "backs up and damages installs on SQLite files (server.db named in refusals); "
    "test_backup_postgresql.py has the refusals on PostgreSQL"
)

HANGAR = str(Path(sys.executable).parent / "hangar")


def admin(*args: str, passphrase: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_BACKUP_PASSPHRASE"}
    if passphrase is not None:
        env["HANGAR_BACKUP_PASSPHRASE"] = passphrase
    return subprocess.run([HANGAR, "admin", *args], capture_output=True, text=True, env=env, timeout=300)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one sentence of a refusal."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("backup") / "data"
    assert admin("owner-token", "--data-dir", str(root)).returncode == 0
    (root / "secrets.json").write_text('{"k": "v"}')
    (root / "secrets.json").chmod(0o600)
    return root


@pytest.fixture(scope="module")
def plain(data: Path) -> Path:
    out = data.parent / "plain.backup"
    done = admin("backup", "--to", str(out), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def old_format(plain: Path) -> Path:
    """``plain`` as backups were written before they were compressed: the same tar archive, not gzipped."""
    raw = plain.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip's magic: backups are compressed now
    out = plain.parent / "old-format.backup"
    out.write_bytes(gzip.decompress(raw))
    assert out.stat().st_size > 2 * plain.stat().st_size
    return out


def test_a_backup_written_before_compression_restores(tmp_path: Path, plain: Path, old_format: Path) -> None:
    for backup, into in ((old_format, tmp_path / "old"), (plain, tmp_path / "new")):
        done = admin("restore", str(backup), "--data-dir", str(into))
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "old" / "server.db").read_bytes() == (tmp_path / "new" / "server.db").read_bytes()
    assert (tmp_path / "old" / "secrets.json").read_text() == '{"k": "v"}'


def test_restore_refuses_damaged_or_cut_compressed_data(tmp_path: Path, plain: Path) -> None:
    raw = bytearray(plain.read_bytes())
    cut = tmp_path / "cut.backup"
    cut.write_bytes(bytes(raw[: len(raw) // 2]))
    said = refused(admin("restore", str(cut), "--data-dir", str(tmp_path / "r")))
    assert "truncated" in said or "damaged" in said
    raw[len(raw) // 3] ^= 0xFF
    flipped = tmp_path / "flipped.backup"
    flipped.write_bytes(bytes(raw))
    said = refused(admin("restore", str(flipped), "--data-dir", str(tmp_path / "r")))
    assert "damaged" in said or "truncated" in said or "checksum" in said
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def sealed(data: Path) -> Path:
    out = data.parent / "sealed.backup"
    key = data.parent / "passphrase"
    key.write_text("correct horse battery\n")
    done = admin("backup", "--to", str(out), "--data-dir", str(data), "--passphrase-file", str(key))
    assert done.returncode == 0, done.stderr
    assert "encrypted" in done.stdout
    return out


def test_an_encrypted_backup_is_compressed_before_it_is_sealed(sealed: Path, old_format: Path) -> None:
    from hangar.backup.crypt import OpeningReader

    with sealed.open("rb") as raw:
        opened = OpeningReader(raw, b"correct horse battery")
        inside = opened.read(-1)
    assert inside[:2] == b"\x1f\x8b" and gzip.decompress(inside)[:100] == old_format.read_bytes()[:100]
    assert sealed.stat().st_size < old_format.stat().st_size / 2


def test_restore_refuses_a_non_empty_folder_naming_it(tmp_path: Path, plain: Path) -> None:
    target = tmp_path / "full"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    said = refused(admin("restore", str(plain), "--data-dir", str(target)))
    assert said == f"{target} is not empty: restore into an empty or absent folder"
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert admin("restore", str(plain), "--data-dir", str(empty)).returncode == 0  # empty: accepted
    assert (empty / "server.db").is_file()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert "is not a folder" in refused(admin("restore", str(plain), "--data-dir", str(a_file)))


def test_restore_refuses_a_truncated_backup_naming_the_item(tmp_path: Path, old_format: Path) -> None:
    cut = tmp_path / "cut.backup"
    cut.write_bytes(old_format.read_bytes()[: old_format.stat().st_size // 2])
    said = refused(admin("restore", str(cut), "--data-dir", str(tmp_path / "r")))
    assert "'server.db'" in said and ("truncated" in said or "damaged" in said)
    assert not (tmp_path / "r").exists()
    no_manifest = tmp_path / "no-manifest.backup"
    with tarfile.open(old_format) as tar:
        end = tar.getmember("MANIFEST.json").offset
    no_manifest.write_bytes(old_format.read_bytes()[:end])
    said = refused(admin("restore", str(no_manifest), "--data-dir", str(tmp_path / "r")))
    assert said.startswith("the backup is truncated: it ends at the item after ") and "before its manifest" in said
    assert not (tmp_path / "r").exists()


def test_restore_refuses_one_flipped_byte_naming_the_item(tmp_path: Path, old_format: Path) -> None:
    with tarfile.open(old_format) as tar:
        at = tar.getmember("server.db").offset_data + 1000
    raw = bytearray(old_format.read_bytes())
    raw[at] ^= 0x01
    flipped = tmp_path / "flipped.backup"
    flipped.write_bytes(bytes(raw))
    said = refused(admin("restore", str(flipped), "--data-dir", str(tmp_path / "r")))
    assert said == "the backup's item 'server.db' fails its checksum (damaged)"
    assert not (tmp_path / "r").exists()
    assert not list(tmp_path.glob(".r.restoring-*"))


def _with_planted(plain: Path, out: Path, plant: str, *, symlink_to: Path | None = None) -> Path:
    """``plain`` rewritten with one more item ``plant`` (a symlink to ``symlink_to``, else a file naming an
    attacker's database), its manifest listing it: a backup file anyone could have crafted."""
    from hangar.backup.archive import ArchiveWriter, Manifest

    with tarfile.open(plain) as tar, out.open("wb") as sink:
        manifest = Manifest.from_json(tar.extractfile("MANIFEST.json").read())  # type: ignore[union-attr]
        writer = ArchiveWriter(sink)
        for item in manifest.items:
            if item.kind == "dir":
                writer.add_dir(item.path, item.mode)
            elif item.kind == "symlink":
                writer.add_symlink(item.path, str(item.target))
            else:
                writer.add_bytes(item.path, tar.extractfile(item.path).read(), item.mode)  # type: ignore[union-attr]
        if symlink_to is not None:
            writer.add_symlink(plant, str(symlink_to))
        else:
            writer.add_bytes(plant, b"postgresql://evil@attacker.example/hangar\n", 0o600)
        writer.finish(Manifest(**{**manifest.__dict__, "items": tuple(writer.items)}))
    return out


@pytest.mark.parametrize("plant", ["server.db-wal", "secrets.json.tmp", "database-url", "secret-key"])
def test_restore_refuses_an_item_a_backup_never_holds_naming_it(tmp_path: Path, plain: Path, plant: str) -> None:
    keys = tmp_path / "authorized_keys"
    keys.write_text("ssh-ed25519 mine\n")
    hostile = _with_planted(
        plain, tmp_path / "hostile.backup", plant, symlink_to=None if plant in ("database-url", "secret-key") else keys
    )
    said = refused(admin("restore", str(hostile), "--data-dir", str(tmp_path / "r")))
    assert said.startswith(f"the backup holds the item {plant!r}"), said
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.restoring-*"))
    assert keys.read_text() == "ssh-ed25519 mine\n"


def test_an_encrypted_backup_needs_its_passphrase(tmp_path: Path, sealed: Path, data: Path) -> None:
    assert b"server.db" not in sealed.read_bytes() and b'"k": "v"' not in sealed.read_bytes()
    said = refused(admin("restore", str(sealed), "--data-dir", str(tmp_path / "r"), passphrase="a wrong passphrase"))
    assert said == "the passphrase does not open this backup"
    said = refused(admin("restore", str(sealed), "--data-dir", str(tmp_path / "r")))
    assert said.startswith(f"{sealed} is encrypted: give its passphrase")
    assert not (tmp_path / "r").exists()
    done = admin("restore", str(sealed), "--data-dir", str(tmp_path / "r"), passphrase="correct horse battery")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "secrets.json").read_text() == '{"k": "v"}'

    raw = bytearray(sealed.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (tmp_path / "flipped").write_bytes(bytes(raw))
    said = refused(
        admin(
            "restore", str(tmp_path / "flipped"), "--data-dir", str(tmp_path / "f"), passphrase="correct horse battery"
        )
    )
    assert "fails its check" in said and "(at " in said
    (tmp_path / "cut").write_bytes(sealed.read_bytes()[:-10])
    said = refused(
        admin("restore", str(tmp_path / "cut"), "--data-dir", str(tmp_path / "f"), passphrase="correct horse battery")
    )
    assert "truncated" in said
    assert not (tmp_path / "f").exists()


def test_backup_refuses_a_missing_folder_and_the_data_directory_itself(tmp_path: Path, data: Path) -> None:
    missing = tmp_path / "nowhere" / "x.backup"
    assert refused(admin("backup", "--to", str(missing), "--data-dir", str(data))) == (
        f"the folder {missing.parent} does not exist"
    )
    assert not missing.parent.exists()
    inside = data / "x.backup"
    said = refused(admin("backup", "--to", str(inside), "--data-dir", str(data)))
    assert said == f"{inside} is inside the data directory {data}: write the backup elsewhere"
    assert not inside.exists()
    said = refused(admin("backup", "--to", "/proc/hangar.backup", "--data-dir", str(data)))
    assert said.startswith("the backup to /proc/hangar.backup failed: ")  # a folder nothing can be written in
    said = refused(admin("backup", "--to", str(tmp_path / "b"), "--data-dir", str(tmp_path / "not-a-data-dir")))
    assert "holds no Hangar server database" in said
    assert refused(admin("restore", str(tmp_path / "none"), "--data-dir", str(tmp_path / "r"))) == (
        f"there is no backup at {tmp_path / 'none'}"
    )


def test_an_install_whose_records_are_in_postgresql_is_backed_up_from_there(tmp_path: Path, data: Path) -> None:
    # A copy of the data directory that records a PostgreSQL URL (as migrate-to-postgresql leaves it): its SQLite
    # files are the state at the copy, not the install's records; the backup dumps the database it records
    # (tests/integration/test_backup_postgresql.py), here one that cannot be reached.
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("server.db", "secrets.json"):
        (moved / name).write_bytes((data / name).read_bytes())
    (moved / "database-url").write_text("postgresql://hangar@db.invalid/hangar\n")
    out = tmp_path / "moved.backup"
    said = refused(admin("backup", "--to", str(out), "--data-dir", str(moved)))
    assert said.startswith("cannot connect to the PostgreSQL database postgresql://hangar@db.invalid/hangar: ")
    assert not out.exists()
    (moved / "database-url").unlink()  # the same folder without the record backs up its SQLite files
    assert admin("backup", "--to", str(out), "--data-dir", str(moved)).returncode == 0


def test_a_sqlite_backup_is_not_restored_into_postgresql(tmp_path: Path, plain: Path) -> None:
    target = tmp_path / "restored"
    said = refused(admin("restore", str(plain), "--data-dir", str(target), "--database-url", "postgresql://h@db/x"))
    assert said == (
        "the backup holds SQLite databases: restore it without --database-url (or $HANGAR_DATABASE_URL), then "
        "copy the install to PostgreSQL with hangar admin migrate-to-postgresql"
    )
    assert not target.exists()


def test_the_passphrase_bounds_on_both_sides(tmp_path: Path, data: Path) -> None:
    short, enough = "x" * (MIN_PASSPHRASE - 1), "x" * MIN_PASSPHRASE
    said = refused(admin("backup", "--to", str(tmp_path / "s"), "--data-dir", str(data), passphrase=short))
    assert said == f"the passphrase from HANGAR_BACKUP_PASSPHRASE is shorter than {MIN_PASSPHRASE} characters"
    assert not (tmp_path / "s").exists()
    assert admin("backup", "--to", str(tmp_path / "s"), "--data-dir", str(data), passphrase=enough).returncode == 0
    key = tmp_path / "key"
    key.write_text("y" * MAX_PASSPHRASE + "\n")
    assert read_passphrase(key, None) == b"y" * MAX_PASSPHRASE
    key.write_text("y" * (MAX_PASSPHRASE + 1))
    with pytest.raises(BackupRefused, match=f"longer than {MAX_PASSPHRASE} bytes"):
        read_passphrase(key, None)
    key.write_text("\n")
    with pytest.raises(BackupRefused, match="shorter than"):
        read_passphrase(key, None)
    assert read_passphrase(None, None) is None
    with pytest.raises(BackupRefused, match="there is no passphrase file at"):
        read_passphrase(tmp_path / "absent", None)
