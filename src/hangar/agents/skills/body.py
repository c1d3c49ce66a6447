"""The ``skills.analyze`` pipeline body: the supply-chain scan over every skill the workspace has installed, each
verdict recorded (``pass``, ``review``, ``blocked``) with its findings. With no skill installed it completes with
nothing scanned. A skill removed or replaced while it was being scanned is left to its next scan."""

from __future__ import annotations

from typing import Any

from hangar.agents.skills.scan import analyze
from hangar.agents.skills.store import SkillStore
from hangar.pipelines import StepContext, StepResult, body

KEY = "skills.analyze"


@body(
    KEY,
    summary="Runs the supply-chain scan over the workspace's installed skills and records each verdict.",
)
async def skills_analyze(step: StepContext) -> StepResult:
    verdicts: list[dict[str, Any]] = []
    for skill in await SkillStore(step.app).all(step.workspace_id):
        done = await analyze(step.app, step.workspace_id, skill.id)
        if done is not None:
            verdicts.append(
                {"name": done.name, "digest": done.digest, "verdict": done.verdict, "findings": len(done.findings)}
            )
    counts = {v: sum(1 for d in verdicts if d["verdict"] == v) for v in ("pass", "review", "blocked")}
    # The output (under the node's ``outputKey``, when it has one): each skill's verdict and the counts.
    return StepResult.ok(output={"skills": verdicts, **counts})


BODIES = [skills_analyze]
