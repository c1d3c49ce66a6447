"""Sealing a SQLite install's secrets into PostgreSQL (``hangar admin migrate-to-postgresql``): the secrets file
and each workspace's secret folders become rows of ``sealed_secrets`` under the installation's key, in the copy's
transaction, each read back and opened to check it before the transaction commits. The files are left as they
were, as the SQLite databases are."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from hangar.core.datadir import DataDir, workspace_ids
from hangar.core.postgresql import SERVER_SCHEMA
from hangar.core.sealed import CHECK_VALUE, KEY_CHECK, place
from hangar.core.sealed_tables import SERVER_SCOPE
from hangar.core.secretfiles import FileSecretFolder
from hangar.core.secretkey import SecretKey
from hangar.errors import Internal

log = logging.getLogger(__name__)


@dataclass
class SealReport:
    sealed: int = 0  # the secrets, the key's check row not counted
    skipped: list[str] = field(default_factory=list)  # files that hold no JSON object, by name


def _values(datadir: DataDir, folders: Sequence[str], report: SealReport) -> Iterator[tuple[str, str, bytes]]:
    raw = json.loads(datadir.secrets_file.read_text()) if datadir.secrets_file.is_file() else {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise Internal(f"the secrets file {datadir.secrets_file.name} is not a map of strings")
    for key, value in sorted(raw.items()):
        yield SERVER_SCOPE, str(key), value.encode()
    for ws in workspace_ids(datadir):
        for folder in folders:
            store = FileSecretFolder(datadir, folder)
            directory = store.directory(ws)
            if not directory.is_dir() or directory.is_symlink():
                continue
            for entry in sorted(os.listdir(directory)):
                if not entry.endswith(".json") or entry.startswith("."):
                    continue
                data: dict[str, Any] | None = store.read_path(directory / entry)
                if data is None:
                    report.skipped.append(f"{ws}/{folder}/{entry}")
                    continue
                yield ws, f"{folder}/{entry[: -len('.json')]}", json.dumps(data, sort_keys=True).encode()


def seal_install(conn: psycopg.Connection[Any], datadir: DataDir, key: SecretKey, folders: Sequence[str]) -> SealReport:
    """Seal the secrets of the SQLite install ``datadir`` (its secrets file, and the workspaces' ``folders``) into
    the copy's transaction on ``conn``, with the key's check row, and check each one reads back."""
    report = SealReport()
    table = f"{SERVER_SCHEMA}.sealed_secrets"
    values = [(KEY_CHECK[0], KEY_CHECK[1], CHECK_VALUE), *_values(datadir, folders, report)]
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {table} (scope, name, sealed) VALUES (%s, %s, %s)",
            [(scope, name, key.seal(place(scope, name), value)) for scope, name, value in values],
        )
        cur.execute(f"SELECT scope, name, sealed FROM {table}")
        stored = {(scope, name): bytes(sealed) for scope, name, sealed in cur.fetchall()}
    if len(stored) != len(values):
        raise Internal(f"{len(values)} secrets were sealed but {len(stored)} are stored")
    for scope, name, value in values:
        sealed = stored.get((scope, name))
        if sealed is None or key.open(place(scope, name), sealed) != value:
            raise Internal(f"the sealed secret {name} does not read back as it was written")
    report.sealed = len(values) - 1
    return report
