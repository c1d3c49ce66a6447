"""Workspace export and import: one workspace's records (JSON lines, one file per table) and files in a tar with
a manifest and a README (``layout``); ``workspaces.export`` mints a signed download URL (``signing``, ``ops``),
the download streams the archive (``dump``), and an upload makes a new workspace of one (``load``, ``routes``)."""

from __future__ import annotations

from hangar.backup.export.part import TRANSFER_PART

__all__ = ["TRANSFER_PART"]
