"""A pipeline's ``fileExists`` predicate looks at the run's working directory, which the run's (confined) shell
steps write: a member's script plants a symlink to a host folder there, or prints a host path into the state
key a predicate takes its base from, and a router asks whether files behind them exist. The server must never
look at the host through them. Real server, real enclosure, a plain member's credential."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_confined_user_code import member_session, run_template, step
from tests.support.runs import assert_completed

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")


def router(sid: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": sid,
        "kind": "router",
        "body": "flow.router",
        "trigger": {"sourceStepIds": ["plant"]},
        "config": {"extras": {"predicate": predicate}},
    }


def after(sid: str, source: str) -> dict[str, Any]:
    return {"id": sid, "kind": "listen", "body": "pipeline.trigger", "trigger": {"sourceStepIds": [source]}}


async def test_file_exists_never_looks_at_the_host_through_what_a_run_wrote(tmp_path: Path) -> None:
    secret = tmp_path / "host-only"
    secret.mkdir(mode=0o700)
    (secret / "classified.txt").write_text("")
    (tmp_path / "inside").mkdir()
    plant = f"ln -s {secret} probe && mkdir -p src/deep && touch src/deep/mine.txt && echo {secret}"
    looks = {
        "through-link": {"type": "fileExists", "paths": ["probe/classified.txt"]},
        "through-link-recursive": {"type": "fileExists", "paths": ["classified.txt"], "recursive": True},
        "own-file": {"type": "fileExists", "paths": ["mine.txt"], "recursive": True},
    }
    refusals = {
        "base-from-state": {"type": "fileExists", "paths": ["classified.txt"], "baseKey": "base"},
        "absolute": {"type": "fileExists", "paths": [str(secret / "classified.txt")]},
        "climbing": {"type": "fileExists", "paths": [f"../../../{secret.name}/classified.txt"], "negate": True},
    }
    async with member_session(tmp_path) as (srv, c, ws):
        run = await run_template(srv, c, ws, template("peek", plant, looks))
        assert_completed(run)
        assert run["state"]["base"] == str(secret)
        assert step(run, "own-file-true")["status"] == "completed"  # what the run made itself is found
        for name in ("through-link", "through-link-recursive"):  # a link is never looked through
            routes = (step(run, f"{name}-true")["status"], step(run, f"{name}-false")["status"])
            assert routes == ("skipped", "completed"), (name, routes)
        for name, predicate in refusals.items():  # a host path is refused, naming it
            run = await run_template(srv, c, ws, template(name, plant, {name: predicate}))
            failed = step(run, name)
            assert run["status"] == "failed" and failed["status"] == "failed", run
            assert "lies outside the run's working directory and its workspace's folder" in failed["error"]
            assert secret.name in failed["error"]
            assert step(run, f"{name}-true")["status"] != "completed"


def template(tid: str, plant: str, checks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A shell step ``plant`` (its stdout in state ``base``), then one router per check, each with a step on its
    ``true`` and on its ``false`` route."""
    steps: list[dict[str, Any]] = [
        {"id": "start", "kind": "trigger"},
        {
            "id": "plant",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": plant, "outputKey": "base"},
        },
    ]
    edges = []
    for name, predicate in checks.items():
        steps += [router(name, predicate), after(f"{name}-true", name), after(f"{name}-false", name)]
        edges += [
            {"from": name, "to": f"{name}-true", "routeKey": "true"},
            {"from": name, "to": f"{name}-false", "routeKey": "false"},
        ]
    return {"id": tid, "steps": steps, "edges": edges}
