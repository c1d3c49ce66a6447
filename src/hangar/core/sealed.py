"""Secrets kept in the PostgreSQL database, sealed: what an install on PostgreSQL uses in place of the secrets
file and the workspaces' secret folders, so every process on every host reads the same secrets at once.

Every read and write goes to the table (``hangar.core.sealed_tables``): nothing is cached but the key, and the
key is read again whenever its file changes. The key is checked against a row sealed with it when the table got
its first secret (``KEY_CHECK``); a process whose key does not open that row, or that has no key while secrets
are stored, refuses in one sentence naming the file to copy, and never writes: nothing stored is re-sealed or
overwritten. A row that does not open under its own name (moved or altered in the database) is refused too.

The calls are synchronous, as the file-backed stores' are (their callers are): one short statement each on the
synchronous pool (``Databases.sync_engine``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from hangar.core.fileio import file_signature, fsync_dir, write_private_atomic
from hangar.core.sealed_tables import SERVER_SCOPE, qualified
from hangar.core.secretkey import KEY_ENV, KeyFileBroken, SecretKey, create_key, read_key
from hangar.errors import Internal, Unavailable

log = logging.getLogger(__name__)

KEY_CHECK = ("*", "key-check")  # a scope no workspace id can be, and the value it seals
CHECK_VALUE = b"hangar sealed secrets"


def copy_hint(path: Path) -> str:
    return f"copy the file secret-key of a host already serving this database to {path} (or name it with {KEY_ENV})"


class SealedSecrets:
    """The sealed secrets in the database of ``engine`` (``database``: how messages name it), under the key in
    ``key_path``; ``make_key``: whether this process may make the key when none is stored yet (not a command on a
    database URL alone, whose data directory is a scratch folder)."""

    def __init__(self, engine: Engine, key_path: Path, database: str, *, make_key: bool = True) -> None:
        self._engine = engine
        self._make_key = make_key
        self._key_path = key_path
        self._database = database
        self._lock = threading.Lock()
        self._checked: tuple[tuple[int, int, int], SecretKey] | None = None

    @property
    def key_path(self) -> Path:
        return self._key_path

    # -- the key -----------------------------------------------------------------------------------------------

    def _signature(self) -> tuple[int, int, int] | None:
        return file_signature(self._key_path)

    def key(self) -> SecretKey:
        """The installation's key, checked against the database (made, with the check row, when neither a key
        file nor any secret exists yet); ``Unavailable`` naming what to copy where otherwise."""
        with self._lock:
            signature = self._signature()
            if self._checked is not None and self._checked[0] == signature:
                return self._checked[1]
            key = self._load_or_make()
            self._checked = (self._signature() or (0, 0, 0), key)
            return key

    def _load_or_make(self) -> SecretKey:
        try:
            key = read_key(self._key_path)
        except KeyFileBroken as exc:
            raise Unavailable(f"the secret key {exc}: {copy_hint(self._key_path)}") from None
        with self._engine.begin() as conn:
            check = self._check_row(conn)
            if key is None:
                if check is not None:
                    raise Unavailable(
                        f"the secrets in {self._database} are sealed with this installation's key and "
                        f"{self._key_path} is missing: {copy_hint(self._key_path)}"
                    )
                if not self._make_key:
                    raise Unavailable(
                        "this command acts on the database alone and has no secret key: name a copy of the "
                        f"installation's secret-key with {KEY_ENV}, or give --data-dir"
                    )
                key = create_key(self._key_path)
                log.info("made the installation's secret key %s", self._key_path)
            if check is None:
                if conn.execute(sa.select(sa.literal(1)).select_from(qualified).limit(1)).first() is not None:
                    # Secrets without the row their key was checked by: no key can be trusted to be theirs.
                    raise Unavailable(
                        f"the secrets in {self._database} have lost the row their key is checked against "
                        f"({KEY_CHECK[1]}): restore it from a backup; nothing stored was changed"
                    )
                conn.execute(
                    _pg_insert(qualified)
                    .values(scope=KEY_CHECK[0], name=KEY_CHECK[1], sealed=key.seal(place(*KEY_CHECK), CHECK_VALUE))
                    .on_conflict_do_nothing()
                )
                check = self._check_row(conn)
        if check is None or key.open(place(*KEY_CHECK), check) != CHECK_VALUE:
            raise Unavailable(self._other_key())
        return key

    def _other_key(self) -> str:
        return (
            f"{self._key_path} is not the key the secrets in {self._database} are sealed with: "
            f"{copy_hint(self._key_path)}; nothing stored was changed"
        )

    @staticmethod
    def _check_row(conn: sa.Connection) -> bytes | None:
        row = conn.execute(
            sa.select(qualified.c.sealed).where(qualified.c.scope == KEY_CHECK[0], qualified.c.name == KEY_CHECK[1])
        ).first()
        return None if row is None else bytes(row[0])

    def rotate(self) -> int:
        """Re-seal every value under a new key in one transaction, then put the new key in the key file; returns
        how many values (the check row included). The new key is first written beside the file
        (``secret-key.new``), so a crash after the commit leaves it there to be moved in place by hand."""
        old = self.key()
        new = SecretKey.fresh()
        pending = self._key_path.with_name(self._key_path.name + ".new")
        write_private_atomic(pending, new.text())
        with self._lock:
            try:
                with self._engine.begin() as conn:
                    # Writers wait (and so write under the new key once it is in place); readers go on.
                    conn.exec_driver_sql(f"LOCK TABLE {qualified.schema}.{qualified.name} IN EXCLUSIVE MODE")
                    rows = conn.execute(sa.select(qualified.c.scope, qualified.c.name, qualified.c.sealed)).all()
                    for scope, name, sealed in rows:
                        value = old.open(place(scope, name), bytes(sealed))
                        if value is None:
                            raise Internal(
                                f"the sealed secret {_shown(scope, name)} in {self._database} does not open under its "
                                "name: nothing was re-sealed"
                            )
                        conn.execute(
                            sa.update(qualified)
                            .where(qualified.c.scope == scope, qualified.c.name == name)
                            .values(sealed=new.seal(place(scope, name), value))
                        )
            except BaseException:
                pending.unlink(missing_ok=True)
                raise
            os.replace(pending, self._key_path)
            fsync_dir(self._key_path.parent)
            self._checked = None
        return len(rows)

    # -- values ------------------------------------------------------------------------------------------------

    def get(self, scope: str, name: str) -> bytes | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(qualified.c.sealed).where(qualified.c.scope == scope, qualified.c.name == name)
            ).first()
        if row is None:
            return None
        key = self.key()
        value = key.open(place(scope, name), bytes(row[0]))
        if value is None:
            # Checked afresh: another host may have rotated the key since (then this refuses, naming the file).
            with self._lock:
                self._checked = None
            self.key()
            # The key opens the check row: this row was sealed for another place, or altered.
            raise Internal(f"the sealed secret {_shown(scope, name)} in {self._database} does not open under its name")
        return value

    def has(self, scope: str, name: str) -> bool:
        with self._engine.connect() as conn:
            return (
                conn.execute(
                    sa.select(sa.literal(1)).where(qualified.c.scope == scope, qualified.c.name == name)
                ).first()
                is not None
            )

    def put(self, scope: str, name: str, value: bytes) -> None:
        self._put(scope, name, value, replace=True)

    def put_if_absent(self, scope: str, name: str, value: bytes) -> bytes:
        """Store ``value`` unless a value is stored already; the stored one either way (two processes making the
        same key at once agree on one)."""
        self._put(scope, name, value, replace=False)
        stored = self.get(scope, name)
        if stored is None:  # deleted between the two statements: ours was stored, or nothing is
            raise Internal(f"the sealed secret {_shown(scope, name)} in {self._database} was removed as it was made")
        return stored

    def _put(self, scope: str, name: str, value: bytes, *, replace: bool) -> None:
        key = self.key()
        sealed = key.seal(place(scope, name), value)
        stmt = _pg_insert(qualified).values(scope=scope, name=name, sealed=sealed)
        with self._engine.begin() as conn:
            # The check row again, held until the write commits: a rotation (which locks the table) either ended
            # before, and a key it replaced is refused here, or waits for this write and re-seals it.
            check = conn.execute(
                sa.select(qualified.c.sealed)
                .where(qualified.c.scope == KEY_CHECK[0], qualified.c.name == KEY_CHECK[1])
                .with_for_update(read=True)
            ).scalar_one_or_none()
            if check is None or key.open(place(*KEY_CHECK), bytes(check)) != CHECK_VALUE:
                with self._lock:
                    self._checked = None
                raise Unavailable(self._other_key())
            if replace:
                conn.execute(stmt.on_conflict_do_update(index_elements=["scope", "name"], set_={"sealed": sealed}))
            else:
                conn.execute(stmt.on_conflict_do_nothing(index_elements=["scope", "name"]))

    def delete(self, scope: str, name: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(sa.delete(qualified).where(qualified.c.scope == scope, qualified.c.name == name))

    def delete_prefix(self, scope: str, prefix: str) -> None:
        with self._engine.begin() as conn:
            names = conn.execute(sa.select(qualified.c.name).where(qualified.c.scope == scope)).scalars().all()
            doomed = [n for n in names if n.startswith(prefix)]
            if doomed:
                conn.execute(sa.delete(qualified).where(qualified.c.scope == scope, qualified.c.name.in_(doomed)))


def _pg_insert(table: sa.Table) -> Any:
    """PostgreSQL's INSERT (with ``ON CONFLICT``) into ``table``. Imported on use: the dialect loads every
    driver's module (about 0.1 s), which every command on SQLite would otherwise pay at start-up for nothing."""
    from sqlalchemy.dialects.postgresql import insert

    return insert(table)


