"""SCIM PATCH semantics (RFC 7644 §3.5.2): add, replace, remove, value paths, all or nothing, and the shapes
identity providers send (capitalised op names, path-less values keyed by paths, string booleans)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hangar.sso.scim.errors import ScimBadRequest
from hangar.sso.scim.patch import PATCH_URN, apply_patch
from hangar.sso.scim.resource import canonical
from hangar.sso.scim.schema import ENTERPRISE_URN, USER_URN, user_schema

USER: dict[str, Any] = {
    "schemas": [USER_URN],
    "id": "u1",
    "userName": "bjensen",
    "name": {"givenName": "Barbara", "familyName": "Jensen"},
    "active": True,
    "emails": [
        {"value": "bjensen@example.com", "type": "work", "primary": True},
        {"value": "babs@home.org", "type": "home"},
    ],
    "meta": {"resourceType": "User", "created": "2026-01-01T00:00:00Z"},
}


def patch(*ops: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"schemas": [PATCH_URN], "Operations": list(ops)}
    return canonical(user_schema(), apply_patch(user_schema(), resource or USER, body))


def refused(*ops: dict[str, Any], body: Any = None) -> ScimBadRequest:
    payload = body if body is not None else {"schemas": [PATCH_URN], "Operations": list(ops)}
    before = copy.deepcopy(USER)
    with pytest.raises(ScimBadRequest) as err:
        canonical(user_schema(), apply_patch(user_schema(), USER, payload))
    assert before == USER  # never modified in place
    return err.value


def test_replace_add_and_remove_simple_attributes() -> None:
    out = patch(
        {"op": "replace", "path": "userName", "value": "babs"},
        {"op": "add", "path": "title", "value": "Tour Guide"},
        {"op": "remove", "path": "name.familyName"},
    )
    assert out["userName"] == "babs" and out["title"] == "Tour Guide"
    assert out["name"] == {"givenName": "Barbara"}


def test_op_names_and_attribute_names_are_case_insensitive() -> None:
    out = patch(
        {"op": "Replace", "path": "NAME.GIVENNAME", "value": "Babs"}, {"op": "ADD", "path": "Title", "value": "x"}
    )
    assert out["name"]["givenName"] == "Babs" and out["title"] == "x"


def test_path_less_add_and_replace_take_objects_keyed_by_paths() -> None:
    out = patch(
        {"op": "replace", "value": {"active": "False", "name.familyName": "Smith", "displayName": "B. Smith"}},
        {"op": "add", "value": {ENTERPRISE_URN: {"employeeNumber": "42"}}},
        {"op": "add", "value": {f"{ENTERPRISE_URN}:department": "Tours"}},
    )
    assert out["active"] is False and out["name"] == {"givenName": "Barbara", "familyName": "Smith"}
    assert out["displayName"] == "B. Smith"
    assert out[ENTERPRISE_URN] == {"employeeNumber": "42", "department": "Tours"}


def test_complex_replace_keeps_unnamed_sub_attributes() -> None:
    out = patch({"op": "replace", "path": "name", "value": {"familyName": "Smith"}})
    assert out["name"] == {"givenName": "Barbara", "familyName": "Smith"}


def test_multi_valued_add_appends_without_duplicates_and_replace_overwrites() -> None:
    added = patch(
        {"op": "add", "path": "emails", "value": [{"value": "babs@home.org", "type": "home"}, {"value": "b@x.io"}]}
    )
    assert [e["value"] for e in added["emails"]] == ["bjensen@example.com", "babs@home.org", "b@x.io"]
    replaced = patch({"op": "replace", "path": "emails", "value": [{"value": "only@x.io", "type": "work"}]})
    assert replaced["emails"] == [{"value": "only@x.io", "type": "work"}]


def test_value_paths_with_filters() -> None:
    out = patch({"op": "replace", "path": 'emails[type eq "home"].value', "value": "babs@new.org"})
    assert out["emails"][1] == {"value": "babs@new.org", "type": "home"}
    out = patch({"op": "remove", "path": 'emails[type eq "home"]'})
    assert [e["type"] for e in out["emails"]] == ["work"]
    out = patch(
        {"op": "replace", "path": 'emails[value co "example.com"]', "value": {"value": "w@x.io", "type": "work"}}
    )
    assert out["emails"][0] == {"value": "w@x.io", "type": "work"}
    out = patch({"op": "remove", "path": 'emails[type eq "work"].primary'})
    assert "primary" not in out["emails"][0]


def test_filtered_add_creates_the_element_an_eq_filter_describes() -> None:
    out = patch(
        {"op": "add", "path": 'emails[type eq "other"].value', "value": "o@x.io"},
        {"op": "Add", "path": 'phoneNumbers[type eq "mobile"].value', "value": "+1 555"},
    )
    assert {"value": "o@x.io", "type": "other"} in out["emails"]
    assert out["phoneNumbers"] == [{"value": "+1 555", "type": "mobile"}]


def test_setting_primary_clears_it_elsewhere() -> None:
    out = patch({"op": "replace", "path": 'emails[type eq "home"].primary', "value": True})
    assert [e.get("primary") for e in out["emails"]] == [False, True]


def test_remove_values_from_a_multi_valued_attribute() -> None:
    out = patch({"op": "remove", "path": "emails", "value": [{"value": "babs@home.org"}]})
    assert [e["value"] for e in out["emails"]] == ["bjensen@example.com"]
    out = patch({"op": "remove", "path": "emails"})
    assert "emails" not in out


def test_all_or_nothing() -> None:
    err = refused(
        {"op": "replace", "path": "userName", "value": "changed"},
        {"op": "remove", "path": 'emails[type eq "fax"]'},
    )
    assert err.scim_type == "noTarget"


@pytest.mark.parametrize(
    ("ops", "scim_type", "words"),
    [
        ([{"op": "remove"}], "noTarget", "needs a path"),
        ([{"op": "replace", "path": 'emails[type eq "fax" or type eq "pager"].value', "value": "x"}], "noTarget", ""),
        ([{"op": "move", "path": "title", "value": "x"}], "invalidSyntax", "add, replace or remove"),
        ([{"path": "title", "value": "x"}], "invalidSyntax", "op"),
        ([{"op": "add", "path": "nickname2", "value": "x"}], "invalidPath", "not an attribute"),
        ([{"op": "add", "path": "emails[type eq", "value": "x"}], "invalidPath", ""),
        ([{"op": "add", "path": "name.middle", "value": "x"}], "invalidPath", "no sub-attribute"),
        ([{"op": "replace", "path": "id", "value": "x"}], "mutability", "read-only"),
        ([{"op": "replace", "path": "meta.created", "value": "x"}], "mutability", "read-only"),
        ([{"op": "add", "path": "groups", "value": [{"value": "g"}]}], "mutability", "read-only"),
        ([{"op": "remove", "path": "userName"}], "invalidValue", "required"),
        ([{"op": "replace", "path": "active", "value": "perhaps"}], "invalidValue", "boolean"),
        ([{"op": "replace", "path": "emails", "value": "not-an-object"}], "invalidValue", "object"),
        ([{"op": "replace", "path": "title", "value": ["a", "b"]}], "invalidValue", "single value"),
        ([{"op": "add", "path": "title"}], "invalidValue", "needs a value"),
        ([{"op": "add", "value": "not-an-object"}], "invalidValue", "object"),
        ([{"op": "add", "path": 'emails[kind eq "x"].value', "value": "v"}], "invalidFilter", "no sub-attribute"),
        (
            [
                {
                    "op": "replace",
                    "path": "emails",
                    "value": [{"value": "a", "primary": True}, {"value": "b", "primary": True}],
                }
            ],
            "invalidValue",
            "primary",
        ),
    ],
)
def test_refusals(ops: list[dict[str, Any]], scim_type: str, words: str) -> None:
    err = refused(*ops)
    assert err.scim_type == scim_type and words in err.message


@pytest.mark.parametrize(
    "body",
    [
        [],
        "x",
        {"schemas": [PATCH_URN]},
        {"schemas": [PATCH_URN], "Operations": []},
        {"schemas": ["urn:wrong"], "Operations": [{"op": "add", "path": "title", "value": "x"}]},
        {"schemas": [PATCH_URN], "Operations": ["add"]},
    ],
)
def test_malformed_bodies(body: Any) -> None:
    assert refused(body=body).scim_type == "invalidSyntax"


def test_canonical_form_of_payloads() -> None:
    out = canonical(
        user_schema(),
        {
            "schemas": [USER_URN],
            "id": "ignored",
            "meta": {"created": "ignored"},
            "password": "never stored",
            "USERNAME": "x",
            "Emails": [{"Value": "a@b.c", "TYPE": "work", "primary": "true", "unknownSub": 1}],
            "unknownAttribute": 5,
            "urn:example:unknown:extension": {"a": 1},
            ENTERPRISE_URN: {"EmployeeNumber": "7"},
        },
    )
    assert out == {
        "userName": "x",
        "emails": [{"value": "a@b.c", "type": "work", "primary": True}],
        ENTERPRISE_URN: {"employeeNumber": "7"},
    }
    with pytest.raises(ScimBadRequest) as err:
        canonical(user_schema(), {"userName": "x", "name": "flat"})
    assert err.value.scim_type == "invalidValue" and "name" in err.value.message
