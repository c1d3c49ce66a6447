"""SCIM over HTTP on the real server: authentication, Users CRUD with filters and pagination, PATCH as identity
providers send it, deactivation reaching the device credentials, soft delete, read-only groups, errors."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.sso.config import SsoConfigStore
from tests.peers.sso_parts import SSO_PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error"


@contextlib.asynccontextmanager
async def scim_server(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, httpx.AsyncClient]]:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv:
        token = srv.ctx.service(SsoConfigStore).regenerate_scim_token()
        headers = {"authorization": f"Bearer {token}", "content-type": "application/scim+json"}
        async with httpx.AsyncClient(base_url=f"{srv.url}/scim/v2", headers=headers) as http:
            yield srv, http


def scim_error(resp: httpx.Response, status: int, scim_type: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/scim+json")
    body: dict[str, Any] = resp.json()
    assert body["schemas"] == [ERROR_URN] and body["status"] == str(status) and body["detail"]
    assert body.get("scimType") == scim_type
    return body


async def create(http: httpx.AsyncClient, user_name: str, **extra: Any) -> dict[str, Any]:
    resp = await http.post(
        "/Users", json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name, **extra}
    )
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    assert resp.headers["location"] == body["meta"]["location"]
    return body


async def test_bearer_token_is_required_and_rotates(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        httpx.AsyncClient(base_url=f"{srv.url}/scim/v2") as http,
    ):
        none_saved = await http.get("/Users", headers={"authorization": "Bearer anything"})
        scim_error(none_saved, 401)
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            first = (await c.call("sso.scimRegenerateToken"))["token"]
            assert (await c.call("sso.status"))["scimTokenPresent"] is True
            second = (await c.call("sso.scimRegenerateToken"))["token"]
        missing = await http.get("/Users")
        assert scim_error(missing, 401)["detail"].startswith("send the SCIM token")
        assert missing.headers["www-authenticate"].startswith("Bearer")
        scim_error(await http.get("/Users", headers={"authorization": f"Bearer {first}"}), 401)
        scim_error(await http.get("/Users", headers={"authorization": f"Basic {second}"}), 401)
        # A device credential (even the server owner's) is not a SCIM token.
        scim_error(await http.get("/Users", headers={"authorization": f"Bearer {srv.owner_token}"}), 401)
        ok = await http.get("/Users", headers={"authorization": f"Bearer {second}"})
        assert ok.status_code == 200 and ok.json()["totalResults"] == 0


async def test_users_crud_filter_and_pagination(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (srv, http):
        made = [
            await create(
                http,
                f"user{i}@corp.example",
                name={"givenName": f"Given{i}", "familyName": "Smith" if i % 2 else "Jones"},
                emails=[{"value": f"user{i}@corp.example", "type": "work", "primary": True}],
                externalId=f"ext-{i}",
            )
            for i in range(7)
        ]
        one = made[3]
        assert one["active"] is True and one["meta"]["resourceType"] == "User" and one["meta"]["version"] == 'W/"1"'
        user = await srv.ctx.service(IdentityService).get_user(one["id"])
        assert user is not None and user.email == "user3@corp.example" and user.display_name == "Given3 Smith"
        got = await http.get(f"/Users/{one['id']}")
        assert got.status_code == 200 and got.json() == one and got.headers["etag"] == 'W/"1"'
        found = (await http.get("/Users", params={"filter": 'USERNAME eq "USER3@corp.example"'})).json()
        assert found["totalResults"] == 1 and found["Resources"][0]["id"] == one["id"]
        # A listing without attribute selection is joined from stored JSON: the same users as GET gives them.
        listed = await http.get("/Users")
        assert listed.headers["content-type"] == "application/scim+json"
        assert listed.json()["itemsPerPage"] == 7 and listed.json()["Resources"] == made
        smiths = (await http.get("/Users", params={"filter": 'name.familyName eq "smith"', "count": 2})).json()
        assert smiths["totalResults"] == 3 and smiths["itemsPerPage"] == 2 and smiths["startIndex"] == 1
        rest = (await http.get("/Users", params={"filter": 'name.familyName eq "smith"', "startIndex": 3})).json()
        assert [r["id"] for r in rest["Resources"]] == [made[5]["id"]]
        complex_filter = (
            'emails[type eq "work" and value sw "user6"] or (externalId eq "ext-0" and not (active eq false))'
        )
        both = (await http.get("/Users", params={"filter": complex_filter})).json()
        assert sorted(r["id"] for r in both["Resources"]) == sorted([made[0]["id"], made[6]["id"]])
        searched = await http.post(
            "/Users/.search", json={"filter": 'externalId eq "ext-2"', "attributes": ["userName"]}
        )
        assert searched.json()["Resources"] == [
            {"schemas": made[2]["schemas"], "id": made[2]["id"], "userName": "user2@corp.example"}
        ]
        enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
        seven = await create(http, "seven@corp.example", **{enterprise: {"employeeNumber": "7", "costCenter": "c"}})
        picked = await http.get(
            f"/Users/{seven['id']}", params={"attributes": f"{enterprise}:employeeNumber,name.givenName"}
        )
        assert picked.json() == {"schemas": seven["schemas"], "id": seven["id"], enterprise: {"employeeNumber": "7"}}
        dropped = (await http.get(f"/Users/{seven['id']}", params={"excludedAttributes": enterprise})).json()
        assert enterprise not in dropped and dropped["userName"] == "seven@corp.example"
        assert (await http.delete(f"/Users/{seven['id']}")).status_code == 204
        trimmed = (await http.get(f"/Users/{one['id']}", params={"excludedAttributes": "emails,name"})).json()
        assert "emails" not in trimmed and "name" not in trimmed and trimmed["id"] == one["id"]
        zero = (await http.get("/Users", params={"count": 0})).json()
        assert zero["totalResults"] == 7 and zero["Resources"] == []

        # Uniqueness is case-insensitive.
        clash = await http.post("/Users", json={"userName": "USER3@CORP.EXAMPLE"})
        scim_error(clash, 409, "uniqueness")

        # PUT replaces the representation and the server's copy of the name follows.
        put = await http.put(
            f"/Users/{one['id']}", json={"userName": "user3@corp.example", "displayName": "Three", "active": True}
        )
        assert put.status_code == 200 and put.json()["displayName"] == "Three" and "emails" not in put.json()
        assert put.json()["meta"]["version"] == 'W/"2"'
        assert (await srv.ctx.service(IdentityService).get_user(one["id"])).display_name == "Three"  # type: ignore[union-attr]
        scim_error(await http.put(f"/Users/{one['id']}", json={"id": "other", "userName": "x"}), 400, "mutability")
        scim_error(await http.put(f"/Users/{one['id']}", json={"displayName": "no name"}), 400, "invalidValue")


async def test_deactivation_reaches_device_credentials_and_delete_is_soft(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (srv, http):
        ws = await srv.new_workspace("Ops")
        made = await create(http, "dana@corp.example")
        await srv.ctx.service(IdentityService).add_member(ws, made["id"], Role.member)
        token = await srv.ctx.service(IdentityService).issue_device(made["id"], "laptop")
        async with RpcClient(srv.ws_url, token) as c:
            assert (await c.call("users.me"))["id"] == made["id"]
        # The shape one large identity provider sends: capitalised op, string boolean, no path.
        off = await http.patch(
            f"/Users/{made['id']}",
            json={"schemas": [PATCH_URN], "Operations": [{"op": "Replace", "value": {"active": "False"}}]},
        )
        assert off.status_code == 200 and off.json()["active"] is False
        user = await srv.ctx.service(IdentityService).get_user(made["id"])
        assert user is not None and user.deactivated_at is not None
        with pytest.raises((RpcError, ConnectionError, websockets.ConnectionClosed)):
            async with RpcClient(srv.ws_url, token) as c:
                await c.call("users.me")
        inactive = (await http.get("/Users", params={"filter": "active eq false"})).json()
        assert [r["id"] for r in inactive["Resources"]] == [made["id"]]
        on = await http.patch(
            f"/Users/{made['id']}",
            json={"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "active", "value": True}]},
        )
        assert on.json()["active"] is True
        assert (await srv.ctx.service(IdentityService).get_user(made["id"])).deactivated_at is None  # type: ignore[union-attr]

        gone = await http.delete(f"/Users/{made['id']}")
        assert gone.status_code == 204
        scim_error(await http.get(f"/Users/{made['id']}"), 404)
        scim_error(await http.delete(f"/Users/{made['id']}"), 404)
        user = await srv.ctx.service(IdentityService).get_user(made["id"])
        assert user is not None and user.deactivated_at is not None  # kept, deactivated
        assert (await http.get("/Users")).json()["totalResults"] == 0
        again = await create(http, "dana@corp.example")
        assert again["id"] != made["id"]


async def test_patch_is_all_or_nothing_over_http(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (_srv, http):
        made = await create(http, "erin@corp.example", emails=[{"value": "erin@corp.example", "type": "work"}])
        body = {
            "schemas": [PATCH_URN],
            "Operations": [
                {"op": "replace", "path": "displayName", "value": "Changed"},
                {"op": "remove", "path": 'emails[type eq "home"]'},
            ],
        }
        scim_error(await http.patch(f"/Users/{made['id']}", json=body), 400, "noTarget")
        after = (await http.get(f"/Users/{made['id']}")).json()
        assert "displayName" not in after and after["meta"]["version"] == 'W/"1"'
        filtered = {
            "schemas": [PATCH_URN],
            "Operations": [
                {"op": "add", "path": 'emails[type eq "home"].value', "value": "erin@home.example"},
                {"op": "replace", "path": 'emails[type eq "work"].primary', "value": True},
            ],
        }
        done = (await http.patch(f"/Users/{made['id']}", json=filtered)).json()
        assert {"value": "erin@home.example", "type": "home"} in done["emails"]
        scim_error(
            await http.patch(f"/Users/{made['id']}", json={"schemas": [PATCH_URN], "Operations": [{"op": "copy"}]}),
            400,
            "invalidSyntax",
        )


async def test_malformed_requests_get_scim_errors(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (_srv, http):
        scim_error(await http.post("/Users", content=b"{not json"), 400, "invalidSyntax")
        scim_error(await http.post("/Users", json=["a"]), 400, "invalidSyntax")
        scim_error(await http.post("/Users", json={"displayName": "no userName"}), 400, "invalidValue")
        scim_error(await http.post("/Users", json={"userName": "x", "active": "sometimes"}), 400, "invalidValue")
        scim_error(await http.post("/Users", json={"userName": "x", "emails": "x@y"}), 400, "invalidValue")
        scim_error(await http.get("/Users", params={"filter": 'userName eq "open'}), 400, "invalidFilter")
        scim_error(await http.get("/Users", params={"filter": "shoeSize gt 9"}), 400, "invalidFilter")
        scim_error(await http.get("/Users", params={"filter": "active gt true"}), 400, "invalidFilter")
        for only_in_memory in ("meta pr", 'meta.version eq "W/1"', 'groups.$ref eq "x"'):
            scim_error(await http.get("/Users", params={"filter": only_in_memory}), 400, "invalidFilter")
        scim_error(await http.get("/Users", params={"count": "many"}), 400, "invalidValue")
        scim_error(await http.get("/Users/no-such-id"), 404)
        scim_error(await http.get("/Bogus"), 404)
        scim_error(await http.post("/Schemas", json={}), 405)
        big = {"userName": "x", "displayName": "y" * (1024 * 1024)}
        scim_error(await http.post("/Users", json=big), 413)  # refused by its declared length, unread


async def test_groups_are_workspaces_and_read_only(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (srv, http):
        ws = await srv.new_workspace("Research")
        made = await create(http, "fay@corp.example")
        await srv.ctx.service(IdentityService).add_member(ws, made["id"], Role.member)
        groups = (await http.get("/Groups")).json()
        assert groups["totalResults"] == 1
        group = groups["Resources"][0]
        assert group["id"] == ws and group["displayName"] == "Research"
        assert [m["value"] for m in group["members"]] == [made["id"]]  # the server owner is not a SCIM user
        assert (await http.get(f"/Groups/{ws}")).json() == group
        # The user side of the same membership, read-only and filterable.
        fay = (await http.get(f"/Users/{made['id']}")).json()
        assert [(g["value"], g["display"], g["type"]) for g in fay["groups"]] == [(ws, "Research", "direct")]
        members = await http.get("/Users", params={"filter": 'groups[display eq "research"]'})
        assert [r["id"] for r in members.json()["Resources"]] == [made["id"]]
        scim_error(
            await http.patch(
                f"/Users/{made['id']}",
                json={
                    "schemas": [PATCH_URN],
                    "Operations": [{"op": "add", "path": "groups", "value": [{"value": ws}]}],
                },
            ),
            400,
            "mutability",
        )
        hit = await http.get("/Groups", params={"filter": f'members[value eq "{made["id"]}"]'})
        assert hit.json()["totalResults"] == 1
        scim_error(await http.post("/Groups", json={"displayName": "New"}), 501)
        scim_error(await http.patch(f"/Groups/{ws}", json={"schemas": [PATCH_URN], "Operations": []}), 501)
        scim_error(await http.put(f"/Groups/{ws}", json={"displayName": "x"}), 501)
        scim_error(await http.delete(f"/Groups/{ws}"), 501)
        scim_error(await http.get("/Groups/none"), 404)


async def test_existing_users_are_found_and_the_owner_is_not_exposed(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (srv, http):
        invited = await srv.ctx.service(IdentityService).create_user(email="gil@corp.example", display_name="Gil")
        found = (await http.get("/Users", params={"filter": 'userName eq "gil@corp.example"'})).json()
        assert found["totalResults"] == 1
        record = found["Resources"][0]
        assert record["id"] == invited.id and record["emails"] == [{"value": "gil@corp.example", "primary": True}]
        scim_error(await http.get(f"/Users/{srv.owner_id}"), 404)
        scim_error(await http.delete(f"/Users/{srv.owner_id}"), 404)
        assert (await http.get("/Users")).json()["totalResults"] == 1


async def test_discovery_documents(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (_srv, http):
        spc = (await http.get("/ServiceProviderConfig")).json()
        assert spc["patch"]["supported"] and spc["filter"]["supported"] and not spc["bulk"]["supported"]
        types = (await http.get("/ResourceTypes")).json()
        assert {t["id"] for t in types["Resources"]} == {"User", "Group"}
        schemas = (await http.get("/Schemas")).json()
        ids = {s["id"] for s in schemas["Resources"]}
        assert "urn:ietf:params:scim:schemas:core:2.0:User" in ids
        user_schema = (await http.get("/Schemas/urn:ietf:params:scim:schemas:core:2.0:User")).json()
        assert "password" not in {a["name"] for a in user_schema["attributes"]}


async def test_fuzzed_filters_and_patches_never_fail_inside(tmp_path: Path) -> None:
    """Random filters and PATCH operations built from the grammar's pieces: every answer is a result or a SCIM
    4xx error, never a 500."""
    rng = random.Random(5)
    paths = [
        "userName",
        "name.givenName",
        "emails",
        "emails.value",
        "emails.type",
        "active",
        "meta",
        "meta.created",
        "title",
        "groups",
        "groups.display",
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager",
        "x509Certificates.value",
        "id",
        "externalId",
        "bogus",
        "name",
        'emails[type eq "work"]',
    ]
    ops = ["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le", "pr", "xx"]
    values = ['"a"', "1", "true", "null", '"2026-01-01T00:00:00Z"', "", "(", ")", '"\\u00e9"']
    async with scim_server(tmp_path) as (_srv, http):
        made = await create(http, "fuzz@corp.example", emails=[{"value": "fuzz@corp.example", "type": "work"}])
        for _ in range(120):
            parts = [rng.choice(paths), rng.choice(ops), rng.choice(values)]
            joiner = rng.choice([" and ", " or ", " ", " and not ("])
            text = " ".join(parts) + (joiner + " ".join([rng.choice(paths), rng.choice(ops), rng.choice(values)]))
            resp = await http.get("/Users", params={"filter": text})
            assert resp.status_code in (200, 400), (text, resp.text)
        for _ in range(80):
            op = {"op": rng.choice(["add", "replace", "remove", "Remove", "bogus"])}
            if rng.random() < 0.8:
                op["path"] = rng.choice(paths)
            if rng.random() < 0.8:
                op["value"] = rng.choice(["x", 1, True, None, [], {}, [{"value": "v"}], {"givenName": "g"}])
            body = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [op]}
            resp = await http.patch(f"/Users/{made['id']}", json=body)
            assert resp.status_code in (200, 400, 409), (op, resp.text)


async def test_surrogates_deep_bodies_and_oversized_bodies_are_refused_not_internal(tmp_path: Path) -> None:
    async with scim_server(tmp_path) as (_srv, http):
        user = '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "a\\ud800b"}'
        scim_error(await http.post("/Users", content=user), 400, "invalidSyntax")
        deep = "[" * 5000 + "]" * 5000
        scim_error(await http.post("/Users", content=deep), 400, "invalidSyntax")
        huge = await http.post("/Users", content=b"{" + b" " * (2 * 1024 * 1024) + b"}")
        assert huge.status_code == 413
        assert (await http.get("/Users")).status_code == 200
