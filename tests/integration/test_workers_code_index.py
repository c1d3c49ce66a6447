"""``code.index`` on ``hangar worker`` processes: the server hands the step over and drives none itself; the worker
brings the branch's commits from the server that holds the clone (``POST /worker/code-bundle/<ws>`` with its worker
credential, bound to the try it holds: ``hangar.codegraph.lane``) and indexes its own copy.

Real processes: a ``hangar serve`` and ``hangar worker --server`` processes on their own data directories, on the
suite's throwaway PostgreSQL cluster; the real RPC client.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import hangar
from hangar.codegraph.lane import BODY_MAX, BUNDLE_PATH, COMMIT_HEADER
from hangar.pipelines.stepqueue import SAFETY_POLL_S, WAITS_FOR_SERVER_WORKER
from hangar.pipelines.worker_lane import TRY_KEY_HEADER
from tests.integration.test_code_graph import POLYGLOT, commit_tree, new_repo
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import (
    fan_out,
    hangar_worker,
    kill9,
    mint,
    server,
    server_and_worker,
    sql,
    start,
    wait_for,
    workers_attached,
)
from tests.integration.test_workspace_repos import _git
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow

QUEUE = "SELECT body_key, status, tries, history FROM hangar_server.pipeline_step_queue WHERE run_id = %s"


async def register(c: RpcClient, data: Path, ws: str, source: Path) -> tuple[str, str]:
    """Register ``source``; its id and the clone's path in the server's data directory."""
    repo = await c.call("repos.register", workspace_id=ws, path=str(source))
    return repo["id"], str(data / ws / "repos" / f"{repo['id']}.git")


async def start_index(c: RpcClient, ws: str, repo_id: str, clone: str, tid: str) -> str:
    raw = template({"id": "index", "body": "code.index"}, tid=tid)
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call(
        "pipelines.runs.start", workspace_id=ws, templateId=tid, payload={"repo_id": repo_id, "repo_local_path": clone}
    )
    return str(started["runId"])


def code_report(run: dict[str, Any]) -> dict[str, Any]:
    assert_completed(run)
    return dict(run["state"]["code_index"])


async def test_a_code_index_step_is_done_by_a_worker_from_the_servers_clone(tmp_path: Path, pg_url: str) -> None:
    source = new_repo(tmp_path / "poly", dict(POLYGLOT))
    data = tmp_path / "server"
    with server(tmp_path, pg_url) as (s, token):
        mint(data, pg_url, "pool", tmp_path / "cred")
        with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", "--server", s.url):
            workers_attached(pg_url, 1)
            async with RpcClient(s.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="code"))["id"]
                repo_id, clone = await register(c, data, ws, source)
                run_id = await start_index(c, ws, repo_id, clone, "index-1")
                found = code_report(await finished(c, ws, run_id))
                assert found["filesParsed"] >= 7 and found["repoId"] == repo_id
                greeter = (await c.call("code.definition", workspace_id=ws, name="Greeter"))["symbols"]
                assert [(g["path"], g["kind"]) for g in greeter] == [("app/greet.py", "class")]

                # A change pushed to the clone: the worker is sent only the new commits and parses what changed.
                commit_tree(source, {"app/base.py": "class Base:\n    def hello(self):\n        pass\n"})
                _git(source, "push", "-q", clone, "main")
                second = await start_index(c, ws, repo_id, clone, "index-2")
                again = code_report(await finished(c, ws, second))
                assert again["filesParsed"] == 1 and again["commitId"] == _git(source, "rev-parse", "HEAD")
                hello = (await c.call("code.definition", workspace_id=ws, name="Base.hello"))["symbols"]
                assert [h["path"] for h in hello] == ["app/base.py"]
    # Each try ran on the worker, handed over through the queue; the server indexed nothing itself.
    for run in (run_id, second):
        [(body_key, status, tries, history)] = sql(pg_url, QUEUE, run)
        assert (body_key, status, tries, history[0]["outcome"]) == ("code.index", "done", 1, "ok")
    mirror = tmp_path / "w1" / ws / "code-mirrors" / f"{repo_id}.git"
    assert _git(mirror, "rev-parse", "refs/hangar/indexed") == _git(source, "rev-parse", "HEAD")
    assert not (tmp_path / "server" / ws / "code-mirrors").exists()


async def test_a_worker_without_a_server_leaves_code_index_to_one_with_a_server(tmp_path: Path, pg_url: str) -> None:
    source = new_repo(tmp_path / "poly", {"a.py": "def a():\n    pass\n"})
    data = tmp_path / "server"
    both = {
        "id": "both",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {"id": "index", "kind": "listen", "body": "code.index", "trigger": {"sourceStepIds": ["start"]}},
            {
                "id": "sh",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "echo shell", "outputKey": "sh"},
            },
        ],
    }
    rows = "SELECT step_id, status, tries, history FROM hangar_server.pipeline_step_queue WHERE run_id = %s"

    def queue(run_id: str) -> dict[str, tuple[str, int, list[dict[str, Any]]]]:
        return {step: (status, tries, history) for step, status, tries, history in sql(pg_url, rows, run_id)}

    with server(tmp_path, pg_url) as (s, token):
        mint(data, pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="noserver"))["id"]
            repo_id, clone = await register(c, data, ws, source)
            await c.call("pipelines.templates.create", workspace_id=ws, template=both)
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log"):
                workers_attached(pg_url, 1)
                payload = {"repo_id": repo_id, "repo_local_path": clone}
                started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="both", payload=payload)
                run_id = str(started["runId"])
                # The worker without --server runs the shell step of the run and leaves code.index queued.
                wait_for(lambda: queue(run_id).get("sh", ("",))[0] == "done", "the shell step on the worker")
                time.sleep(2 * SAFETY_POLL_S)  # the worker's safety polls pass over the row too
                assert queue(run_id)["index"][:2] == ("queued", 0)
                run = await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
                assert run["status"] == "running"
                [index] = [step for step in run["steps"] if step["stepId"] == "index"]
                assert index["progress"] == {"waitingFor": WAITS_FOR_SERVER_WORKER}
            # A worker started with --server takes it and completes it.
            with hangar_worker(tmp_path / "w2", pg_url, tmp_path / "cred", tmp_path / "w2.log", "--server", s.url):
                done = await finished(c, ws, run_id)
    assert code_report(done)["repoId"] == repo_id
    taken = queue(run_id)
    assert taken["index"][:2] == ("done", 1) and taken["sh"][:2] == ("done", 1)
    assert taken["index"][2][0]["workerId"] != taken["sh"][2][0]["workerId"]
    assert (tmp_path / "w2" / ws / "code-mirrors" / f"{repo_id}.git").is_dir()


def ask_bundle(url: str, ws: str, bearer: str | None, try_key: str, body: str | dict[str, Any]) -> httpx.Response:
    headers = {TRY_KEY_HEADER: try_key} | ({"Authorization": f"Bearer {bearer}"} if bearer is not None else {})
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx.post(f"{url}{BUNDLE_PATH}{ws}", content=content, headers=headers, timeout=60)


async def test_the_bundle_route_answers_only_a_live_claim_of_its_workspace(tmp_path: Path, pg_url: str) -> None:
    source = new_repo(tmp_path / "poly", {"a.py": "def a():\n    pass\n"})
    head = _git(source, "rev-parse", "HEAD")
    data = tmp_path / "server"
    with server_and_worker(tmp_path, pg_url) as (s, token, cred, other):
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="lane"))["id"]
            elsewhere = (await c.call("workspaces.create", name="elsewhere"))["id"]
            repo_id, clone = await register(c, data, ws, source)
            # A step the worker holds while the test asks: its try is a live claim of the workspace.
            run_id = await start(c, ws, fan_out("hold", 1, "sleep 30; echo done"))
            live = f"pipeline:{run_id}/s0#1.1"
            wait_for(lambda: sql(pg_url, QUEUE, run_id) and sql(pg_url, QUEUE, run_id)[0][1] == "claimed", "claim")
            ask = {"repoId": repo_id, "localPath": clone}

            got = ask_bundle(s.url, ws, cred, live, ask)
            assert got.status_code == 200 and got.headers[COMMIT_HEADER] == head, got.text
            assert got.content.startswith(b"# v2 git bundle") and head.encode() in got.content
            assert ask_bundle(s.url, ws, cred, live, {**ask, "have": head}).status_code == 204
            # A branch rewound past what the worker has: the whole branch is sent.
            commit_tree(source, {"b.py": "def b():\n    pass\n"})
            newer = _git(source, "rev-parse", "HEAD")
            _git(source, "push", "-q", clone, "main")
            _git(Path(clone), "update-ref", "refs/heads/main", head)
            rewound = ask_bundle(s.url, ws, cred, live, {**ask, "have": newer})
            assert rewound.status_code == 200 and rewound.headers[COMMIT_HEADER] == head, rewound.text

            # Refused: no credential, a device credential, another live worker credential, a try not live,
            # another workspace, a key that is not a try's, a repo or a checkout not the workspace's.
            assert ask_bundle(s.url, ws, None, live, ask).status_code == 401
            assert ask_bundle(s.url, ws, token, live, ask).status_code == 401
            assert ask_bundle(s.url, ws, other, live, ask).status_code == 403
            assert ask_bundle(s.url, ws, cred, f"pipeline:{run_id}/s0#1.2", ask).status_code == 403
            assert ask_bundle(s.url, elsewhere, cred, live, ask).status_code == 403
            assert ask_bundle(s.url, ws, cred, "not a key", ask).status_code == 400
            assert ask_bundle(s.url, ws, cred, live, {**ask, "repoId": "nope"}).status_code == 400
            not_checkout = ask_bundle(s.url, ws, cred, live, {**ask, "localPath": "/etc"})
            assert not_checkout.status_code == 400 and "neither" in not_checkout.text
            assert ask_bundle(s.url, ws, cred, live, {**ask, "have": "../x"}).status_code == 400

            # The body's bound: at 4,096 bytes it is read, one past it is refused unread.
            base = json.dumps(ask)
            at = base[:-1] + " " * (BODY_MAX - len(base)) + "}"
            assert len(at) == BODY_MAX and ask_bundle(s.url, ws, cred, live, at).status_code == 200
            assert ask_bundle(s.url, ws, cred, live, at + " ").status_code == 413
            await c.call("pipelines.runs.cancel", workspace_id=ws, runId=run_id)


async def test_a_worker_killed_mid_index_leaves_it_to_another_that_finishes_it_once(
    tmp_path: Path, pg_url: str
) -> None:
    source = tmp_path / "hangar-src"
    shutil.copytree(Path(hangar.__file__).parent, source / "src" / "hangar", ignore=shutil.ignore_patterns("*.pyc"))
    _git(source, "init", "-q", "-b", "main")
    commit_tree(source, {}, "hangar")
    data = tmp_path / "server"

    def parsing(run_id: str) -> bool:
        rows = sql(pg_url, QUEUE, run_id)
        progress = rows[0][3][-1].get("progress") if rows and rows[0][3] else None
        return bool(progress) and progress.get("phase") == "parsing" and progress.get("files", 0) > 0

    with server(tmp_path, pg_url) as (s, token):
        mint(data, pg_url, "pool", tmp_path / "cred")
        async with RpcClient(s.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="killed"))["id"]
            repo_id, clone = await register(c, data, ws, source)
            cred = tmp_path / "cred"
            with hangar_worker(tmp_path / "w1", pg_url, cred, tmp_path / "w1.log", "--server", s.url) as w1:
                workers_attached(pg_url, 1)
                run_id = await start_index(c, ws, repo_id, clone, "index")
                wait_for(lambda: parsing(run_id), "the first worker to be parsing", timeout=180)
                kill9(w1)
            with hangar_worker(tmp_path / "w2", pg_url, cred, tmp_path / "w2.log", "--server", s.url):
                found = code_report(await finished(c, ws, run_id, timeout=600))
            assert found["filesParsed"] > 500 and found["skippedCount"] == 0
            # Once: one definition of each symbol, whatever the dead try had begun.
            hits = (await c.call("code.definition", workspace_id=ws, name="code_index"))["symbols"]
            assert [(h["path"], h["kind"]) for h in hits if h["kind"] == "function"] == [
                ("src/hangar/codegraph/body.py", "function")
            ]
            status = await c.call("code.status", workspace_id=ws)
    assert json.dumps(status).count(repo_id) >= 1
    [(_, state, tries, history)] = sql(pg_url, QUEUE, run_id)
    assert (state, tries) == ("done", 2)
    first, second = f"pipeline:{run_id}/index#1.1", f"pipeline:{run_id}/index#1.2"
    assert [(t["key"], t["outcome"]) for t in history] == [(first, "lapsed"), (second, "ok")]
    assert history[0]["progress"]["phase"] == "parsing"  # the dead try's progress stays for the next to see
