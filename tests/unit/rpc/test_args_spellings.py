"""The arguments convention: camelCase on the wire, snake_case accepted, and errors naming the field as sent."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from hangar.errors import InvalidArgs
from hangar.rpc.dispatcher import invalid_args
from hangar.rpc.registry import Args, spellings


class Post(Args):
    space_id: str
    reply_to: str | None = None
    maxTurns: int = 1  # declared camelCase in Python, as some models still are
    rig_id: str = Field("r0", alias="rigId")  # declared with its own alias
    limit: int = 10


def error(model: type[BaseModel], given: dict[str, Any]) -> InvalidArgs:
    with pytest.raises(ValidationError) as info:
        model.model_validate(given)
    return invalid_args(info.value, model, given)


@pytest.mark.parametrize(
    "given",
    [
        {"spaceId": "s", "replyTo": "m", "maxTurns": 2, "rigId": "r"},
        {"space_id": "s", "reply_to": "m", "max_turns": 2, "rig_id": "r"},
        {"spaceId": "s", "reply_to": "m", "max_turns": 2, "rigId": "r"},
    ],
)
def test_both_spellings_are_accepted(given: dict[str, Any]) -> None:
    got = Post.model_validate(given)
    assert (got.space_id, got.reply_to, got.maxTurns, got.rig_id) == ("s", "m", 2, "r")


def test_python_names_still_construct() -> None:
    assert Post(space_id="s", rig_id="r").rig_id == "r"


def test_the_schema_shows_camel_case() -> None:
    props = Post.model_json_schema(by_alias=True)["properties"]
    assert list(props) == ["spaceId", "replyTo", "maxTurns", "rigId", "limit"]


def test_spellings_of_a_field() -> None:
    assert set(spellings(Post, "space_id")) == {"space_id", "spaceId"}
    assert set(spellings(Post, "maxTurns")) == {"maxTurns", "max_turns"}
    assert set(spellings(Post, "rigId")) == {"rigId", "rig_id"}
    assert spellings(Post, "colour") == ("colour",)


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ({"space_id": 5}, "space_id", "args.space_id: Input should be a valid string"),
        ({"spaceId": 5}, "spaceId", "args.spaceId: Input should be a valid string"),
        ({"spaceId": "s", "max_turns": "x"}, "max_turns", "args.max_turns:"),
        ({"spaceId": "s", "rig_id": 1}, "rig_id", "args.rig_id:"),
        ({"spaceId": "s", "colour": "red"}, "colour", "args.colour is not a known argument"),
        # Nothing to echo for a missing field: the caller's style decides, else the contract's spelling.
        ({"replyTo": "m"}, "spaceId", "args.spaceId is required"),
        ({"reply_to": "m"}, "space_id", "args.space_id is required"),
        ({}, "space_id", "args.space_id is required"),
        ({"limit": 3}, "space_id", "args.space_id is required"),
    ],
)
def test_errors_name_the_field_as_the_caller_spelled_it(given: dict[str, Any], field: str, message: str) -> None:
    err = error(Post, given)
    assert err.field == field and err.message.startswith(message), err.message


def test_a_missing_field_the_contract_writes_in_camel_case_stays_so() -> None:
    class Run(Args):
        run_id: str

    assert error(Run, {}).message == "args.runId is required"
    assert error(Run, {"workspace_name": "x"}).field == "run_id"


def test_one_argument_spelled_twice_is_refused_naming_both() -> None:
    err = error(Post, {"spaceId": "a", "space_id": "b"})
    assert "args.spaceId and args.space_id are one argument spelled twice" in err.message
    assert err.field == "space_id"


def test_nested_locations_keep_their_path() -> None:
    class Hosts(Args):
        allowed_hosts: list[int]

    err = error(Hosts, {"allowed_hosts": [1, "x"]})
    assert err.field == "allowed_hosts.1" and err.message.startswith("args.allowed_hosts.1:")
