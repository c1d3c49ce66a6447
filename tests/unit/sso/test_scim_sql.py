"""The SQL translation of SCIM filters agrees with the in-memory evaluator, user by user, on generated data."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hangar.core.clock import FakeClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.principal import Role
from hangar.identity import tables as identity_tables
from hangar.identity.service import IdentityService
from hangar.sso import config as sso_config
from hangar.sso.scim import store
from hangar.sso.scim.filter import parse_filter
from hangar.sso.scim.match import bind, fold, matches
from hangar.sso.scim.routes import ScimResponse, list_response, list_response_json
from hangar.sso.scim.schema import ENTERPRISE_URN, user_schema
from hangar.sso.scim.store import ScimDirectory, insert_records, reindex
from tests.support.dialects import DIALECTS, database_url

BASE = "http://x/scim/v2"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["alpha", "Beta", "gamma", "DELTA", "epsilon", "zeta", "Éclair", "o'hara"]


def make_user(rng: random.Random, i: int) -> tuple[dict[str, Any], bool, datetime]:
    first, last = rng.choice(WORDS), rng.choice(WORDS)
    resource: dict[str, Any] = {"userName": f"{first}.{last}{i}@Example.com", "active": True}
    if rng.random() < 0.8:
        resource["name"] = {"givenName": first, "familyName": last}
    if rng.random() < 0.7:
        resource["displayName"] = f"{first} {last}"
    if rng.random() < 0.5:
        resource["title"] = rng.choice(["", "Engineer", "engineering lead", "CEO"])
    emails = []
    for kind in rng.sample(["work", "home", "other"], rng.randint(0, 3)):
        email: dict[str, Any] = {"value": f"{first}{i}@{kind}.example.org", "type": kind}
        if kind == "work":
            email["primary"] = True
        emails.append(email)
    if emails:
        resource["emails"] = emails
    if rng.random() < 0.5:
        resource["externalId"] = rng.choice(["ext-A", "ext-a", f"ext-{i}"])
    if rng.random() < 0.5:
        resource[ENTERPRISE_URN] = {"employeeNumber": str(rng.randint(1, 5)), "department": rng.choice(WORDS)}
    return resource, rng.random() < 0.25, T0 + timedelta(hours=i)


@pytest.fixture(params=[(way, dialect) for way in ("sorted", "walked", "listed") for dialect in DIALECTS])
async def directory(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ScimDirectory]:
    """The same users under each way a page is read: few matches found by the filter's index and sorted; many,
    the listing order walked with per-user probes; many on a deep page, the listing order walked with lists;
    each on SQLite and on PostgreSQL (the filters compile to each one's SQL)."""
    way, dialect = request.param
    if way != "sorted":
        monkeypatch.setattr(store, "SORT_IN_MEMORY_BELOW", -1)
        monkeypatch.setattr(store, "WALK_BUDGET", 10**9 if way == "walked" else -1)
    datadir = DataDir(tmp_path).ensure()
    dbs = Databases(
        datadir, [identity_tables.MIGRATIONS, sso_config.MIGRATIONS], postgresql=database_url(dialect, request)
    )
    await dbs.open()
    rng = random.Random(7)
    async with dbs.server.begin() as conn:
        for i in range(80):
            resource, deactivated, created = make_user(rng, i)
            uid = f"user-{i:03d}"
            await conn.execute(
                sa.insert(identity_tables.users).values(
                    id=uid,
                    email=None,
                    display_name="x",
                    created_at=created,
                    deactivated_at=created if deactivated else None,
                )
            )
            record = {
                "user_id": uid,
                "user_name": resource["userName"],
                "user_name_lc": fold(resource["userName"]),
                "external_id": resource.get("externalId"),
                "resource": resource,
                "created_at": created,
                "updated_at": created + timedelta(minutes=i % 7),
                "version": 1,
            }
            await insert_records(conn, [record])
            await reindex(conn, uid, resource)
        for w, name in enumerate(["Research", "ops", "Design team"]):
            await conn.execute(
                sa.insert(identity_tables.workspaces).values(
                    id=f"ws-{w}", name=name, created_at=T0, created_by="user-000"
                )
            )
        for i in range(80):
            for w in range(3):
                if rng.random() < 0.3:
                    await conn.execute(
                        sa.insert(identity_tables.memberships).values(
                            workspace_id=f"ws-{w}", user_id=f"user-{i:03d}", role="member", created_at=T0
                        )
                    )
    yield ScimDirectory(dbs.server, IdentityService(dbs.server, FakeClock()), FakeClock())
    await dbs.aclose()


FILTERS = [
    'userName eq "alpha.beta3@example.com"',
    'userName co "ALPHA"',
    'userName sw "beta." and userName ew ".COM"',
    'userName gt "delta" and userName le "gamma"',
    'userName ne "alpha.alpha0@example.com"',
    'externalId eq "ext-a"',
    'externalId eq "EXT-A"',
    "externalId pr",
    "not (externalId pr)",
    "externalId eq null",
    "title pr",
    'title eq ""',
    "title eq null",
    'title co "eng"',
    'title ne "CEO"',
    "displayName pr and name.givenName pr",
    'name.familyName eq "delta"',
    'name.givenName co "\'"',
    'name.givenName sw "é"',
    'name.givenName sw "É"',
    "emails pr",
    "not (emails pr)",
    'emails co "@work."',
    'emails.type eq "home"',
    'emails.type ne "home"',
    "emails.value eq null",
    'emails[type eq "work" and value sw "alpha"]',
    'emails[type eq "work" and primary eq true]',
    'emails[primary eq true and type sw "W" and type pr]',
    'emails[type eq "home" or primary eq true]',
    'emails[not (type eq "work")]',
    "emails[primary pr]",
    "active eq true",
    "active eq false",
    "active ne false",
    "active pr",
    f'{ENTERPRISE_URN}:employeeNumber eq "3"',
    f'{ENTERPRISE_URN}:employeeNumber ge "4"',
    f'{ENTERPRISE_URN}:department sw "E"',
    f"{ENTERPRISE_URN}:department pr",
    'meta.created gt "2026-01-02T00:00:00Z"',
    'meta.created le "2026-01-01T05:00:00Z" or meta.lastModified ge "2026-01-04T00:03:00Z"',
    'meta.resourceType eq "user"',
    'id eq "user-007"',
    'id sw "user-00"',
    '(userName co "a" or title pr) and not (emails[type eq "other"])',
    'not (not (active eq true) or userName co "zeta")',
    'name[givenName sw "a" and familyName pr]',
    'name[not (givenName eq "beta")]',
    'name[familyName ew "A"]',
    "groups pr",
    "not (groups pr)",
    'groups eq "WS-1"',
    'groups.value ne "ws-1"',
    'groups.display sw "de"',
    'groups[value eq "ws-0" or display co "TEAM"]',
    'groups[not (display eq "ops")]',
    'groups.type eq "direct" and emails pr',
]


async def _all(directory: ScimDirectory) -> list[dict[str, Any]]:
    total, page = await directory.search(None, 1, 1000, BASE)
    assert total == len(page) == 80
    return page


async def _ids(directory: ScimDirectory, text: str) -> list[str]:
    total, page = await directory.search(bind(user_schema(), parse_filter(text)), 1, 1000, BASE)
    assert total == len(page)
    return [r["id"] for r in page]


async def test_sql_agrees_with_memory(directory: ScimDirectory) -> None:
    everyone = await _all(directory)
    for text in FILTERS:
        bound = bind(user_schema(), parse_filter(text))
        expected = [r["id"] for r in everyone if matches(bound, r)]
        assert await _ids(directory, text) == expected, text
    # The cases are not vacuous: most filters select some users and leave out others.
    sizes = [len(await _ids(directory, text)) for text in FILTERS]
    assert sum(1 for n in sizes if 0 < n < 80) >= len(FILTERS) * 3 // 4


def _inner(rng: random.Random, depth: int = 0) -> str:
    """A random value filter over one email: and/or/not of conditions on its sub-attributes."""
    leaves = [
        lambda: f'type {rng.choice(["eq", "ne"])} "{rng.choice(["work", "home", "other"])}"',
        lambda: (
            f'value {rng.choice(["co", "sw", "ew", "eq", "ne", "gt"])} "{rng.choice(["alpha", "home", "org", "1@"])}"'
        ),
        lambda: f"primary {rng.choice(['eq', 'ne'])} {rng.choice(['true', 'false'])}",
        lambda: f"{rng.choice(['primary', 'display', 'type'])} pr",
        lambda: f"{rng.choice(['primary', 'display'])} eq null",
    ]
    if depth >= 2 or rng.random() < 0.35:
        return rng.choice(leaves)()
    shape = rng.choice(["and", "and", "or", "not"])
    if shape == "not":
        return f"not ({_inner(rng, depth + 1)})"
    return f"({_inner(rng, depth + 1)}) {shape} ({_inner(rng, depth + 1)})"


def _random_filter(rng: random.Random, depth: int = 0) -> str:
    leaves = [
        lambda: f'userName {rng.choice(["eq", "co", "sw", "ew", "ne", "gt", "lt"])} "{rng.choice(WORDS).lower()[:3]}"',
        lambda: f'title {rng.choice(["eq", "co", "ne"])} "{rng.choice(["", "eng", "CEO"])}"',
        lambda: f"{rng.choice(['title', 'externalId', 'emails', 'name.givenName', 'displayName'])} pr",
        lambda: f"active {rng.choice(['eq', 'ne'])} {rng.choice(['true', 'false'])}",
        lambda: f'emails[type eq "{rng.choice(["work", "home", "other"])}"]',
        lambda: f"emails[{_inner(rng)}]",
        lambda: (
            f"groups{rng.choice(['.value', '.display', ''])} {rng.choice(['eq', 'ne', 'co'])}"
            f' "{rng.choice(["ws-1", "ops", "e"])}"'
        ),
        lambda: (
            f'groups[{rng.choice(["", "not "])}(display {rng.choice(["sw", "ew"])} "{rng.choice(["R", "m", "s"])}")]'
        ),
        lambda: f'emails.value {rng.choice(["co", "ew", "ne"])} "{rng.choice(["home", "org", "1@"])}"',
        lambda: f'externalId {rng.choice(["eq", "ne"])} "{rng.choice(["ext-a", "ext-A", "ext-5"])}"',
        lambda: f'{ENTERPRISE_URN}:employeeNumber {rng.choice(["gt", "le", "eq"])} "{rng.randint(1, 5)}"',
    ]
    if depth >= 3 or rng.random() < 0.4:
        return rng.choice(leaves)()
    shape = rng.choice(["and", "or", "not"])
    if shape == "not":
        return f"not ({_random_filter(rng, depth + 1)})"
    return f"({_random_filter(rng, depth + 1)}) {shape} ({_random_filter(rng, depth + 1)})"


async def test_random_filters_agree(directory: ScimDirectory) -> None:
    everyone = await _all(directory)
    rng = random.Random(11)
    for _ in range(250):
        text = _random_filter(rng)
        bound = bind(user_schema(), parse_filter(text))
        expected = [r["id"] for r in everyone if matches(bound, r)]
        assert await _ids(directory, text) == expected, text


async def test_pagination(directory: ScimDirectory) -> None:
    bound = bind(user_schema(), parse_filter('userName co "a"'))
    total, first = await directory.search(bound, 1, 10, BASE)
    _, second = await directory.search(bound, 11, 10, BASE)
    _, everything = await directory.search(bound, 1, 1000, BASE)
    assert total == len(everything) > 20
    assert [r["id"] for r in first + second] == [r["id"] for r in everything[:20]]
    beyond_total, beyond = await directory.search(bound, total + 5, 10, BASE)
    assert beyond == [] and beyond_total == total
    count_only, none = await directory.search(bound, 1, 0, BASE)
    assert none == [] and count_only == total


async def test_each_way_of_reading_a_page_is_taken(directory: ScimDirectory, request: pytest.FixtureRequest) -> None:
    """The agreement tests above run under every page strategy: check the fixture really selects each one."""
    way, dialect = request.node.callspec.params["directory"]
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = directory._db.sync_engine
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        await _ids(directory, 'emails[type eq "work" and value sw "a"] or title pr')
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    page = statements[-1]
    assert "LIMIT" in page
    # The unary plus keeps SQLite off the listing index; PostgreSQL plans from statistics and orders plainly.
    assert ("+scim_users.created_at" in page) == (way == "sorted" and dialect == "sqlite")
    assert ("EXISTS" in page) == (way == "walked")


def _expected(
    uid: str, resource: dict[str, Any], active: bool, groups: list[str], created: datetime, version: int = 1
) -> dict[str, Any]:
    """A User as RFC 7643 shows it, built here from what the fixture stored (not by the code under test)."""
    out: dict[str, Any] = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]
        + ([ENTERPRISE_URN] if ENTERPRISE_URN in resource else []),
        "id": uid,
        **{k: v for k, v in resource.items() if k != "active"},
        "active": active,
    }
    if groups:
        out["groups"] = [
            {"value": ws, "display": name, "type": "direct", "$ref": f"{BASE}/Groups/{ws}"}
            for ws, name in sorted(groups)
        ]
    out["meta"] = {
        "resourceType": "User",
        "created": created.isoformat().replace("+00:00", "Z"),
        "lastModified": ANY_TIME,
        "location": f"{BASE}/Users/{uid}",
        "version": f'W/"{version}"',
    }
    return out


