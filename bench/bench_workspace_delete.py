"""Time to delete a workspace of ``--messages`` messages with a repo (``workspaces.delete`` over the RPC socket),
beside the peer of removing a copy of the same workspace folder with ``shutil.rmtree`` (no records, no mounts, no
descriptors): a ratio, measured side by side in one run.

Each sample is a fresh workspace on a real server: messages posted through the spaces service (the path
``messages.post`` takes, so events and audit rows come with them), a git repository of this checkout's ``src/``
(about 630 files) registered and checked out into a space (a clone under ``repos/`` and a worktree in the space's
folder, on its own disk where the host can make one). The workspace folder is copied before the deletion and the
copy removed after it.

Run: .venv/bin/python bench/bench_workspace_delete.py [--messages 10000] [--samples 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import RunningServer, running_server  # noqa: E402

from hangar.workspace import Author, SpaceService  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "B",
    "GIT_AUTHOR_EMAIL": "b@example.test",
    "GIT_COMMITTER_NAME": "B",
    "GIT_COMMITTER_EMAIL": "b@example.test",
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
}


def make_repo(where: Path) -> Path:
    repo = where / "app"
    shutil.copytree(ROOT / "src", repo, ignore=shutil.ignore_patterns("__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "src"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=GIT_ENV)
    return repo


async def one(
    srv: RunningServer, client: RpcClient, repo: Path, messages: int, n: int, scratch: Path
) -> dict[str, float]:
    name = f"bench-{n}"
    ws = await srv.new_workspace(name)
    registered = await client.call("repos.register", workspace_id=ws, path=str(repo))
    space = await client.call("spaces.create", workspace_id=ws, title="general", repoIds=[registered["id"]])
    spaces = srv.ctx.service(SpaceService)
    author = Author("user", srv.owner_id, "owner")
    for i in range(messages):
        await spaces.post(ws, space["id"], author, f"message {i} of workspace {n}: " + "lorem ipsum " * 8)
    copy = scratch / f"copy-{n}"
    await asyncio.to_thread(shutil.copytree, srv.data_dir / ws, copy, symlinks=True)
    start = time.perf_counter()
    done = await client.call("workspaces.delete", workspace_id=ws, confirm=name)
    deleted = time.perf_counter() - start
    assert done["state"] == "deleted" and not (srv.data_dir / ws).exists()
    start = time.perf_counter()
    await asyncio.to_thread(shutil.rmtree, copy)
    removed = time.perf_counter() - start
    return {"delete": deleted, "rmtree": removed}


async def run(messages: int, samples: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-wsdel-") as tmp:
        base = Path(tmp)
        repo = make_repo(base / "src")
        async with running_server(base / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as client:
            runs = [await one(srv, client, repo, messages, n, base) for n in range(samples)]
    delete = statistics.median(r["delete"] for r in runs)
    rmtree = statistics.median(r["rmtree"] for r in runs)
    return {
        "messages": messages,
        "samples": samples,
        "deleteSeconds": round(delete, 3),
        "rmtreeOfACopySeconds": round(rmtree, 3),
        "ratio": round(delete / rmtree, 1) if rmtree else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--samples", type=int, default=3)
    opts = parser.parse_args()
    print(json.dumps(asyncio.run(run(opts.messages, opts.samples)), indent=2))


if __name__ == "__main__":
    main()
