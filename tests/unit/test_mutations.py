"""The mutation list of ``make mutate`` (``bench/mutations.py``) is well formed: each snippet is found exactly once in
its file, the bug it puts there still compiles, every test named exists, and every entry of issue 31 has its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from bench.mutations import KINDS, MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_unique_and_kinds_known() -> None:
    ids = [m.id for m in MUTATIONS]
    assert len(ids) == len(set(ids))
    assert {m.kind for m in MUTATIONS} <= set(KINDS)
    assert all(re.fullmatch(r"[a-z0-9-]+", i) for i in ids)


def test_every_entry_of_the_issue_has_a_mutation() -> None:
    items = {m.item for m in MUTATIONS}
    assert {f"31.{n}" for n in range(1, 15)} <= items
    assert {m.kind for m in MUTATIONS if m.item in {f"31.{n}" for n in range(1, 9)}} == {"guard"}
    assert {m.kind for m in MUTATIONS if m.item in {f"31.{n}" for n in range(9, 15)}} == {"subtle"}


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.id)
def test_the_snippet_is_found_once_and_its_bug_compiles(m: Mutation) -> None:
    source = (ROOT / m.file).read_text()
    assert source.count(m.find) == 1, f"{m.id}: the snippet is found {source.count(m.find)} times in {m.file}"
    assert m.replace != m.find
    ast.parse(source.replace(m.find, m.replace), filename=m.file)


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.id)
def test_the_tests_named_exist(m: Mutation) -> None:
    assert m.tests
    for node in m.tests:
        path, _, name = node.partition("::")
        text = (ROOT / path).read_text()
        assert name and re.search(rf"^\s*(async )?def {re.escape(name)}\(", text, re.MULTILINE), node