class _AnyTime:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.endswith("Z") and datetime.fromisoformat(other[:-1]) is not None


ANY_TIME = _AnyTime()


async def test_listed_users_show_what_is_stored_and_memberships_as_they_are_now(tmp_path: Path) -> None:
    """Listing joins each record's stored JSON with what changes without SCIM writing it: deactivation and
    workspace membership by identity show at once; a SCIM write re-renders the record."""
    dbs = Databases(DataDir(tmp_path).ensure(), [identity_tables.MIGRATIONS, sso_config.MIGRATIONS])
    await dbs.open()
    try:
        clock = FakeClock(T0)
        identity = IdentityService(dbs.server, clock)
        directory = ScimDirectory(dbs.server, identity, clock)
        rng = random.Random(3)
        made: dict[str, tuple[dict[str, Any], datetime]] = {}
        for i in range(12):
            resource, _, _ = make_user(rng, i)
            resource["name"] = {"givenName": "Zoë", "familyName": 'O"Hara\\x'}
            created = await directory.create(dict(resource), BASE)
            made[created["id"]] = (resource, clock.now())
            clock.advance(60)
        ids = list(made)
        ws_a = await identity.create_workspace("Research ☃", ids[0])
        ws_b = await identity.create_workspace("ops", ids[1])
        await identity.add_member(ws_a.id, ids[2], Role.member)
        await identity.add_member(ws_b.id, ids[2], Role.member)
        await identity.deactivate_user(ids[3])

        def expected(uid: str, version: int = 1) -> dict[str, Any]:
            groups = [(ws_a.id, ws_a.name)] * (uid in (ids[0], ids[2])) + [(ws_b.id, ws_b.name)] * (
                uid in (ids[1], ids[2])
            )
            resource, created = made[uid]
            active = uid != ids[3] and resource.get("active", True) is not False
            return _expected(uid, resource, active, groups, created, version)

        total, page = await directory.search(None, 1, 100, BASE)
        assert total == 12 and page == [expected(uid) for uid in ids]
        assert [await directory.get(uid, BASE) for uid in ids] == page
        # The route's joined JSON is what encoding the same page as dictionaries gives, byte for byte.
        total, texts = await directory.search_json(None, 1, 100, BASE)
        assert list_response_json(total, 1, texts) == ScimResponse(list_response(total, 1, page)).body

        await identity.remove_member(ws_a.id, ids[2])
        await identity.reactivate_user(ids[3])
        made[ids[4]] = ({**made[ids[4]][0], "title": "Night shift"}, made[ids[4]][1])
        await directory.replace(ids[4], made[ids[4]][0], BASE)
        _, page = await directory.search(None, 1, 100, BASE)
        by_id = {r["id"]: r for r in page}
        assert by_id[ids[2]]["groups"] == [
            {"value": ws_b.id, "display": "ops", "type": "direct", "$ref": f"{BASE}/Groups/{ws_b.id}"}
        ]
        assert by_id[ids[3]]["active"] is True
        assert by_id[ids[4]] == expected(ids[4], version=2) and by_id[ids[4]]["title"] == "Night shift"
    finally:
        await dbs.aclose()
