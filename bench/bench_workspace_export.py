"""Workspace export and import: times and archive size for one workspace of ``--messages`` messages, beside a
backup of the same data directory (the peer: ``hangar admin backup`` copies the same records and files).

The workspace is populated as ``bench_backup`` populates one (messages through the spaces service, so events and
audit rows come with them; a worktree holding a copy of this checkout's ``src/`` as its files). A server runs on
that data directory and another on an empty one; the export is timed from ``workspaces.export`` to the last byte
of the download, the import from the first byte of the upload to the new workspace's answer. Medians of
``--samples`` runs.

Run: .venv/bin/python bench/bench_workspace_export.py [--messages 10000] [--samples 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench_backup import populate, size_of, timed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import running_server  # noqa: E402


async def measure(base: Path, messages: int, samples: int) -> dict[str, object]:
    data = base / "data"
    await populate(data, 1, messages)
    backup = base / "peer.backup"
    backup_s = [timed("backup", "--to", str(backup), "--data-dir", str(data)) for _ in range(samples)]
    exports, imports = [], []
    archive = b""
    async with (
        running_server(data) as one,
        running_server(base / "other") as two,
        httpx.AsyncClient(timeout=600) as http,
    ):
        async with RpcClient(one.ws_url, one.owner_token) as client:
            ws = (await client.call("workspaces.list"))[0]["id"]
            for _ in range(samples):
                began = time.perf_counter()
                link = await client.call("workspaces.export", workspace_id=ws)
                got = await http.get(link["url"])
                got.raise_for_status()
                exports.append(time.perf_counter() - began)
                archive = got.content
        for _ in range(samples):
            began = time.perf_counter()
            answer = await http.post(
                f"{two.url}/workspace-transfer/import",
                content=archive,
                headers={"Authorization": f"Bearer {two.owner_token}"},
            )
            answer.raise_for_status()
            imports.append(time.perf_counter() - began)
    return {
        "messages": messages,
        "workspaceBytes": size_of(data),
        "archiveBytes": len(archive),
        "exportSeconds": round(statistics.median(exports), 2),
        "importSeconds": round(statistics.median(imports), 2),
        "peerBackupSeconds": round(statistics.median(backup_s), 2),
        "peerBackupBytes": backup.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--samples", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        print(json.dumps(asyncio.run(measure(Path(tmp), opts.messages, opts.samples)), indent=2))


if __name__ == "__main__":
    main()
