"""The pipelines part's server tables: the step queue workers take steps from, the worker credentials, and the
workers attached (schema in ``pipelines/server_migrations``). Only used on PostgreSQL (``hangar worker``); on
SQLite they stay empty.

pipeline_step_queue   one row per attempt of a step handed to workers: what the worker needs to run it, the
                      claim (worker, try, lease), every try's attempt key, and the result
worker_credentials    one row per credential an admin minted: its name, the hash of its secret, revocation
pipeline_workers      one row per ``hangar worker`` process: its credential, host and pid, when last seen
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.hostcreds import credential_table
from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

LEASE_S = 10.0  # a claim not extended for this long may be taken by another worker (``hangar.pipelines.worker``)

step_queue = sa.Table(
    "pipeline_step_queue",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("workspace_id", sa.String(36), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=False),
    sa.Column("step_id", sa.String(128), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),  # the engine's attempt of the step (``attempt_key``)
    sa.Column("body_key", sa.String(128), nullable=False),
    sa.Column("state", sa.JSON, nullable=False),  # the run's state when the step was handed over
    # Only a worker started with --server claims it (``BodySpec.needs_server_for``).
    sa.Column("needs_server", sa.Boolean, nullable=False, server_default=sa.false()),
    # queued, claimed (a worker runs it), done (result set), cancelled (the server gave up waiting)
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("worker_id", sa.String(36), nullable=True),  # the claim's holder (pipeline_workers.id)
    sa.Column("tries", sa.Integer, nullable=False),  # how many claims were made; the current one is this number
    sa.Column("lease_until", UtcDateTime(), nullable=True),
    # Every try: {key, workerId, credentialId, claimedAt, progress, outcome}; a try whose worker died keeps
    # outcome null (``lapsed`` once another takes the step).
    sa.Column("history", sa.JSON, nullable=False),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    sa.UniqueConstraint("workspace_id", "run_id", "step_id", "attempt", name="uq_step_queue_attempt"),
)

worker_credentials = credential_table("worker_credentials", metadata)

workers = sa.Table(
    "pipeline_workers",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("credential_id", sa.String(36), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("seen_at", UtcDateTime(), nullable=False),
)

SERVER_MIGRATIONS = MigrationSet(
    "pipelines_server", "server", Path(__file__).parent / "server_migrations", tables=(metadata,)
)
