"""Pipelines: templates of steps run by a durable scheduler.

The public surface other parts use: ``body`` (declare a body; list it in your ``Part(bodies=...)``),
``BodySpec``, ``ConfigField``, ``StepContext`` (its ``attempt_key`` keys what one attempt of a step did),
``StepResult``, ``Resume``/``TaskOutcome`` (what a resumed body sees), the ``TaskFinished`` and
``PipelineRunFinished`` events, ``STEP_ERRORS_KEY`` (the state key holding the errors of the steps that failed
with ``continueOnFail``, by step id), ``run_key``/``attempt_keys_prefix`` (to find what a run's steps did), and the
``outputSchema`` checks (``schema_problems``, ``first_violation``) agents share so both accept the same payloads,
``ShellEnvironment``/``ShellVariables`` (what a part adds to shell steps' environment, a forge token for one;
``RepoCredentials``: a ``CredentialSource``'s for the step's ``repoIds``),
the ``pullRequest`` trigger's contract (``PULL_REQUEST_TRIGGER``, the event the forges part publishes for it and
the state keys its runs get), ``attempts_in_queue`` (which step attempts the worker queue still holds open, on
PostgreSQL; ``live_claim``, ``parse_try_key``, ``verify_worker_credential`` and ``WorkerCredential``: whether a
worker holds the claim of a try; ``LEASE_S``, a claim's lease; ``ServerLane``, ``lane_of`` and ``claim_of``: the
lane a worker reaches a server's files through, ``hangar.pipelines.worker_lane``), and ``PipelineEngine`` (to
start a run of a built-in template a part builds, ``load_template`` then ``start_run``, and read it with
``snapshot``), and ``DRY_RUN_KEY`` (where a body that honours dry runs says what it would have done).
"""

from hangar.pipelines._algo import DRY_RUN_KEY, STEP_ERRORS_KEY
from hangar.pipelines.bodies.shell import RepoCredentials, ShellEnvironment, ShellVariables
from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec, ConfigField, body, spec_of_body
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.events import PipelineRunFinished, TaskFinished
from hangar.pipelines.model import NodeConfig, RunStatus, StepDef, StepKind, StepStatus, Template
from hangar.pipelines.pull_requests import PULL_REQUEST_EVENT, PULL_REQUEST_STATE_KEYS, PULL_REQUEST_TRIGGER
from hangar.pipelines.queue_attempts import attempts_in_queue, live_claim, parse_try_key
from hangar.pipelines.queue_tables import LEASE_S
from hangar.pipelines.schema import check_schema as schema_problems
from hangar.pipelines.schema import first_violation
from hangar.pipelines.step import (
    APPROVAL_PROGRESS_KEY,
    READ_ONLY_WORKTREE,
    ChildRuns,
    Resume,
    ResumedEvent,
    StepContext,
    TaskOutcome,
    attempt_keys_prefix,
    extra_count,
    run_key,
)
from hangar.pipelines.step_results import NO_OUTPUT, StepResult
from hangar.pipelines.worker_lane import TRY_KEY_HEADER, ServerLane, claim_of, lane_of
from hangar.pipelines.workercreds import WorkerCredential
from hangar.pipelines.workercreds import verify as verify_worker_credential

__all__ = [
    "APPROVAL_PROGRESS_KEY",
    "DRY_RUN_KEY",
    "LEASE_S",
    "NO_OUTPUT",
    "PULL_REQUEST_EVENT",
    "PULL_REQUEST_STATE_KEYS",
    "PULL_REQUEST_TRIGGER",
    "READ_ONLY_WORKTREE",
    "STEP_ERRORS_KEY",
    "TRY_KEY_HEADER",
    "BodyRegistry",
    "BodySpec",
    "ChildRuns",
    "ConfigField",
    "NodeConfig",
    "PipelineEngine",
    "PipelineRunFinished",
    "RepoCredentials",
    "Resume",
    "ResumedEvent",
    "RunStatus",
    "ServerLane",
    "ShellEnvironment",
    "ShellVariables",
    "StepContext",
    "StepDef",
    "StepKind",
    "StepResult",
    "StepStatus",
    "TaskFinished",
    "TaskOutcome",
    "Template",
    "WorkerCredential",
    "attempt_keys_prefix",
    "attempts_in_queue",
    "body",
    "claim_of",
    "extra_count",
    "first_violation",
    "lane_of",
    "live_claim",
    "parse_try_key",
    "run_key",
    "schema_problems",
    "spec_of_body",
    "verify_worker_credential",
]
