"""Backup and restore times, and a backup's size against its data directory.

A data directory with ``--workspaces`` workspaces of ``--messages`` messages each (posted through the spaces
service, the path ``messages.post`` takes, so events and audit rows come with them) and, in each workspace, a
worktree holding a copy of this checkout's ``src/`` (about 630 files) as its files. Then ``hangar admin backup``
(with files, without, and with files encrypted) and ``hangar admin restore`` of each are timed as the command line
runs them, from spawn to exit, medians of ``--samples`` runs; each backup's size beside the size of the tar archive
it gzips (what a backup weighed before backups were compressed).

Run: .venv/bin/python bench/bench_backup.py [--workspaces 10] [--messages 10000] [--samples 3] [--data DIR]
(``--data``: a data directory an earlier run populated and kept, measured again without populating it)
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANGAR = str(Path(sys.executable).parent / "hangar")
PASSPHRASE = "a bench passphrase"


async def populate(data: Path, workspaces: int, messages: int) -> None:
    from hangar.config import Settings
    from hangar.identity import IdentityService
    from hangar.identity.creation import create_workspace
    from hangar.server.context_factory import open_context
    from hangar.workspace import Author, SpaceService

    async with open_context(Settings(data_dir=data)) as ctx:
        owner = await ctx.service(IdentityService).ensure_server_owner()
        spaces = ctx.service(SpaceService)
        author = Author("user", owner.id, "owner")

        async def one(n: int) -> None:
            ws = (await create_workspace(ctx, f"bench-{n}", owner.id, by="bench")).id
            space = await spaces.create(ws, title="general", created_by=owner.id)
            for i in range(messages):
                await spaces.post(ws, space.id, author, f"message {i} of workspace {n}: " + "lorem ipsum " * 8)
            shutil.copytree(
                ROOT / "src", data / ws / "worktrees" / "bench", ignore=shutil.ignore_patterns("__pycache__")
            )

        await asyncio.gather(*(one(n) for n in range(workspaces)))


def size_of(path: Path) -> int:
    total = 0
    for here, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(Path(here) / name).st_size
    return total


def gunzipped_size(path: Path) -> int:
    total = 0
    with gzip.open(path, "rb") as archive:
        while chunk := archive.read(1 << 20):
            total += len(chunk)
    return total


def timed(*args: str) -> float:
    env = {**os.environ, "HANGAR_BACKUP_PASSPHRASE": PASSPHRASE} if "--encrypted" in args else dict(os.environ)
    args = tuple(a for a in args if a != "--encrypted")
    start = time.perf_counter()
    done = subprocess.run([HANGAR, "admin", *args], capture_output=True, text=True, env=env)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"hangar admin {' '.join(args)}: {done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspaces", type=int, default=10)
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as tmp:
        base = Path(tmp)
        data = opts.data or base / "data"
        began = time.perf_counter()
        if opts.data is None:
            asyncio.run(populate(data, opts.workspaces, opts.messages))
        built = time.perf_counter() - began
        result: dict[str, object] = {
            "workspaces": opts.workspaces,
            "messagesEach": opts.messages,
            "dataDirBytes": size_of(data),
            "populateSeconds": round(built, 1),
        }
        for label, extra in (
            ("withFiles", ()),
            ("withoutFiles", ("--without-files",)),
            ("encrypted", ("--encrypted",)),
        ):
            out = base / f"{label}.backup"
            backups, restores = [], []
            for n in range(opts.samples):
                out.unlink(missing_ok=True)
                backups.append(timed("backup", "--to", str(out), "--data-dir", str(data), *extra))
                target = base / f"restored-{label}-{n}"
                sealed = ("--encrypted",) if label == "encrypted" else ()
                restores.append(timed("restore", str(out), "--data-dir", str(target), *sealed))
                shutil.rmtree(target)
            entry: dict[str, object] = {
                "backupSeconds": round(statistics.median(backups), 2),
                "restoreSeconds": round(statistics.median(restores), 2),
                "bytes": out.stat().st_size,
            }
            if label != "encrypted":  # the tar archive inside, as large as backups were before they were gzipped
                entry["tarBytes"] = gunzipped_size(out)
            result[label] = entry
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
