"""What a workspace export holds, and where: the archive's layout, its manifest and its README.

An export is a POSIX tar (the backup's writer and reader, ``hangar.backup.archive``): tar because every system
lists and unpacks it without Hangar and because it streams (a zip's directory comes last too, but its readers
seek; a tar is read front to back, so a download is written while it is sent and an upload checked as it is read).

    README.txt                 this layout in plain words
    tables/<table>.jsonl       one JSON object per line for each row of the table, its columns by name
    files/repos/...            the workspace's repositories (bare clones), spaces' folders and worktrees,
    files/spaces/...           as they are on disk (symlinks stored as symlinks, never followed)
    files/worktrees/...
    MANIFEST.json              format, the workspace's schema revision, every item with its size and SHA-256

Values in the rows: text, numbers, ``true``/``false``, ``null``; timestamps as ISO 8601 text (UTC); JSON columns
as JSON. Left out: what is secret, or belongs to this server's live state rather than the workspace's records
(``LEFT_OUT``); agents' API keys and secret variables live in the server's secrets file, never in the rows, so no
export carries them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hangar.backup.archive import MAX_ITEMS, BackupRefused, Item
from hangar.core.settings import SettingSpec, strict_int

FORMAT = 1
KIND = "hangar-workspace-export"
README = "README.txt"
TABLES = "tables"
FILES = "files"
FILE_TREES = ("repos", "spaces", "worktrees")

# Tables an export leaves out, and why. Chat: the connection's claims, open streams, links to the chat provider's
# people and channels and link codes (hashes of credentials) are this server's bond with one chat workspace; an
# import connects its own. Rigs: machines and their dev domains live and die with the server that runs them.
# The rest is the server's bookkeeping of work in flight (event consumers' places, stop requests).
LEFT_OUT = frozenset(
    {
        "event_cursors",
        "run_stop_requests",
        "chat_connection_claims",
        "chat_inbound_seen",
        "chat_link_codes",
        "chat_open_streams",
        "chat_space_links",
        "chat_user_links",
        "rig_sessions",
        "rig_action_log",
        "rig_dev_domains",
    }
)
# Exported for the record (readable in the archive) but not loaded by an import: the new workspace's history of
# events and audit begins with its import (replayed events would run its triggers again), and the waits of
# pipeline runs an import stops.
NOT_LOADED = frozenset({"domain_events", "audit_log", "pipeline_waits"})

# An upload is input: bounded before it is read (server settings; the defaults fit a large workspace).
MAX_BYTES_SETTING = "workspaceImport.maxBytes"
MAX_ITEMS_SETTING = "workspaceImport.maxItems"
MAX_LINE_SETTING = "workspaceImport.maxLineBytes"
DEFAULT_MAX_BYTES = 4 << 30
DEFAULT_MAX_ITEMS = 200_000
DEFAULT_MAX_LINE = 16 << 20
# An upload must keep arriving: after a grace period (``routes.BODY_GRACE_S``) at this average rate at least, so a
# client trickling bytes cannot hold a connection and a scratch file for ever (408).
MIN_RATE_SETTING = "workspaceImport.minBytesPerSecond"
DEFAULT_MIN_RATE = 32 << 10
# Imports and exports under way at once in one server process (each holds a snapshot or a scratch folder and a
# thread writing or reading it); one past the cap is answered 429 with Retry-After.
MAX_TRANSFERS_SETTING = "workspaceTransfer.maxConcurrent"
DEFAULT_MAX_TRANSFERS = 2
SPECS = [
    SettingSpec(
        MAX_BYTES_SETTING,
        f"The largest workspace export an import takes, in bytes (default {DEFAULT_MAX_BYTES}).",
        strict_int(MAX_BYTES_SETTING, 1024, 1 << 40),
    ),
    SettingSpec(
        MAX_ITEMS_SETTING,
        f"The most items (files, folders, tables) an imported workspace export may hold (default {DEFAULT_MAX_ITEMS}).",
        strict_int(MAX_ITEMS_SETTING, 4, MAX_ITEMS),
    ),
    SettingSpec(
        MAX_LINE_SETTING,
        f"The longest row (one line of a table) an import takes, in bytes (default {DEFAULT_MAX_LINE}).",
        strict_int(MAX_LINE_SETTING, 256, 1 << 30),
    ),
    SettingSpec(
        MIN_RATE_SETTING,
        "The slowest an import's upload may arrive, in bytes per second on average after its first 30 s; a slower"
        f" one is refused with 408 (default {DEFAULT_MIN_RATE}).",
        strict_int(MIN_RATE_SETTING, 1, 1 << 30),
    ),
    SettingSpec(
        MAX_TRANSFERS_SETTING,
        "The most workspace imports and exports one server process runs at once; one more is refused with 429"
        f" (default {DEFAULT_MAX_TRANSFERS}).",
        strict_int(MAX_TRANSFERS_SETTING, 1, 64),
    ),
]

README_TEXT = """\
A Hangar workspace export
=========================

