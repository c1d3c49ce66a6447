"""The pure helpers: the JSON Schema subset, reducers, {{key}} substitution, predicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.pipelines import filecheck, predicates, reducers, schema, substitute
from hangar.pipelines.filecheck import Folders
from hangar.pipelines.substitute import ABSENT


@pytest.mark.parametrize(
    ("value", "sch", "expected"),
    [
        ({"a": 1}, {"type": "object", "properties": {"a": {"type": "integer"}}}, None),
        ({"a": "x"}, {"type": "object", "properties": {"a": {"type": "integer"}}}, "$.a: expected integer, got string"),
        ({}, {"type": "object", "required": ["v"]}, "$: missing required property 'v'"),
        ({"v": 1, "w": 2}, {"properties": {"v": {}}, "additionalProperties": False}, "$.w: property not allowed"),
        ([1, "2"], {"type": "array", "items": {"type": "number"}}, "$[1]: expected number, got string"),
        ("urgent", {"enum": ["low", "high"]}, '$: "urgent" is not one of ["low", "high"]'),
        (5, {"minimum": 6}, "$: 5 is less than the minimum 6"),
        (5, {"maximum": 4}, "$: 5 is more than the maximum 4"),
        ("ab", {"minLength": 3}, "$: shorter than 3 characters"),
        ("abc", {"pattern": "^a+$"}, "$: \"abc\" does not match the pattern '^a+$'"),
        ([1, 1], {"uniqueItems": True}, "$[1]: duplicates an earlier item"),
        ([], {"minItems": 1}, "$: fewer than 1 items"),
        (None, {"type": ["string", "null"]}, None),
        (2.0, {"type": "integer"}, None),
        (True, {"type": "integer"}, "$: expected integer, got boolean"),
        (
            {"d": {"decision": "maybe"}},
            {"properties": {"d": {"properties": {"decision": {"enum": ["approved", "rejected"]}}}}},
            '$.d.decision: "maybe" is not one of ["approved", "rejected"]',
        ),
        (3, {"anyOf": [{"type": "string"}, {"minimum": 5}]}, "$: matches none of the anyOf schemas"),
    ],
)
def test_first_violation(value: Any, sch: dict[str, Any], expected: str | None) -> None:
    found = schema.first_violation(value, sch)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.startswith(expected), found


def test_check_schema_refuses_unsupported_keywords() -> None:
    assert schema.check_schema({"type": "object", "properties": {"a": {"oneOf": []}}}) == [
        "outputSchema.properties.a.oneOf: keyword 'oneOf' is not supported (supported: "
        + ", ".join(sorted(schema.KEYWORDS))
        + ")"
    ]
    assert schema.check_schema({"title": "x", "type": "string", "maxLength": 3}) == []
    assert schema.check_schema({"minimum": "1"}) == ["outputSchema.minimum must be a number"]


FINDINGS = {
    "type": "object",
    "required": ["findings"],
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"severity": {"enum": ["low", "high"]}, "line": {"type": "integer", "minimum": 1}},
                "additionalProperties": {"type": "string"},
            },
        }
    },
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"findings": [{"severity": "low"}, {"severity": "high"}, {"severity": "urgent"}]},
         '$.findings[2].severity: "urgent" is not one of ["low", "high"]'),
        ({"findings": [{"line": 0}]}, "$.findings[0].line: 0 is less than the minimum 1"),
        ({"findings": [{"note": 3}]}, "$.findings[0].note: expected string, got integer"),
        ({"findings": ({"severity": "low"},)}, None),  # a Python tuple is an array too
        ({"findings": "none"}, "$.findings: expected array, got string"),
    ],
)  # fmt: skip
def test_violation_names_the_json_path(value: Any, expected: str | None) -> None:
    assert schema.first_violation(value, FINDINGS) == expected


def test_violation_reports_the_wrong_type_first_and_always_the_same_one() -> None:
    # several keywords fail on one value: the type explains the rest
    assert (
        schema.first_violation(7, {"minimum": 10, "enum": [1], "type": "string"}) == "$: expected string, got integer"
    )
    extra = {"additionalProperties": {"type": "integer"}}
    assert schema.first_violation({"z": "1", "b": "2", "m": "3"}, extra) == "$.b: expected integer, got string"


def test_enum_and_const_tell_booleans_from_numbers() -> None:
    assert schema.first_violation(True, {"enum": [1, 2]}) == "$: true is not one of [1, 2]"
    assert schema.first_violation(1.0, {"const": 1}) is None


def test_check_schema_names_where_each_problem_is() -> None:
    assert schema.check_schema({"properties": {"a": {"type": "str"}}, "items": {"pattern": "("}, "$ref": "#"}) == [
        "outputSchema.properties.a.type: 'str' is not a type (types: "
        + "array, boolean, integer, null, number, object, string)",
        "outputSchema.items.pattern: missing ), unterminated subpattern at position 0",
        "outputSchema.$ref: keyword '$ref' is not supported (supported: " + ", ".join(sorted(schema.KEYWORDS)) + ")",
    ]
    assert sorted(schema.check_schema({"minLength": -1, "anyOf": []})) == [
        "outputSchema.anyOf must not be empty",
        "outputSchema.minLength must be a non-negative integer",
    ]
    assert schema.check_schema(["not", "a", "schema"]) == ["outputSchema must be an object"]


@pytest.mark.parametrize(
    ("reducer", "existing", "new", "expected"),
    [
        ("override", 1, 2, 2),
        ("append", ABSENT, 1, [1]),
        ("append", [1], [2], [1, [2]]),
        ("mergeLists", [1], [2, 3], [1, 2, 3]),
        ("mergeLists", ABSENT, [2], [2]),
        ("mergeMaps", {"a": 1, "b": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ("sum", ABSENT, 2, 2),
        ("sum", 1.5, 2, 3.5),
    ],
)
def test_reducers(reducer: Any, existing: Any, new: Any, expected: Any) -> None:
    assert reducers.reduce_value(reducer, "k", existing, new) == expected


@pytest.mark.parametrize(
    ("reducer", "existing", "new", "message"),
    [
        ("sum", 1, "2", "reducer sum on 'k': the new value '2' is not a number"),
        ("mergeLists", [1], 2, "reducer mergeLists on 'k': the new value is not a list"),
        ("mergeMaps", [1], {}, "reducer mergeMaps on 'k': the value already there is not a map"),
        ("append", "x", 1, "reducer append on 'k': the value already there is not a list"),
    ],
)
def test_reducer_errors(reducer: Any, existing: Any, new: Any, message: str) -> None:
    with pytest.raises(reducers.ReducerError, match=message.replace("(", r"\(")):
        reducers.reduce_value(reducer, "k", existing, new)


@pytest.mark.parametrize(
    ("reducer", "new", "expected"),
    [
        ("append", 1, [1]),
        ("mergeLists", [1, 2], [1, 2]),
        ("mergeMaps", {"a": 1}, {"a": 1}),
        ("sum", 2, 2),
        ("override", 2, 2),
    ],
)
def test_reducers_treat_a_null_already_there_as_nothing(reducer: Any, new: Any, expected: Any) -> None:
    """A key set to null (an override of null, a step that answered null) takes the next write as its first."""
    assert reducers.reduce_value(reducer, "k", None, new) == expected


@pytest.mark.parametrize(
    ("reducer", "existing", "expected"),
    [
        ("override", [1], None),
        ("append", ABSENT, [None]),
        ("append", [1], [1, None]),
    ],
)
def test_a_null_written_through_a_reducer_is_refused_or_kept_as_its_reducer_says(
    reducer: Any, existing: Any, expected: Any
) -> None:
    assert reducers.reduce_value(reducer, "k", existing, None) == expected
    for name, what in (("mergeLists", "list"), ("mergeMaps", "map")):
        for before in (ABSENT, None, [1] if name == "mergeLists" else {"a": 1}):
            with pytest.raises(reducers.ReducerError, match=f"reducer {name} on 'k': the new value is not a {what}"):
                reducers.reduce_value(name, "k", before, None)
    with pytest.raises(reducers.ReducerError, match="reducer sum on 'k': the new value None is not a number"):
        reducers.reduce_value("sum", "k", 1, None)


def test_sum_refuses_booleans_on_either_side() -> None:
    """``True`` is an int to Python; to a pipeline it is a flag, never 1."""
    for existing in (ABSENT, None, 1):
        with pytest.raises(reducers.ReducerError, match="reducer sum on 'k': the new value True is not a number"):
            reducers.reduce_value("sum", "k", existing, True)
    with pytest.raises(reducers.ReducerError, match="reducer sum on 'k': the existing value False is not a number"):
        reducers.reduce_value("sum", "k", False, 1)
    assert reducers.reduce_value("sum", "k", 0, 0) == 0 and reducers.reduce_value("sum", "k", ABSENT, 0.5) == 0.5


def test_the_first_write_to_a_list_key() -> None:
    """append keeps what it is given as one item, even the first time and even a list; mergeLists starts the list
    with a copy (a later merge never changes the step output it came from)."""
    assert reducers.reduce_value("append", "k", ABSENT, [1, 2]) == [[1, 2]]
    assert reducers.reduce_value("append", "k", ABSENT, []) == [[]]
    assert reducers.reduce_value("append", "k", [[1, 2]], [3]) == [[1, 2], [3]]
    given = [1, 2]
    first = reducers.reduce_value("mergeLists", "k", ABSENT, given)
    assert first == [1, 2] and first is not given
    assert reducers.reduce_value("mergeLists", "k", ABSENT, []) == []
    assert reducers.reduce_value("mergeMaps", "k", ABSENT, {}) == {}


def test_substitution_state_then_payload_dotted_and_shell_escaped() -> None:
    state = {"name": "it's $HOME", "repo": {"path": "/r"}, "n": 3}
    payload = {"name": "ignored", "only": "p"}
    assert substitute.render("{{name}} {{ repo.path }} {{only}} {{n}}", state, payload) == "it's $HOME /r p 3"
    assert substitute.render("echo {{name}}", state, payload, shell=True) == "echo 'it'\"'\"'s $HOME'"
    assert substitute.render("{{repo}}", state, payload) == '{"path": "/r"}'
    with pytest.raises(substitute.MissingKey, match=r"\{\{missing.key\}\} is not in the pipeline state"):
        substitute.render("x {{missing.key}}", state, payload)


def test_comparisons_coerce_numeric_text() -> None:
    assert predicates.compare("3", "gt", 0)
    assert not predicates.compare("0", "gt", 0)
    assert predicates.compare("3", "equals", 3)
    assert predicates.compare("Hello World", "contains", "world")
    assert predicates.compare(["a", "b"], "contains", "b")
    assert predicates.compare(ABSENT, "notExists", None)
    assert predicates.compare(None, "notExists", None)
    assert predicates.compare(1, "exists", None)
    assert predicates.compare(ABSENT, "notEquals", 1)
    assert not predicates.compare("abc", "lt", 1)


async def test_predicate_tree_and_file_exists(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "src" / "deep" / "pubspec.yaml").write_text("x")
    (repo / "node_modules" / "hidden.txt").parent.mkdir()
    (repo / "node_modules" / "hidden.txt").write_text("x")
    state = {"repo_local_path": str(repo), "n": 5}
    fe = {"type": "fileExists", "paths": ["pubspec.yaml"]}
    assert not await predicates.evaluate(fe, state, Folders(tmp_path))
    assert await predicates.evaluate({**fe, "recursive": True}, state, Folders(tmp_path))
    assert await predicates.evaluate({**fe, "recursive": True, "negate": True}, state, Folders(tmp_path)) is False
    assert not await predicates.evaluate(
        {"type": "fileExists", "paths": ["hidden.txt"], "recursive": True}, state, Folders(tmp_path)
    )
    assert await predicates.evaluate({"type": "fileExists", "paths": ["src/deep"]}, state, Folders(tmp_path))
    (tmp_path / "here.txt").write_text("x")
    assert await predicates.evaluate({"type": "fileExists", "paths": ["here.txt"]}, {}, Folders(tmp_path))
    tree = {
        "type": "and",
        "of": [
            {"type": "comparison", "left": "n", "op": "gt", "right": 4},
            {"type": "not", "of": {"type": "or", "of": [{"type": "comparison", "left": "n", "op": "lt", "right": 0}]}},
        ],
    }
    predicates.check(tree, "p")
    assert await predicates.evaluate(tree, state, Folders(tmp_path))


async def test_file_exists_stays_in_its_folders_and_follows_no_link(tmp_path: Path) -> None:
    run_dir, workspace, host = tmp_path / "run", tmp_path / "ws", tmp_path / "host"
    for d in (run_dir, workspace / "spaces" / "s" / "app", host):
        d.mkdir(parents=True)
    (host / "secret.txt").write_text("x")
    (workspace / "spaces" / "s" / "app" / "pubspec.yaml").write_text("x")
    (run_dir / "probe").symlink_to(host)
    alone, with_spaces = Folders(run_dir), Folders(run_dir, (workspace / "spaces",))
    fe = {"type": "fileExists", "paths": ["probe/secret.txt"]}
    assert not await predicates.evaluate(fe, {}, alone)
    assert not await predicates.evaluate({**fe, "paths": ["secret.txt"], "recursive": True}, {}, alone)
    assert not await predicates.evaluate({**fe, "paths": ["probe"]}, {}, alone)  # a link never counts as a file
    in_worktree = {"repo_local_path": str(workspace / "spaces" / "s" / "app")}
    found = {"type": "fileExists", "paths": ["pubspec.yaml"]}
    assert await predicates.evaluate(found, in_worktree, with_spaces)
    with pytest.raises(filecheck.OutsideFolders, match="lies outside the run's working directory"):
        await predicates.evaluate(found, in_worktree, alone)  # without the workspace's spaces it is outside
    for state, paths in (({"repo_local_path": str(host)}, ["secret.txt"]), ({}, [str(host / "secret.txt")]),
                         ({}, ["../host/secret.txt"]), ({}, ["../ws/workspace.db"])):  # fmt: skip
        with pytest.raises(filecheck.OutsideFolders, match=str(tmp_path)):
            await predicates.evaluate({"type": "fileExists", "paths": paths}, state, with_spaces)


def test_predicate_shape_errors_name_where() -> None:
    with pytest.raises(predicates.PredicateError, match=r"p.of\[1\].type must be one of"):
        predicates.check({"type": "and", "of": [{"type": "fileExists", "paths": ["a"]}, {"type": "xor"}]}, "p")
    with pytest.raises(predicates.PredicateError, match=r"p\.right is required for op gt"):
        predicates.check({"type": "comparison", "left": "a", "op": "gt"}, "p")


async def test_run_when() -> None:
    here = Folders(Path("."))
    assert await predicates.run_when_met("flag", {"flag": True}, here)
    assert not await predicates.run_when_met("flag", {}, here)
    assert await predicates.run_when_met("!flag", {"flag": 0}, here)
    assert await predicates.run_when_met(
        {"type": "comparison", "left": "n", "op": "equals", "right": 1}, {"n": 1}, here
    )


async def test_file_exists_stays_inside_the_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "sub").mkdir(parents=True)
    (run_dir / "sub" / "in.txt").write_text("x")
    (tmp_path / "secret.db").write_text("x")
    (run_dir / "to-secret").symlink_to(tmp_path / "secret.db")
    (run_dir / "to-parent").symlink_to(tmp_path)
    (run_dir / "sub" / "to-parent").symlink_to(tmp_path)

    async def holds(paths: list[str], state: dict[str, str] | None = None, **more: object) -> bool:
        look = {"type": "fileExists", "paths": paths, **more}
        return await predicates.evaluate(look, state or {}, Folders(run_dir))

    assert await holds(["sub/in.txt"]) and await holds([str(run_dir / "sub" / "in.txt")])
    assert await holds(["in.txt"], {"b": str(run_dir / "sub")}, baseKey="b")
    assert await holds(["in.txt"], {"b": "sub"}, baseKey="b")  # a relative base starts at the run directory
    for through_a_link in (["to-secret"], ["to-parent/secret.db"], ["sub/to-parent/secret.db"]):
        assert not await holds(through_a_link), through_a_link
    assert not await holds(["secret.db"], recursive=True)
    for paths, state in ((["../secret.db"], None), ([str(tmp_path / "secret.db")], None),
                         (["secret.db"], {"b": str(tmp_path)}), (["secret.db"], {"b": "../"})):  # fmt: skip
        for more in ({}, {"recursive": True}, {"negate": True}):
            with pytest.raises(filecheck.OutsideFolders, match="lies outside"):
                await holds(paths, state, **({"baseKey": "b"} if state else {}), **more)


async def test_a_recursive_look_stops_at_its_bounds(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}").write_text("")
    look = {"type": "fileExists", "paths": ["nope"], "recursive": True}
    with pytest.raises(filecheck.LookTooCostly, match="more than 20 entries"):
        await predicates.evaluate(look, {}, Folders(tmp_path), filecheck.LookBudget(entries=20))
    assert not await predicates.evaluate(look, {}, Folders(tmp_path), filecheck.LookBudget(entries=30))
    with pytest.raises(filecheck.LookTooCostly, match="spent more than"):
        await predicates.evaluate(look, {}, Folders(tmp_path), filecheck.LookBudget(deadline=0))
    deep = tmp_path / "deep"
    for _ in range(filecheck.MAX_DEPTH + 2):
        deep = deep / "d"
    deep.mkdir(parents=True)
    with pytest.raises(filecheck.LookTooCostly, match=f"deeper than {filecheck.MAX_DEPTH} levels"):
        await predicates.evaluate({"type": "fileExists", "paths": ["nope"], "recursive": True}, {}, Folders(tmp_path))
