"""``hangar pipeline`` end to end: the real command in a real process (killed with SIGKILL mid-run and
resumed), plus in-process runs of the same commands where a test body is needed to suspend a step."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import hangar.server.parts as server_parts
from hangar.cli.pipeline import pipeline_app
from hangar.core.part import Part
from hangar.core.runcontrol import DriverLock
from hangar.pipelines.layout import CONTROL_DIR
from tests.support.confined import trust_host_dir
from tests.unit.pipelines.test_template import CONTRACT_EXAMPLE

HANGAR = str(Path(sys.executable).parent / "hangar")

RUNNER = CliRunner()


def binary(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``hangar`` executable in its own process."""
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_DATA_DIR"}
    return subprocess.run([HANGAR, "pipeline", *args], env=env, capture_output=True, text=True, timeout=120)


def cli(*args: str) -> Any:
    """The command in this process (same code path as the binary, without paying its start-up each time)."""
    return RUNNER.invoke(pipeline_app, list(args))


def write(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(json.dumps(raw))
    return path


def test_validate_exit_codes_and_warnings(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", CONTRACT_EXAMPLE)
    res = cli("validate", str(good))
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    yml = tmp_path / "good.yaml"
    yml.write_text(yaml.safe_dump(CONTRACT_EXAMPLE))
    assert cli("validate", str(yml)).exit_code == 0

    warn = json.loads(json.dumps(CONTRACT_EXAMPLE))
    warn["steps"][3]["body"] = "nobody.here"
    res = cli("validate", str(write(tmp_path / "warn.json", warn)))
    assert res.exit_code == 0
    assert "warning: step fix: body 'nobody.here' is not registered" in res.stderr

    bad = json.loads(json.dumps(CONTRACT_EXAMPLE))
    bad["edges"] = []
    bad["steps"][1]["config"]["retryPolicy"]["maxAttempts"] = 0
    res = cli("validate", str(write(tmp_path / "bad.json", bad)))
    assert res.exit_code == 2
    assert "maxAttempts must be at least 1, not 0" in res.stderr


@pytest.mark.sqlite_only("reads workspace.db with sqlite3")
def test_run_contract_example_then_show(tmp_path: Path) -> None:
    data = tmp_path / "data"
    trust_host_dir(data)  # the steps read host files named in the input
    log = tmp_path / "app.log"
    log.write_text("ok\nERROR one\nERROR two\n")
    file = write(tmp_path / "triage.json", CONTRACT_EXAMPLE)
    res = binary("run", str(file), "--data-dir", str(data), "--input", f"log_path={log}", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"runId", "status", "state", "steps"}
    assert out["status"] == "completed"
    assert out["state"]["errors"] == "2"
    assert out["steps"]["fix"] == {"status": "completed", "attempts": 1, "error": None}
    run_dir = Path(out["state"]["check_runDir"])
    assert run_dir == data / "pipelines" / out["runId"] and run_dir.is_dir()
    shown = cli("show", out["runId"], "--data-dir", str(data))
    assert shown.exit_code == 0 and json.loads(shown.stdout) == out
    # The run is recorded against a manual trigger row of its template, like runs started over RPC.
    (db,) = data.glob("*/workspace.db")
    with sqlite3.connect(db) as conn:
        triggers = conn.execute("SELECT id, kind, template_id FROM pipeline_triggers").fetchall()
        (run_trigger,) = conn.execute("SELECT trigger_id FROM pipeline_runs WHERE id = ?", (out["runId"],)).fetchone()
    assert [(k, t) for _, k, t in triggers] == [("manual", "triage")] and run_trigger == triggers[0][0]
    missing = cli("show", "no-such-run", "--data-dir", str(data))
    assert missing.exit_code == 2 and "pipeline run 'no-such-run' does not exist" in missing.stderr

    clean = tmp_path / "clean.log"
    clean.write_text("all good\n")
    res = cli("run", str(file), "--data-dir", str(data), "--payload", json.dumps({"log_path": str(clean)}), "--json")
    # grep -c exits 1 when it counts nothing: the check step fails for good after three attempts.
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["status"] == "failed"
    assert out["steps"]["check"]["attempts"] == 3 and "script exited with status 1" in out["steps"]["check"]["error"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    file = write(tmp_path / "t.json", CONTRACT_EXAMPLE)
    d = str(tmp_path / "d")
    res = cli("run", str(file), "--data-dir", d, "--payload", "[1, 2]")
    assert res.exit_code == 2 and "--payload must be a JSON object" in res.stderr
    res = cli("run", str(file), "--data-dir", d, "--input", "novalue")
    assert res.exit_code == 2 and "is not KEY=VALUE" in res.stderr
    res = cli("run", str(tmp_path / "missing.json"), "--data-dir", d)
    assert res.exit_code == 2 and "cannot read" in res.stderr
    res = cli("show", "some-run", "--data-dir", d, "--workspace", "elsewhere")
    assert res.exit_code == 2 and "no workspace named 'elsewhere'" in res.stderr


def test_killed_mid_run_then_resumed_reruns_only_unfinished_steps(tmp_path: Path) -> None:
    data, marks = tmp_path / "data", tmp_path / "marks"
    marks.mkdir()
    trust_host_dir(data)  # the scripts mark host files

    def shell(sid: str, source: str, script: str) -> dict[str, Any]:
        return {
            "id": sid,
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": [source]},
            "config": {"script": script, "outputKey": f"{sid}_out"},
        }

    raw = {
        "id": "durable",
        "steps": [
            {"id": "start", "kind": "trigger"},
            shell("a", "start", f'echo run >> {marks}/a; echo "$HANGAR_PIPELINE_RUN_ID" > {marks}/run_id; echo A'),
            shell(
                "b",
                "a",
                f"echo run >> {marks}/b; echo $$ > {marks}/b_pid; "
                f"if [ ! -e {marks}/resumed ]; then touch {marks}/b_started; sleep 60; fi; echo B-{{{{a_out}}}}",
            ),
            shell("c", "b", f"echo run >> {marks}/c; echo C"),
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["c"]}},
        ],
    }
    file = write(tmp_path / "durable.json", raw)
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_DATA_DIR"}
    proc = subprocess.Popen(
        [HANGAR, "pipeline", "run", str(file), "--data-dir", str(data), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (marks / "b_started").exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "step b never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        # The killed process cannot stop its script; the test does.
        if (marks / "b_pid").exists():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int((marks / "b_pid").read_text()), signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    run_id = (marks / "run_id").read_text().strip()
    assert proc.stderr is not None and f"run {run_id} started" in proc.stderr.read().decode()

    shown = json.loads(cli("show", run_id, "--data-dir", str(data)).stdout)
    assert shown["status"] == "running"
    assert shown["state"]["a_out"] == "A"
    assert shown["steps"]["a"] == {"status": "completed", "attempts": 1, "error": None}
    assert shown["steps"]["b"]["status"] == "running"
    assert shown["steps"]["c"]["status"] == "pending"

    (marks / "resumed").touch()
    res = cli("resume", run_id, "--data-dir", str(data), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "completed"
    assert out["state"] | {} == {
        "a_out": "A",
        "a_runDir": str(data / "pipelines" / run_id),
        "b_out": "B-A",
        "b_runDir": str(data / "pipelines" / run_id),
        "c_out": "C",
        "c_runDir": str(data / "pipelines" / run_id),
    }
    # a completed before the kill and never ran again; b was interrupted and ran again (at least once).
    assert (marks / "a").read_text().count("run") == 1
    assert (marks / "b").read_text().count("run") == 2
    assert (marks / "c").read_text().count("run") == 1
    assert out["steps"]["b"]["attempts"] == 1
    again = cli("resume", run_id, "--data-dir", str(data), "--json")
    assert again.exit_code == 0 and (marks / "c").read_text().count("run") == 1


@pytest.fixture
def with_test_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.pipelines import bodies_for_tests

    composed = server_parts.all_parts
    test_part = Part(name="test-bodies", bodies=bodies_for_tests.BODIES)
    monkeypatch.setattr(server_parts, "all_parts", lambda: [*composed(), test_part])
    monkeypatch.delenv("HANGAR_DATA_DIR", raising=False)


def test_suspended_run_exits_3_and_emit_resumes_it(tmp_path: Path, with_test_bodies: None) -> None:
    data = tmp_path / "data"
    raw = {
        "id": "approve",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "wait",
                "kind": "listen",
                "body": "test.waitEvent",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"outputKey": "approval", "extras": {"eventType": "review.approved"}},
            },
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["wait"]}},
        ],
    }
    file = write(tmp_path / "approve.json", raw)
    runner = CliRunner()
    res = runner.invoke(pipeline_app, ["run", str(file), "--data-dir", str(data), "--workspace", "team", "--json"])
    assert res.exit_code == 3, res.output
    run = json.loads(res.stdout)
    assert run["status"] == "suspended" and run["steps"]["wait"]["status"] == "suspended"

    res = runner.invoke(
        pipeline_app,
        [
            "emit",
            "review.approved",
            "--payload",
            '{"by": "ann"}',
            "--data-dir",
            str(data),
            "--workspace",
            "team",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    (resumed,) = json.loads(res.stdout)
    assert resumed["runId"] == run["runId"] and resumed["status"] == "completed"
    assert resumed["state"]["approval"] == {"by": "ann"}

    res = runner.invoke(pipeline_app, ["emit", "review.approved", "--data-dir", str(data), "--workspace", "nope"])
    assert res.exit_code == 2 and "no workspace named 'nope'" in res.output


def test_dry_run_reports_what_it_would_do(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    raw = {
        "id": "dry",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "make",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "touch {{target}}"},
            },
        ],
    }
    file = write(tmp_path / "dry.json", raw)
    res = cli(
        "run", str(file), "--data-dir", str(tmp_path / "data"), "--input", f"target={marker}", "--dry-run", "--json"
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "completed"
    assert out["state"]["_dryRun"] == {"make": f"bash -c touch {marker}"}
    assert not marker.exists()


@pytest.mark.packs("terminal")
@pytest.mark.sqlite_only("edits workspace.db with sqlite3")
def test_a_run_driven_by_another_process_is_not_driven_twice(tmp_path: Path) -> None:
    data = tmp_path / "data"
    raw = {
        "id": "held",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "s",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "echo hi"},
            },
        ],
    }
    res = cli("run", str(write(tmp_path / "held.json", raw)), "--data-dir", str(data), "--json")
    run_id = json.loads(res.stdout)["runId"]
    lock = DriverLock.acquire(data / "pipelines" / CONTROL_DIR / run_id, run_id)
    try:
        # A finished run needs no driver, so only an unfinished one is refused; make this one unfinished.
        ws_db = next(data.glob("*/workspace.db"))
        conn = sqlite3.connect(ws_db)
        conn.execute("UPDATE pipeline_runs SET status = 'running', finished_at = NULL WHERE id = ?", (run_id,))
        conn.execute("UPDATE pipeline_step_runs SET status = 'running' WHERE run_id = ? AND step_id = 's'", (run_id,))
        conn.commit()
        conn.close()
        res = cli("resume", run_id, "--data-dir", str(data))
        assert res.exit_code == 2
        assert f"pipeline run {run_id} is being driven by another process" in res.stderr
    finally:
        lock.release()
    res = cli("resume", run_id, "--data-dir", str(data), "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["status"] == "completed"