This archive holds one workspace of a Hangar server: its records and its files. It is a plain tar
archive; nothing in it needs Hangar to be read.

  README.txt              this file
  tables/<table>.jsonl    the rows of one table, one JSON object per line, columns by name
  files/repos/            the workspace's repositories (bare git clones, one folder per repository id)
  files/spaces/           the spaces' working folders
  files/worktrees/        checkouts of repositories for tickets and pull requests
  MANIFEST.json           the format, the workspace's schema revision (one revision per part of Hangar),
                          the number of rows of each table, and every item with its size and SHA-256

Timestamps are ISO 8601 text in UTC; JSON columns are JSON values. Messages are in
tables/messages.jsonl (space_id names the space in tables/spaces.jsonl), tickets in tables/tickets.jsonl,
agents in tables/agents.jsonl.

Not in this archive: the chat bridge's connection, links and credentials; agents' API keys and secret
variables (kept in the server's secrets file); device credentials and members (kept by the server); rigs.
Importing it into a Hangar server (Import on the workspace list) makes a new workspace with these records
and files; connect chat and enter agents' keys again there.
"""


@dataclass(frozen=True)
class ExportManifest:
    """The manifest closing an export; ``schema`` maps each migration set to its revision (``None``: none yet)."""

    format: int
    hangar_version: str
    created_at: str
    workspace_id: str
    workspace_name: str
    exported_by: str
    schema: dict[str, str | None]
    rows: dict[str, int]
    items: tuple[Item, ...]

    def to_json(self) -> bytes:
        data: dict[str, Any] = {
            "kind": KIND,
            "format": self.format,
            "hangarVersion": self.hangar_version,
            "createdAt": self.created_at,
            "workspace": {"id": self.workspace_id, "name": self.workspace_name},
            "exportedBy": self.exported_by,
            "schema": self.schema,
            "rows": self.rows,
            "items": [_item_json(i) for i in self.items],
        }
        return json.dumps(data, indent=0, sort_keys=True).encode()

    @staticmethod
    def from_json(raw: bytes) -> ExportManifest:
        try:
            data = json.loads(raw)
            if data.get("kind") != KIND:
                raise BackupRefused("the file is not a Hangar workspace export (its manifest says otherwise)")
            if data.get("format") != FORMAT:
                raise BackupRefused(
                    f"the export's format {data.get('format')!r} is not one this version reads ({FORMAT})"
                )
            listed = data["items"]
            if not isinstance(listed, list) or len(listed) > MAX_ITEMS:
                raise BackupRefused("the export's manifest lists more items than an export holds")
            schema, rows, ws = data["schema"], data["rows"], data["workspace"]
            if not isinstance(schema, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in schema.items()
            ):
                raise ValueError("schema")
            if not isinstance(rows, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in rows.items()
            ):
                raise ValueError("rows")
            manifest = ExportManifest(
                format=FORMAT,
                hangar_version=str(data["hangarVersion"]),
                created_at=str(data["createdAt"]),
                workspace_id=str(ws["id"]),
                workspace_name=str(ws["name"]),
                exported_by=str(data["exportedBy"]),
                schema=schema,
                rows=rows,
                items=tuple(_item(i) for i in listed),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            raise BackupRefused("the export's manifest is damaged") from None
        return manifest


def _item_json(item: Item) -> dict[str, Any]:
    data = {"path": item.path, "kind": item.kind, "mode": item.mode, "size": item.size, "sha256": item.sha256}
    if item.target is not None:
        data["target"] = item.target
    return data


def _item(data: Any) -> Item:
    if not isinstance(data, dict) or data.get("kind") not in ("file", "dir", "symlink"):
        raise ValueError("item")
    target = data.get("target")
    if not isinstance(data["path"], str) or not isinstance(data["sha256"], str):
        raise ValueError("item")
    for key in ("mode", "size"):
        if not isinstance(data[key], int) or isinstance(data[key], bool):
            raise ValueError("item")
    if target is not None and not isinstance(target, str):
        raise ValueError("item")
    return Item(data["path"], data["kind"], data["mode"], data["size"], data["sha256"], target)


def table_path(table: str) -> str:
    return f"{TABLES}/{table}.jsonl"


def check_layout(item: Item, parts: tuple[str, ...]) -> None:
    """``BackupRefused`` naming ``item`` unless an export holds an item of its kind at its path."""
    top, depth = parts[0], len(parts)
    if depth == 1 and top == README and item.kind == "file":
        return
    if top == TABLES and (
        (depth == 1 and item.kind == "dir") or (depth == 2 and item.kind == "file" and parts[1].endswith(".jsonl"))
    ):
        return
    if top == FILES and (depth == 1 and item.kind == "dir"):
        return
    if top == FILES and depth >= 2 and parts[1] in FILE_TREES and (depth > 2 or item.kind == "dir"):
        return
    raise BackupRefused(f"the export holds the item {item.path[:200]!r}, which a workspace export never holds")
