"""Bodies reach the engine through ``Part``: each part lists its own, the composition hands them to the pipelines
part; and the key one attempt of a step records its effects under travels in the step context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.config import Settings
from hangar.core.clock import FakeClock
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.pipelines import BodyRegistry, StepContext, StepDef, StepResult, attempt_keys_prefix, body, spec_of_body
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.part import BODIES, make_pipelines_part
from hangar.server.context_factory import open_context
from hangar.server.parts import all_parts, step_bodies


@body("test.handedOver", summary="A body another part contributes.")
async def handed_over(step: StepContext) -> StepResult:
    return StepResult.ok()


@body("shell.run", summary="A second body under a key the pipelines part already has.")
async def impostor(step: StepContext) -> StepResult:
    return StepResult.ok()


def _keys(bodies: Any) -> set[str]:
    return {spec_of_body(b).key for b in bodies}


def test_each_part_lists_its_own_bodies() -> None:
    by_part = {p.name: _keys(p.bodies) for p in all_parts()}
    assert by_part["pipelines"] == {"pipeline.trigger", "shell.run", "flow.router", "pipeline.subPipeline"}
    assert by_part["workspace"] == {"messaging.createSpace", "messaging.postMessage", "worktree.cleanup"}
    assert by_part["agents"] == {
        "conversation.promptAgent",
        "flow.forEach",
        "team.dispatch",
        "approval.gate",
        "orchestration.awaitApproval",
        "orchestration.markPhase",
        "orchestration.persistDeliverable",
        "skills.analyze",
    }
    assert by_part["meetings"] == {
        "meeting.diarize",
        "meeting.identifySpeakers",
        "meeting.updateTranscript",
        "meeting.assemblePlayback",
        "meeting.saveNotes",
        "meeting.addActionItems",
        "meeting.addDecisions",
    }
    # Every key once: the registry the reference pages and the command line build from them accepts them all.
    assert len(BodyRegistry(step_bodies(all_parts())).keys) == sum(len(keys) for keys in by_part.values())


async def test_the_engine_runs_the_bodies_the_composition_hands_over(tmp_path: Path) -> None:
    part = make_pipelines_part(bodies=[handed_over])
    assert _keys(part.bodies) == _keys(BODIES)  # the part declares only its own
    parts = [OVERSIGHT_PART, IDENTITY_PART, part]
    async with open_context(Settings(data_dir=tmp_path), clock=FakeClock(), parts=parts) as ctx:
        engine = ctx.service(PipelineEngine)
        assert "test.handedOver" in engine.bodies and "shell.run" in engine.bodies


def test_two_bodies_under_one_key_are_refused_when_composed() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        make_pipelines_part(bodies=[impostor])


def _step(run_id: str, step_id: str, attempt: int, state: dict[str, Any] | None = None) -> StepContext:
    async def progress(_data: Any) -> None:
        return None

    return StepContext(
        app=None,
        run_id=run_id,
        workspace_id="ws",
        template_id="t",
        parent_run_id=None,
        dry_run=False,
        payload={"who": "payload"},
        state=state or {},
        step=StepDef.model_validate({"id": step_id, "kind": "listen", "body": "pipeline.trigger"}),
        attempt=attempt,
        clock=FakeClock(),
        run_dir=Path("/nonexistent") / run_id,
        progress=progress,
    )


def test_the_attempt_key_names_run_step_and_attempt() -> None:
    first, again, retry = _step("r1", "s", 1), _step("r1", "s", 1), _step("r1", "s", 2)
    assert first.attempt_key == again.attempt_key == "pipeline:r1/s#1"
    assert retry.attempt_key != first.attempt_key
    assert first.run_key == "pipeline:r1"
    assert first.attempt_key.startswith(attempt_keys_prefix("r1"))
    assert not _step("r10", "s", 1).attempt_key.startswith(attempt_keys_prefix("r1"))


def test_render_with_extra_state_keys() -> None:
    step = _step("r1", "s", 1, state={"item": "state", "n": 2})
    assert step.render("{{item}} {{n}} {{who}}") == "state 2 payload"
    assert step.render("{{item}} {{n}} {{who}}", extra={"item": "x"}) == "x 2 payload"


def test_lookup_or_gives_a_value_that_is_there_however_falsy_and_the_default_only_when_absent() -> None:
    step = _step("r1", "s", 1, state={"zero": 0, "none": None, "empty": {}})
    assert step.lookup_or("zero", 7) == 0 and step.lookup_or("none", 7) is None and step.lookup_or("empty", 7) == {}
    assert step.lookup_or("who", 7) == "payload"  # the trigger payload counts as there
    assert step.lookup_or("absent", 7) == 7 and step.lookup_or("absent") is None


def test_a_body_needing_a_server_must_run_on_workers() -> None:
    async def reads_a_clone(step: StepContext) -> StepResult:
        return StepResult.ok()

    with pytest.raises(ValueError, match="needs_server is for a body that runs on workers"):
        body("test.needsServer", summary="Reads a server's files.", needs_server=True)(reads_a_clone)
    declared = body("test.needsServer", summary="Reads a server's files.", on_worker=True, needs_server=True)
    assert spec_of_body(declared(reads_a_clone)).needs_server_for(_step("r1", "s", 1)) is True


def test_a_shell_step_needs_a_server_only_when_it_names_repos() -> None:
    bodies = BodyRegistry(step_bodies(all_parts()))
    shell = bodies.get("shell.run")
    assert shell is not None
    plain, naming = _step("r1", "s", 1), _step("r1", "s", 1)
    naming.step = StepDef.model_validate(
        {"id": "s", "kind": "listen", "body": "shell.run", "config": {"script": "true", "repoIds": ["r"]}}
    )
    assert (shell.needs_server_for(plain), shell.needs_server_for(naming)) == (False, True)
    always = {spec.key for spec in bodies.specs if spec.needs_server is True}
    assert always == {"code.index", "meeting.diarize", "meeting.assemblePlayback"}
