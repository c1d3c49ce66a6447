"""Dev-domain names: what ``validate_domain`` accepts and how it says what is wrong (naming the field)."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.devdomains.names import validate_domain


@pytest.mark.parametrize(
    "name", ["app.test", "my-app.localhost", "api.app.test", "a1.b2.c3.test", "x" * 63 + ".test", "0.test"]
)
def test_accepted(name: str) -> None:
    assert validate_domain(name) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "required"),
        ("App.test", "lower case: use 'app.test'"),
        ("app.com", "name.test or name.localhost"),
        ("test", "name.test or name.localhost"),
        ("localhost", "name.test or name.localhost"),
        ("app.test.", "name.test or name.localhost"),
        ("app..test", "not a host name label"),
        ("-app.test", "not a host name label"),
        ("app-.test", "not a host name label"),
        ("app_1.test", "not a host name label"),
        ("*.test", "not a host name label"),
        ("x" * 64 + ".test", "longer than 63"),
        (("a" * 60 + ".") * 5 + "test", "at most 253"),
    ],
)
def test_refused_naming_the_field(name: str, why: str) -> None:
    with pytest.raises(InvalidArgs) as e:
        validate_domain(name, field="domain")
    assert e.value.field == "domain" and e.value.message.startswith("domain") and why in e.value.message
