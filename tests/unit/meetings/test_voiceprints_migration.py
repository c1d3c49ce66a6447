"""Runs made before voiceprints were kept by the server held them in their state (``speaker_embeddings``), which
anyone who reads a run reads: upgrading the workspace database (revision mt0002) removes them from every run's
state, leaving the rest of it, and runs without them, as they were."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from hangar.core import tables as core_tables
from hangar.core.migrating import apply_migrations
from hangar.meetings import tables as meeting_tables
from hangar.pipelines import tables as pipeline_tables
from tests.unit.sso.test_scim_migration import upgrade_to

RUN = (
    "INSERT INTO pipeline_runs (id, template_id, template, status, trigger_kind, payload, state, dry_run, "
    "created_at, updated_at) VALUES (:id, 't', '{}', 'completed', 'manual', '{}', :state, 0, "
    "'2026-01-01 00:00:00', '2026-01-01 00:00:00')"
)


def test_voiceprints_leave_the_state_of_runs_made_before(tmp_path: Path) -> None:
    path = tmp_path / "workspace.db"
    apply_migrations(path, [core_tables.MIGRATIONS, pipeline_tables.MIGRATIONS])
    upgrade_to(path, meeting_tables.MIGRATIONS, "mt0001")
    spans = [{"start": 0.0, "end": 1.5, "speaker": "Person 1"}]
    diarised = {"meeting_id": "m1", "diarization_spans": spans, "speaker_embeddings": {"Person 1": [0.5] * 38}}
    other = {"meeting_id": "m2", "note": "speaker_embeddings said in passing"}
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(RUN), {"id": "r1", "state": json.dumps(diarised)})
            conn.execute(sa.text(RUN), {"id": "r2", "state": json.dumps(other)})
    finally:
        engine.dispose()

    apply_migrations(path, [core_tables.MIGRATIONS, pipeline_tables.MIGRATIONS, meeting_tables.MIGRATIONS])
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            states = dict(conn.execute(sa.text("SELECT id, state FROM pipeline_runs ORDER BY id")).all())
            assert sa.inspect(conn).has_table("meeting_voiceprints")
    finally:
        engine.dispose()
    assert json.loads(states["r1"]) == {"meeting_id": "m1", "diarization_spans": spans}
    assert json.loads(states["r2"]) == other


def test_a_new_database_without_runs_upgrades(tmp_path: Path) -> None:
    path = tmp_path / "workspace.db"
    apply_migrations(path, [core_tables.MIGRATIONS, meeting_tables.MIGRATIONS])  # no pipelines' table yet
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert sa.inspect(conn).has_table("meeting_voiceprints")
    finally:
        engine.dispose()