def place(scope: str, name: str) -> str:
    """The associated data of a value: where it is kept, so a value moved elsewhere does not open."""
    return f"{scope}\n{name}"


def _shown(scope: str, name: str) -> str:
    return name if scope == SERVER_SCOPE else f"{name} of workspace {scope}"


class SealedSecretsFile:
    """The server's secrets (``hangar.core.secrets.Secrets``) in the database."""

    def __init__(self, store: SealedSecrets) -> None:
        self._store = store

    @property
    def store(self) -> SealedSecrets:
        return self._store

    def get(self, key: str) -> str | None:
        value = self._store.get(SERVER_SCOPE, key)
        return None if value is None else value.decode()

    def has(self, key: str) -> bool:
        return self._store.has(SERVER_SCOPE, key)

    def set(self, key: str, value: str) -> None:
        self._store.put(SERVER_SCOPE, key, value.encode())

    def set_if_absent(self, key: str, value: str) -> str:
        return self._store.put_if_absent(SERVER_SCOPE, key, value.encode()).decode()

    def delete(self, key: str) -> None:
        self._store.delete(SERVER_SCOPE, key)

    def delete_prefix(self, prefix: str) -> None:
        self._store.delete_prefix(SERVER_SCOPE, prefix)


class SealedSecretFolder:
    """A workspace's folder of secrets (``hangar.core.secretfiles.SecretFolder``) in the database, as rows of the
    workspace's scope named ``<folder>/<name>``."""

    def __init__(self, store: SealedSecrets, folder: str) -> None:
        self._store = store
        self._folder = folder

    def read(self, workspace_id: str, name: str) -> dict[str, Any] | None:
        raw = self._store.get(workspace_id, f"{self._folder}/{name}")
        if raw is None:
            return None
        data = json.loads(raw)
        return data if isinstance(data, dict) else None

    def write(self, workspace_id: str, name: str, data: dict[str, Any]) -> None:
        self._store.put(workspace_id, f"{self._folder}/{name}", json.dumps(data, sort_keys=True).encode())

    def remove(self, workspace_id: str, name: str) -> None:
        self._store.delete(workspace_id, f"{self._folder}/{name}")

    def exists(self, workspace_id: str, name: str) -> bool:
        return self._store.has(workspace_id, f"{self._folder}/{name}")
