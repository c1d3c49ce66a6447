"""The SCIM filter grammar (RFC 7644 §3.4.2.2): parsing, precedence, refusals, binding and evaluation."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.sso.scim.filter import (
    And,
    AttrPath,
    Compare,
    FilterSyntaxError,
    Not,
    Or,
    PatchPath,
    Present,
    ValuePath,
    parse_filter,
    parse_path,
)
from hangar.sso.scim.match import FilterSemanticError, bind, matches
from hangar.sso.scim.schema import ENTERPRISE_URN, USER_URN, user_schema

BJENSEN: dict[str, Any] = {
    "id": "2819c223-7f76-453a-919d-413861904646",
    "externalId": "bjensen",
    "userName": "Bjensen@Example.com",
    "name": {"familyName": "Jensen", "givenName": "Barbara", "formatted": "Ms. Barbara J Jensen III"},
    "displayName": "Babs Jensen",
    "title": "",
    "active": True,
    "emails": [
        {"value": "bjensen@example.com", "type": "work", "primary": True},
        {"value": "babs@jensen.org", "type": "home"},
    ],
    "phoneNumbers": [{"value": "555-555-8377", "type": "work"}],
    "meta": {"created": "2011-08-01T18:29:49.793Z", "lastModified": "2011-08-01T21:32:44.882Z"},
    ENTERPRISE_URN: {"employeeNumber": "701984", "manager": {"value": "26118915-6090-4610-87e4-49d8ca9f808d"}},
}


def u(attr: str, sub: str | None = None) -> AttrPath:
    return AttrPath(None, attr, sub)


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ('userName eq "bjensen"', Compare(u("userName"), "eq", "bjensen")),
        ("title pr", Present(u("title"))),
        ('name.familyName co "O\'Malley"', Compare(u("name", "familyName"), "co", "O'Malley")),
        ('userName EQ "a\\"b\\u00e9"', Compare(u("userName"), "eq", 'a"bé')),
        ("meta.version ne null", Compare(u("meta", "version"), "ne", None)),
        ("active eq TRUE", Compare(u("active"), "eq", True)),
        ("x gt -1.5e3", Compare(u("x"), "gt", -1500.0)),
        ("x le 42", Compare(u("x"), "le", 42)),
        (
            "a eq 1 or b eq 2 and c eq 3",
            Or(Compare(u("a"), "eq", 1), And(Compare(u("b"), "eq", 2), Compare(u("c"), "eq", 3))),
        ),
        (
            "(a eq 1 or b eq 2) and not (c pr)",
            And(Or(Compare(u("a"), "eq", 1), Compare(u("b"), "eq", 2)), Not(Present(u("c")))),
        ),
        (
            'emails[type eq "work" and value co "@example.com"]',
            ValuePath(u("emails"), And(Compare(u("type"), "eq", "work"), Compare(u("value"), "co", "@example.com"))),
        ),
        (
            f'{USER_URN}:name.givenName sw "B"',
            Compare(AttrPath(USER_URN, "name", "givenName"), "sw", "B"),
        ),
        (f'{ENTERPRISE_URN}:employeeNumber eq "1"', Compare(AttrPath(ENTERPRISE_URN, "employeeNumber"), "eq", "1")),
        ('a eq "x" AND NOT(b eq "y")', And(Compare(u("a"), "eq", "x"), Not(Compare(u("b"), "eq", "y")))),
    ],
)
def test_parses(text: str, tree: object) -> None:
    assert parse_filter(text) == tree


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("userName", "operator"),
        ('userName xx "a"', "unknown operator"),
        ("userName eq", "needs a value"),
        ("userName eq bjensen", "expected a string"),
        ('userName eq "open', "unexpected character"),
        ('(userName eq "a"', "expected ')'"),
        ('userName eq "a")', "unexpected ')'"),
        ('userName eq "a" and', "ends"),
        ('not userName eq "a"', "must be followed by '('"),
        ('emails[type eq "work"', "expected ']'"),
        ('emails[type eq "work" and x[y eq 1]]', "cannot nest"),
        ('name.given.family eq "x"', "not an attribute path"),
        ('eq eq "x"', "expected an attribute path"),
        ("a eq 01", "unexpected character"),
        ("(" * 60 + "a pr" + ")" * 60, "deeper"),
        ("a eq " + '"' + "x" * 5000 + '"', "longer"),
    ],
)
def test_refuses_with_a_message_saying_where(text: str, why: str) -> None:
    with pytest.raises(FilterSyntaxError) as err:
        parse_filter(text)
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('userName eq "bjensen@example.com"', True),  # case-insensitive value (caseExact false)
        ('USERNAME Eq "BJENSEN@EXAMPLE.COM"', True),  # case-insensitive names and operators
        ('externalId eq "BJENSEN"', False),  # externalId is caseExact
        ('externalId eq "bjensen"', True),
        ('name.familyName co "ens"', True),
        ('name.familyName sw "J" and name.givenName ew "ara"', True),
        ('not (name.familyName sw "J")', False),
        ("title pr", False),  # empty string counts as absent
        ("title eq null", True),
        ("displayName ne null", True),
        ('title ne "x"', True),  # an absent attribute is not equal
        ('emails co "jensen.org"', True),  # complex multi-valued: compares `value`
        ('emails.type eq "home"', True),
        ('emails.type ne "home"', False),  # ne is "no value equals"
        ('emails[type eq "work" and value ew "@example.com"]', True),
        ('emails[type eq "home" and value ew "@example.com"]', False),  # same element for both
        ('emails[not (type eq "work")]', True),
        ("emails[primary eq true]", True),
        ("emails pr", True),
        ("ims pr", False),
        ("active eq true", True),
        ('active eq "true"', True),
        ("active ne true", False),
        ('meta.lastModified gt "2011-08-01T20:00:00Z"', True),
        ('meta.lastModified lt "2011-08-01T20:00:00+01:00"', False),
        ('meta.created ge "2011-08-01T18:29:49.793Z"', True),
        ('userName gt "a" and userName lt "c"', True),
        (f'{ENTERPRISE_URN}:employeeNumber eq "701984"', True),
        (f'{ENTERPRISE_URN}:manager.value sw "2611"', True),
        (f'{USER_URN}:userName sw "bj"', True),
        ('userName eq "x" or (emails[type eq "home"] and not (title pr))', True),
    ],
)
def test_evaluates_against_a_user(text: str, expected: bool) -> None:
    assert matches(bind(user_schema(), parse_filter(text)), BJENSEN) is expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('nickname2 eq "x"', "not an attribute"),
        ('name.middle eq "x"', "no sub-attribute"),
        ('userName.first eq "x"', "no sub-attributes"),
        ('name eq "x"', "complex"),
        ("active gt true", "boolean"),
        ('active eq "maybe"', "boolean"),
        ("userName eq 5", "string"),
        ('meta.created co "2011"', "timestamp"),
        ('meta.created gt "yesterday"', "ISO 8601"),
        ("userName gt null", "null"),
        ('emails[kind eq "work"]', "no sub-attribute"),
        ('userName[value eq "x"]', "complex"),
        ('urn:example:unknown:2.0:User:x eq "y"', "not an attribute"),
    ],
)
def test_binding_refuses_filters_that_cannot_apply(text: str, why: str) -> None:
    with pytest.raises(FilterSemanticError) as err:
        bind(user_schema(), parse_filter(text))
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("userName", PatchPath(u("userName"))),
        ("name.givenName", PatchPath(u("name", "givenName"))),
        ('emails[type eq "work"]', PatchPath(u("emails"), Compare(u("type"), "eq", "work"))),
        ('emails[type eq "work"].value', PatchPath(u("emails"), Compare(u("type"), "eq", "work"), "value")),
        (
            'members[value eq "2819c223"]',
            PatchPath(u("members"), Compare(u("value"), "eq", "2819c223")),
        ),
        (f"{ENTERPRISE_URN}:manager.value", PatchPath(AttrPath(ENTERPRISE_URN, "manager", "value"))),
        (ENTERPRISE_URN, PatchPath(AttrPath(ENTERPRISE_URN.rsplit(":", 1)[0], "User"))),
    ],
)
def test_patch_paths(text: str, path: PatchPath) -> None:
    assert parse_path(text) == path


@pytest.mark.parametrize("text", ["", "emails[", 'emails[type eq "w"]value', "name.givenName[type eq 1]", "a b"])
def test_bad_patch_paths(text: str) -> None:
    with pytest.raises(FilterSyntaxError):
        parse_path(text)
