"""Predicates of the router body and of ``runWhen``.

Shapes (spec, router body): ``fileExists`` (``paths``, ``baseKey`` default ``repo_local_path``, ``negate``,
``recursive`` skipping ``.git``, ``node_modules``, ``build``, ``.dart_tool``), ``comparison`` (``left`` a state
key, ``op``, ``right`` a literal), ``and``/``or`` (``of``: list), ``not`` (``of``: one predicate).

``parse`` checks a predicate's shape (used when a template loads, so a malformed predicate is a template
error naming where); ``evaluate`` reads state and, for ``fileExists``, the run's working directory and its
workspace's guest trees only (``hangar.pipelines.filecheck``: no symlink followed, a path outside them an error
naming it), off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from hangar.pipelines.filecheck import Folders, LookBudget, exists, find
from hangar.pipelines.substitute import ABSENT, walk

OPS: tuple[str, ...] = ("equals", "notEquals", "contains", "exists", "notExists", "gt", "lt")
TYPES: tuple[str, ...] = ("fileExists", "comparison", "and", "or", "not")
SKIPPED_DIRS: frozenset[str] = frozenset({".git", "node_modules", "build", ".dart_tool"})


class PredicateError(ValueError):
    """A malformed predicate; the message names where."""


def check(pred: Any, path: str) -> None:
    """Raise ``PredicateError`` when ``pred`` is not one of the shapes above."""
    if not isinstance(pred, Mapping):
        raise PredicateError(f"{path} must be an object with a type")
    kind = pred.get("type")
    if kind not in TYPES:
        raise PredicateError(f"{path}.type must be one of {', '.join(TYPES)}, not {kind!r}")
    if kind == "fileExists":
        paths = pred.get("paths")
        if not (isinstance(paths, list) and paths and all(isinstance(p, str) and p for p in paths)):
            raise PredicateError(f"{path}.paths must be a non-empty list of paths")
    elif kind == "comparison":
        check_comparison(pred, path)
    elif kind in ("and", "or"):
        of = pred.get("of")
        if not (isinstance(of, list) and of):
            raise PredicateError(f"{path}.of must be a non-empty list of predicates")
        for i, sub in enumerate(of):
            check(sub, f"{path}.of[{i}]")
    else:
        check(pred.get("of"), f"{path}.of")


def check_comparison(pred: Mapping[str, Any], path: str) -> None:
    if not isinstance(pred.get("left"), str) or not pred.get("left"):
        raise PredicateError(f"{path}.left must name a state key")
    if pred.get("op") not in OPS:
        raise PredicateError(f"{path}.op must be one of {', '.join(OPS)}, not {pred.get('op')!r}")
    if pred["op"] not in ("exists", "notExists") and "right" not in pred:
        raise PredicateError(f"{path}.right is required for op {pred['op']}")


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def compare(left: Any, op: str, right: Any) -> bool:
    """``left`` is the state value (``ABSENT`` when missing); shell output is text, so numbers are coerced."""
    if op == "exists":
        return left is not ABSENT and left is not None
    if op == "notExists":
        return left is ABSENT or left is None
    if left is ABSENT:
        return op == "notEquals"
    if op in ("equals", "notEquals"):
        ln, rn = _as_number(left), _as_number(right)
        same = ln == rn if ln is not None and rn is not None else left == right or str(left) == str(right)
        return same if op == "equals" else not same
    if op == "contains":
        if isinstance(left, list | tuple):
            return right in left or str(right) in (str(x) for x in left)
        if isinstance(left, Mapping):
            return right in left
        return str(right).lower() in str(left).lower() if left is not None else False
    ln, rn = _as_number(left), _as_number(right)
    if ln is None or rn is None:
        return False
    return ln > rn if op == "gt" else ln < rn


def _file_exists(pred: Mapping[str, Any], state: Mapping[str, Any], folders: Folders, budget: LookBudget) -> bool:
    """True when any listed path exists in one of ``folders`` (relative ones below ``state[baseKey]``, else the
    run directory); a path or base outside them raises ``OutsideFolders`` naming it."""
    base_value = state.get(str(pred.get("baseKey") or "repo_local_path"))
    base = folders.run_dir / str(base_value) if base_value else folders.run_dir  # a relative base starts there
    found = False
    for raw in pred["paths"]:
        root, parts = folders.place(base / raw)
        found = exists(root, parts)
        if not found and pred.get("recursive"):
            broot, bparts = folders.place(base)
            found = find(broot, bparts, raw, SKIPPED_DIRS, budget)
        if found:
            break
    return not found if pred.get("negate") else found


def _evaluate(pred: Mapping[str, Any], state: Mapping[str, Any], folders: Folders, budget: LookBudget) -> bool:
    kind = pred["type"]
    if kind == "fileExists":
        return _file_exists(pred, state, folders, budget)
    if kind == "comparison":
        return compare(walk(state, str(pred["left"])), str(pred["op"]), pred.get("right"))
    if kind == "and":
        return all(_evaluate(p, state, folders, budget) for p in pred["of"])
    if kind == "or":
        return any(_evaluate(p, state, folders, budget) for p in pred["of"])
    return not _evaluate(pred["of"], state, folders, budget)


def looks_at_files(pred: Any) -> bool:
    """Whether evaluating ``pred`` reads the file system (it holds a ``fileExists``)."""
    if not isinstance(pred, Mapping):
        return False
    if pred.get("type") == "fileExists":
        return True
    of = pred.get("of")
    return any(looks_at_files(p) for p in (of if isinstance(of, list) else [of]))


async def evaluate(
    pred: Mapping[str, Any], state: Mapping[str, Any], folders: Folders, budget: LookBudget | None = None
) -> bool:
    """Evaluate a predicate; one that looks at files does so in a worker thread, within one ``LookBudget``
    (``LookTooCostly`` past it), so a big directory never holds up the event loop."""
    budget = budget or LookBudget()
    if not looks_at_files(pred):
        return _evaluate(pred, state, folders, budget)
    try:
        return await asyncio.to_thread(_evaluate, pred, state, folders, budget)
    except asyncio.CancelledError:
        budget.cancelled = True  # the thread stops at its next entry
        raise


def check_run_when(value: Any, path: str) -> None:
    """``runWhen`` is a state key (truthy to run, ``!key`` falsy to run) or a predicate."""
    if isinstance(value, str):
        if not value.lstrip("!"):
            raise PredicateError(f"{path} must name a state key")
        return
    check(value, path)


async def run_when_met(value: Any, state: Mapping[str, Any], folders: Folders) -> bool:
    if isinstance(value, str):
        negate = value.startswith("!")
        found = walk(state, value.lstrip("!"))
        truthy = found is not ABSENT and bool(found)
        return not truthy if negate else truthy
    return await evaluate(value, state, folders)
