"""A server database provisioned before SCIM records had integer keys (revision s0003) is upgraded in place: every
record and indexed value keeps its data, gets its key, and filters, writes and new records work as before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.script import ScriptDirectory

from hangar.core.clock import FakeClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.migrating import MigrationSet, apply_migrations
from hangar.identity import tables as identity_tables
from hangar.identity.service import IdentityService
from hangar.sso import config as sso_config
from hangar.sso.scim.filter import parse_filter
from hangar.sso.scim.index import index_rows
from hangar.sso.scim.match import bind, fold
from hangar.sso.scim.schema import user_schema
from hangar.sso.scim.store import ScimDirectory

BASE = "http://x/scim/v2"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def upgrade_to(path: Path, mset: MigrationSet, revision: str) -> None:
    engine = sa.create_engine(f"sqlite:///{path}")
    cfg = Config()
    cfg.set_main_option("script_location", str(mset.location))
    script = ScriptDirectory(str(mset.location))

    def upgrade(rev: Any, _context: Any) -> Any:
        return script._upgrade_revs(revision, rev)

    try:
        with (
            engine.begin() as conn,
            EnvironmentContext(cfg, script, fn=upgrade, destination_rev=revision) as env,
        ):
            env.configure(connection=conn, version_table=f"alembic_version_{mset.name}")
            with env.begin_transaction():
                env.run_migrations()
    finally:
        engine.dispose()


def old_database(path: Path) -> None:
    """Users and SCIM records as revision s0003 stored them: values keyed by user id only."""
    apply_migrations(path, [identity_tables.MIGRATIONS])
    upgrade_to(path, sso_config.MIGRATIONS, "s0003")
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            for i in range(30):
                uid, name = f"user-{i:02d}", f"person{i}@example.com"
                created = T0 + timedelta(hours=i)
                kind = "work" if i % 3 else "home"
                resource = {"userName": name, "active": True, "emails": [{"value": name, "type": kind}]}
                conn.execute(
                    sa.text(
                        "INSERT INTO users (id, email, display_name, created_at) VALUES (:id, :email, 'x', :created)"
                    ),
                    {"id": uid, "email": name, "created": created.replace(tzinfo=None)},
                )
                conn.execute(
                    sa.text(
                        "INSERT INTO scim_users (user_id, user_name, user_name_lc, resource, created_at, updated_at,"
                        " version) VALUES (:id, :name, :lc, :resource, :created, :created, 1)"
                    ),
                    {
                        "id": uid,
                        "name": name,
                        "lc": fold(name),
                        "resource": json.dumps(resource),
                        "created": created.replace(tzinfo=None),
                    },
                )
                for row in index_rows(user_schema(), uid, 0, resource):
                    del row["user_seq"]
                    conn.execute(
                        sa.text(
                            "INSERT INTO scim_values (user_id, path, elem, text, text_lc, num)"
                            " VALUES (:user_id, :path, :elem, :text, :text_lc, :num)"
                        ),
                        row,
                    )
    finally:
        engine.dispose()


async def test_records_from_before_integer_keys_are_upgraded(tmp_path: Path) -> None:
    datadir = DataDir(tmp_path).ensure()
    old_database(datadir.server_db)
    dbs = Databases(datadir, [identity_tables.MIGRATIONS, sso_config.MIGRATIONS])
    await dbs.open()
    try:
        async with dbs.server.connect() as conn:
            keys = (await conn.execute(sa.text("SELECT count(DISTINCT seq), count(seq) FROM scim_users"))).one()
            unkeyed = (await conn.execute(sa.text("SELECT count(*) FROM scim_values WHERE user_seq IS NULL"))).one()
        assert tuple(keys) == (30, 30) and unkeyed[0] == 0
        clock = FakeClock(T0 + timedelta(days=2))
        directory = ScimDirectory(dbs.server, IdentityService(dbs.server, clock), clock)

        async def ids(text: str) -> list[str]:
            total, page = await directory.search(bind(user_schema(), parse_filter(text)), 1, 100, BASE)
            assert total == len(page)
            return [r["id"] for r in page]

        homes = [f"user-{i:02d}" for i in range(0, 30, 3)]
        assert await ids('emails[type eq "home"]') == homes
        assert await ids('emails[type eq "home" and value sw "PERSON12@"]') == ["user-12"]
        assert await ids('userName eq "Person7@example.com"') == ["user-07"]
        # Writes after the upgrade keep the index in step, and a new record takes a fresh key.
        await directory.replace("user-12", {"userName": "person12@example.com", "emails": []}, BASE)
        created = await directory.create(
            {"userName": "late@example.com", "emails": [{"value": "late@example.com", "type": "home"}]}, BASE
        )
        assert await ids('emails[type eq "home"]') == [u for u in homes if u != "user-12"] + [created["id"]]
        async with dbs.server.connect() as conn:
            seqs = (await conn.execute(sa.text("SELECT count(DISTINCT seq), max(seq) FROM scim_users"))).one()
        assert tuple(seqs) == (31, 31)
    finally:
        await dbs.aclose()
