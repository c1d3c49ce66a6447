"""The bodies this part owns, run by the engine: shell.run, flow.router, pipeline.subPipeline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hangar.pipelines import template as tpl
from tests.unit.pipelines.harness import WS, Harness, harness, listen, steps


def shell(sid: str, src: str, script: str, **config: Any) -> dict[str, Any]:
    return listen(sid, src, body="shell.run", script=script, **config)


def router(sid: str, src: str, extras: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": sid,
        "kind": "router",
        "body": "flow.router",
        "trigger": {"sourceStepIds": [src]},
        "config": {"extras": extras},
    }


async def test_shell_shares_run_dir_escapes_values_and_trims_output(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        snap = await h.run(
            steps(
                shell("write", "start", "echo {{msg}} > note.txt; echo '  padded  '", outputKey="padded"),
                shell("read", "write", "cat note.txt; echo $HANGAR_STEP_ID $HANGAR_PIPELINE_RUN_ID", outputKey="read"),
            ),
            payload={"msg": "x; touch pwned $(touch pwned2)"},
        )
        run_dir = tmp_path / "pipelines" / snap["runId"]
        assert snap["status"] == "completed"
        assert snap["state"]["padded"] == "padded"
        assert snap["state"]["read"] == f"x; touch pwned $(touch pwned2)\nread {snap['runId']}"
        assert snap["state"]["write_runDir"] == snap["state"]["read_runDir"] == str(run_dir)
        assert not (run_dir / "pwned").exists() and not (run_dir / "pwned2").exists()


async def test_shell_failure_carries_the_stderr_tail(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        snap = await h.run(steps(shell("s", "start", "for i in $(seq 1 3000); do echo line$i >&2; done; exit 4")))
        err = snap["steps"]["s"]["error"]
        assert err.startswith("script exited with status 4: …") and err.endswith("line3000")
        assert len(err) < 2100


async def test_shell_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    async with harness(tmp_path) as h:
        snap = await h.run(steps(shell("s", "start", f"sleep 120 & echo $! > {pid_file}; wait", timeoutMs=700)))
        assert snap["steps"]["s"] == {"status": "timedOut", "attempts": 1, "error": "timed out after 700 ms"}
        pid = int(pid_file.read_text())
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            await asyncio.sleep(0.02)
        assert not Path(f"/proc/{pid}").exists()


async def _route(h: Harness, extras: dict[str, Any], keys: list[str], seed: dict[str, Any]) -> str:
    raw = steps(
        router("r", "start", extras),
        *[listen(f"to_{k}", "r") for k in keys],
        edges=[{"from": "r", "to": f"to_{k}", "routeKey": k} for k in keys],
    )
    loaded = tpl.load(raw, h.engine.bodies)
    run_id = await h.engine.start_run(WS, loaded.template, payload=seed)
    assert run_id
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    chosen = [k for k in keys if snap["steps"][f"to_{k}"]["status"] == "completed"]
    assert len(chosen) == 1, snap
    return chosen[0]


async def test_router_shapes_in_priority_order(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        tf = ["true", "false"]
        # Predicates read state only: the trigger payload is not state, so a comparison on it is unmet.
        assert (
            await _route(h, {"predicate": {"type": "comparison", "left": "n", "op": "exists"}}, tf, {"n": 1}) == "false"
        )
        fe = {"predicate": {"type": "fileExists", "paths": ["README.md"], "recursive": True}}
        assert await _route(h, fe, tf, {}) == "false"
        legacy = {"left": "missing", "op": "notExists"}
        assert await _route(h, legacy, tf, {}) == "true"
        switch = {"switchKey": "missing", "cases": {"hot": "fire"}, "default": "calm"}
        assert await _route(h, switch, ["hot", "calm"], {}) == "calm"
        # The predicate wins over a switch in the same extras.
        both = {
            "predicate": {"type": "not", "of": {"type": "comparison", "left": "x", "op": "exists"}},
            "switchKey": "x",
            "cases": ["a"],
        }
        assert await _route(h, both, ["true", "a", "default"], {}) == "true"


async def test_router_file_exists_in_the_run_directory(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        raw = steps(
            shell("make", "start", "mkdir -p src/lib && touch src/lib/pubspec.yaml"),
            router("r", "make", {"predicate": {"type": "fileExists", "paths": ["pubspec.yaml"], "recursive": True}}),
            listen("dart", "r"),
            listen("other", "r"),
            edges=[{"from": "r", "to": "dart", "routeKey": "true"}, {"from": "r", "to": "other", "routeKey": "false"}],
        )
        snap = await h.run(raw)
        assert snap["steps"]["dart"]["status"] == "completed" and snap["steps"]["other"]["status"] == "skipped"


async def test_sub_pipeline_child_failure_fails_the_step_and_missing_template_is_named(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        child = steps(shell("bad", "start", "exit 9"), tid="failing")
        await h.engine.store.insert_template(
            WS, tpl.load(child, h.engine.bodies).template.to_wire(), by=None, now=h.clock.now()
        )
        snap = await h.run(steps(listen("sub", "start", body="pipeline.subPipeline", extras={"templateId": "failing"})))
        assert snap["status"] == "failed"
        assert snap["steps"]["sub"]["error"].startswith("child run ") and snap["steps"]["sub"]["error"].endswith(
            "ended failed"
        )
        snap = await h.run(steps(listen("sub", "start", body="pipeline.subPipeline", extras={"templateId": "absent"})))
        assert snap["steps"]["sub"]["error"] == "template 'absent' does not exist"
