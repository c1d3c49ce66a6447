"""A pull request review with the built-in template: 5 reviewer agents on a scripted model review a 2,000-line
diff; how long the whole run takes against the time the model itself was busy, and how well the findings merge.

One process holds the server (``running_server``, its RPC), the scripted OpenAI-compatible model (the tests'
``FakeOpenAI``; each answer stalls ``--model-seconds`` as a model thinks) and the GitHub API emulator serving the
pull request's files and taking the review. The model's own time is the union of the intervals in which at least
one model request was in flight; the time Hangar adds is the run's wall time (``pipelines.runs.start`` until the
run is completed) less that. The merge accuracy is the precision and recall over pairs of the labelled set
(``tests/unit/forges/review_labelled.py``).

Run: .venv/bin/python bench/bench_pr_review.py [--rounds 5] [--reviewers 5] [--lines 2000] [--model-seconds 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402
from tests.integration.test_forges_connect import APP_ID, trust_forge  # noqa: E402
from tests.integration.test_workspace_repos import _git, make_repo  # noqa: E402
from tests.peers.github_emulator import github_emulator  # noqa: E402
from tests.peers.github_reviews import added_file  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.runs import finished  # noqa: E402
from tests.support.server import running_server  # noqa: E402
from tests.unit.agents.fake_openai import FakeOpenAI, call, running_fake_openai  # noqa: E402
from tests.unit.forges.review_labelled import pair_scores  # noqa: E402

FILES = 20


class Timed:
    """ASGI middleware noting when each model request began and ended."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.spans: list[tuple[float, float]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        began = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.spans.append((began, time.perf_counter()))


class TimedModel(FakeOpenAI):
    """The scripted model behind the timing middleware."""

    timed: Timed

    def app(self) -> Any:
        self.timed = Timed(super().app())
        return self.timed


def busy(spans: list[tuple[float, float]]) -> float:
    """The length of the union of the intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _finding(file: str, line: int, severity: str, category: str, message: str) -> dict[str, Any]:
    return {"file": file, "line": line, "severity": severity, "category": category, "message": message,
            "suggestion": "Fix it"}  # fmt: skip


def reviewer_findings(n: int, lines: int) -> dict[str, Any]:
    """Reviewer ``n``'s findings: some every reviewer raises, some most, some one alone."""
    per_file = lines // FILES
    found = []
    for f in range(FILES):
        name = f"src/mod{f}.py"
        found.append(_finding(name, 5, "medium", "bug", f"Unchecked return value of read_config in mod{f}"))
        if n < 3:
            shell = "User input reaches the shell command unescaped"
            found.append(_finding(name, per_file // 2 + n, "high", "security", shell))
        found.append(_finding(name, 10 + 15 * n, "low", "style", f"Reviewer {n} prefers another name for v{f}"))
    return {"findings": found}


async def one_round(args: argparse.Namespace, tmp: Path) -> tuple[float, float, float, int, dict[str, float]]:
    fake = TimedModel()
    async with running_fake_openai(fake) as model, github_emulator() as gh, running_server(tmp / "data") as srv:
        await trust_forge(srv, gh.api_url)
        ws = await srv.new_workspace("bench")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            key = gh.add_app(APP_ID)
            gh.install(APP_ID, "acme", ["app"])
            await c.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
            src = make_repo(tmp / "src", "app")
            _git(src, "update-ref", "refs/pull/1/head", "feature")
            repo = await c.call("repos.register", workspace_id=ws, path=str(src))
            await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
            per_file = args.lines // FILES
            gh.add_pull("acme/app", 1, files=[added_file(f"src/mod{f}.py", 1, per_file) for f in range(FILES)])
            agents = []
            for n in range(args.reviewers):
                adapter = {"type": "openai", "baseUrl": model.url, "model": f"r{n}"}
                agents.append((await c.call("agents.create", workspace_id=ws, name=f"R{n}", adapter=adapter))["id"])
                model.script(
                    f"r{n}", call("submit_output", reviewer_findings(n, args.lines), stall_seconds=args.model_seconds)
                )
            made = await c.call("forge.reviewTemplate", workspace_id=ws, agentIds=agents)
            await c.call("pipelines.templates.create", workspace_id=ws, template=made["template"])
            state = {"repo_id": repo["id"], "repo_full_name": "acme/app", "pr_number": 1}
            began, cpu = time.perf_counter(), time.process_time()
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="pr-review", payload=state)
            done = await finished(c, ws, started["runId"], timeout=300)
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu
            assert done["status"] == "completed", done
            (review,) = gh.reviews.of("acme/app", 1)
            steps = {s["stepId"]: (s.get("durationMs") or 0) / 1000 for s in done["steps"]}
            return wall, busy(fake.timed.spans), cpu, len(review["comments"]), steps


async def main(args: argparse.Namespace) -> None:
    walls, models, added, cpus = [], [], [], []
    comments = 0
    per_step: dict[str, list[float]] = {}
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            wall, model, cpu, comments, steps = await one_round(args, Path(tmp))
        cpus.append(cpu)
        for sid, took in steps.items():
            per_step.setdefault(sid, []).append(took)
        walls.append(wall)
        models.append(model)
        added.append(wall - model)
        print(
            f"round {r + 1}: run {wall:.3f} s, model busy {model:.3f} s, Hangar {wall - model:.3f} s, CPU {cpu:.3f} s"
        )
    print("median step durations: " + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in per_step.items()))
    scores = pair_scores()
    print(
        f"{args.reviewers} reviewers, {args.lines}-line diff in {FILES} files, {comments} inline comments; "
        f"median run {statistics.median(walls):.3f} s, model {statistics.median(models):.3f} s, "
        f"time added by Hangar: median {statistics.median(added):.3f} s, max {max(added):.3f} s; "
        f"CPU of the process (server, model and emulator) median {statistics.median(cpus):.3f} s"
    )
    print(
        f"merge on the labelled set ({scores['cases']} pull requests, {scores['findings']} findings): "
        f"precision {scores['precision']:.2f}, recall {scores['recall']:.2f} over pairs "
        f"({scores['tp']} right merges, {scores['fp']} wrong, {scores['fn']} missed)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reviewers", type=int, default=5)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--model-seconds", type=float, default=0.5)
    asyncio.run(main(parser.parse_args()))
