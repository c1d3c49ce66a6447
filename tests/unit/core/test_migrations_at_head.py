"""Opening a database whose every migration set is at its head reads the version tables and nothing more
(``hangar.core.migrating.at_head``): Alembic is neither run nor imported. Anything short of exactly the head (a
version behind, one this code does not know, two rows, no release recorded, no table) goes the old way, where a
revision from a newer Hangar is still refused by name; and a version folder that does not say its head plainly
is left to Alembic."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.core import migrating
from hangar.core.dbfailures import SchemaNewer
from hangar.core.migrating import MigrationSet, apply_migrations, at_head, declared_head, head_revision
from hangar.identity.tables import MIGRATIONS as IDENTITY
from hangar.oauth.tables import MIGRATIONS as OAUTH

SETS = (IDENTITY, OAUTH)


def set_version(db: Path, name: str, *rows: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"DELETE FROM alembic_version_{name}")
        conn.executemany(f"INSERT INTO alembic_version_{name} VALUES (?)", [(r,) for r in rows])


def test_the_declared_heads_are_alembics() -> None:
    for mset in SETS:
        assert declared_head(mset.location) == head_revision(mset)


def test_a_database_at_head_is_opened_without_alembic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "server.db"
    assert not at_head(db, SETS)  # no file yet
    apply_migrations(db, SETS)
    assert at_head(db, SETS)

    def no_migration(*args: object, **kwargs: object) -> int:
        raise AssertionError("Alembic ran on a database at head")

    monkeypatch.setattr(migrating, "_upgrade", no_migration)
    apply_migrations(db, SETS)  # nothing to do: only the version tables are read
    # And in a process of its own, Alembic is not even imported.
    code = (
        "import sys; from pathlib import Path; from hangar.core.migrating import apply_migrations;"
        "from hangar.identity.tables import MIGRATIONS as I; from hangar.oauth.tables import MIGRATIONS as O;"
        f"apply_migrations(Path({str(db)!r}), (I, O)); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_anything_short_of_the_head_goes_the_old_way(tmp_path: Path) -> None:
    db = tmp_path / "server.db"
    apply_migrations(db, SETS)
    head = declared_head(IDENTITY.location)
    assert head is not None
    behind = f"i{int(head[1:]) - 1:04d}"
    for rows in ((behind,), ("i9999",), (head, behind), ()):
        set_version(db, "identity", *rows)
        assert not at_head(db, SETS), rows
    set_version(db, "identity", head)
    assert at_head(db, SETS)
    with sqlite3.connect(db) as conn:
        conn.execute(f"DELETE FROM {migrating.RELEASE_TABLE}")
    assert not at_head(db, SETS)  # no release recorded: the old way records it
    apply_migrations(db, SETS)
    assert at_head(db, SETS)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE alembic_version_oauth")
    assert not at_head(db, SETS)


def test_a_revision_from_a_newer_hangar_is_still_refused(tmp_path: Path) -> None:
    db = tmp_path / "server.db"
    apply_migrations(db, SETS)
    set_version(db, "identity", "i9999")
    with pytest.raises(SchemaNewer):
        apply_migrations(db, SETS)


def test_a_version_folder_that_does_not_say_its_head_plainly_is_left_to_alembic(tmp_path: Path) -> None:
    def copied(name: str) -> Path:
        where = tmp_path / name
        shutil.copytree(IDENTITY.location / "versions", where / "versions")
        return where

    plain = copied("plain")
    assert declared_head(plain) == head_revision(IDENTITY)
    two_heads = copied("two-heads")
    (two_heads / "versions" / "i0099_other.py").write_text('revision = "i0099"\ndown_revision = "i0001"\n')
    assert declared_head(two_heads) is None
    unclear = copied("unclear")
    (unclear / "versions" / "i0005_next.py").write_text('revision = "i0005"\ndown_revision = ("i0004", "i0003")\n')
    assert declared_head(unclear) is None
    mset = MigrationSet("identity", "server", unclear, tables=IDENTITY.tables)
    assert not at_head(tmp_path / "none.db", (mset,))
