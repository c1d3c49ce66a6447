"""The router's ``fileExists`` looks only inside the run's working directory, and never on the event loop.

Driven over the real socket of the real server by a plain member whose confined shell steps plant what an
attacker would: symlinks out of the run directory to the server's database, the data directory and the root.
Each look through them must be false (paths that name a host file outright, climbing or absolute, fail the step
naming them: ``test_guest_trees_pipelines.py``). A recursive look over a big tree runs beside the server, not
inside its event loop: another client's ``server.info`` is answered while the walk is held in the middle of the
tree.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hangar.pipelines import filecheck
from tests.integration.test_confined_user_code import finished, member_session, step
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

GATE = "walk-gate-marker"


def router(sid: str, after: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": sid,
        "kind": "listen",
        "body": "flow.router",
        "trigger": {"sourceStepIds": [after]},
        "config": {"outputKey": sid, "extras": {"predicate": predicate}},
    }


def shell(sid: str, after: str, script: str) -> dict[str, Any]:
    return {
        "id": sid,
        "kind": "listen",
        "body": "shell.run",
        "trigger": {"sourceStepIds": [after]},
        "config": {"script": script, "outputKey": sid},
    }


def chain(tid: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"id": tid, "steps": [{"id": "start", "kind": "trigger"}, *steps]}


async def run(c: RpcClient, ws: str, raw: dict[str, Any], timeout: float = 180) -> dict[str, Any]:
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=raw["id"])
    return await finished(c, ws, started["runId"], timeout)


async def test_file_exists_never_sees_a_host_file_outside_the_run_directory(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        own = srv.data_dir / "host-only.txt"  # a file of the server's own, on either engine
        own.write_text("the server's, not the run's")
        plant = (
            f"ln -s {own} db-link && ln -s {srv.data_dir} data-link && ln -s / root-link && "
            "echo here > inside.txt && mkdir -p sub/deeper && touch sub/deeper/found.txt && "
            f"echo {srv.data_dir}"
        )
        probes = {
            "linkToFile": {"type": "fileExists", "paths": ["db-link"]},
            "linkToDir": {"type": "fileExists", "paths": ["data-link/host-only.txt"]},
            "linkToRoot": {"type": "fileExists", "paths": ["root-link/etc/passwd"]},
            "recursiveThroughLink": {"type": "fileExists", "paths": ["passwd"], "recursive": True},
            # Controls: what is inside the run directory is found, plainly and recursively.
            "inside": {"type": "fileExists", "paths": ["inside.txt"]},
            "nested": {"type": "fileExists", "paths": ["found.txt"], "recursive": True},
        }
        steps = [shell("plant", "start", plant)]
        previous = "plant"
        for name, predicate in probes.items():
            steps.append(router(name, previous, predicate))
            previous = name
        done = await run(c, ws, chain("probe-host", *steps))
        assert_completed(done)
        seen = {name: done["state"][name] for name in probes}
        assert seen == {
            "linkToFile": "false",
            "linkToDir": "false",
            "linkToRoot": "false",
            "recursiveThroughLink": "false",
            "inside": "true",
            "nested": "true",
        }, done["steps"]


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    """Holds any directory walk that lists a directory holding ``GATE`` until the test opens the gate (or 60 s
    pass): ``reached`` is set when a walk got there, ``opened`` lets it go on."""
    reached, opened = threading.Event(), threading.Event()
    real = os.scandir

    def held(path: Any = ".") -> Any:
        it = real(path)
        entries = list(it)
        it.close()
        if any(e.name == GATE for e in entries):
            reached.set()
            opened.wait(60)
        return _Listing(entries)

    os.scandir = held  # type: ignore[assignment]
    try:
        yield reached, opened
    finally:
        os.scandir = real
        opened.set()


class _Listing:
    """What ``os.scandir`` returns, over entries already read."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> os.DirEntry[str]:
        return next(self._entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


async def test_a_recursive_walk_does_not_hold_up_other_clients(
    tmp_path: Path, gate: tuple[threading.Event, threading.Event]
) -> None:
    reached, opened = gate
    async with member_session(tmp_path) as (srv, c, ws):
        # A tree of a few thousand entries, with the gate's marker half way down.
        build = (
            "for i in $(seq 1 40); do mkdir -p tree/d$i; for j in $(seq 1 50); do : > tree/d$i/f$j; done; done; "
            f": > tree/d20/{GATE}"
        )
        raw = chain(
            "walk",
            shell("build", "start", build),
            router("look", "build", {"type": "fileExists", "paths": ["nowhere.txt"], "recursive": True}),
        )
        await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
        started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="walk")
        async with RpcClient(srv.ws_url, srv.owner_token) as other:
            while not reached.is_set():
                await asyncio.sleep(0.05)
            # The walk is held inside the tree: the server still answers, and the walk is still where it was.
            info = await other.call("server.info")
            assert info and not opened.is_set()
            current = await c.call("pipelines.runs.get", workspace_id=ws, runId=started["runId"])
            assert step(current, "look")["status"] == "running"
            opened.set()
        done = await finished(c, ws, started["runId"])
        assert done["status"] == "completed" and done["state"]["look"] == "false", done


async def test_a_walk_past_its_bound_fails_the_step_naming_the_bound(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (_srv, c, ws):
        over = filecheck.MAX_ENTRIES + 10
        build = f'python3 -c \'import os\nos.mkdir("t")\nfor i in range({over}): open(f"t/{{i}}", "w").close()\''
        raw = chain(
            "bounded",
            shell("build", "start", build),
            router("look", "build", {"type": "fileExists", "paths": ["nowhere.txt"], "recursive": True}),
        )
        done = await run(c, ws, raw)
        assert done["status"] == "failed", done
        error = step(done, "look")["error"]
        assert f"{filecheck.MAX_ENTRIES} entries" in error and "run directory" in error, error
