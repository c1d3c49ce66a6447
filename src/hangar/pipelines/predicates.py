"""Predicates of the router body and of ``runWhen``.

Shapes (spec, router body): ``fileExists`` (``paths``, ``baseKey`` default ``repo_local_path``, ``negate``,
``recursive`` skipping ``.git``, ``node_modules``, ``build``, ``.dart_tool``), ``comparison`` (``left`` a state
key, ``op``, ``right`` a literal), ``and``/``or`` (``of``: list), ``not`` (``of``: one predicate).

``parse`` checks a predicate's shape (used when a template loads, so a malformed predicate is a template
error naming where); ``evaluate`` reads state and, for ``fileExists``, the file system: only below the run's
working directory and its workspace's folder, trees the run's scripts and the spaces' guests write, so each path
is looked up beneath its folder's descriptor without following any symlink (``hangar.core.beneath``). A path
(or ``state[baseKey]``) outside them is an error naming it, never a look at the rest of the host.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hangar.core.beneath import anchored, lstat_beneath, opened, walk
from hangar.pipelines.substitute import ABSENT
from hangar.pipelines.substitute import walk as walk_state

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


def _file_exists(pred: Mapping[str, Any], state: Mapping[str, Any], roots: Sequence[Path]) -> bool:
    base_value = state.get(str(pred.get("baseKey") or "repo_local_path"))
    base = Path(str(base_value)) if base_value else roots[0]
    found = any(_exists(base, raw, roots, recursive=bool(pred.get("recursive"))) for raw in pred["paths"])
    return not found if pred.get("negate") else found


def _beneath(path: Path, roots: Sequence[Path]) -> tuple[Path, tuple[str, ...]]:
    """The folder of ``roots`` holding ``path`` (named lexically, nothing resolved) and the way down to it."""
    norm = Path(os.path.normpath(path))
    for root in roots:
        if norm.is_relative_to(root):
            return root, norm.relative_to(root).parts
    raise PredicateError(f"fileExists: {norm} lies outside the run's working directory and its workspace's folder")


def _exists(base: Path, raw: str, roots: Sequence[Path], *, recursive: bool) -> bool:
    """Whether ``raw`` (relative to ``base``, or absolute) names an entry, or with ``recursive`` ends the path of
    one anywhere below ``base``. Looked up beneath the root's descriptor: a guest's symlink is never followed."""
    root, parts = _beneath(base / raw, roots)
    broot, bparts = _beneath(base, roots) if recursive else (root, ())
    try:
        with anchored(root) as fd:
            if lstat_beneath(fd, parts) is not None:
                return True
        if not recursive:
            return False
        with anchored(broot) as bfd, opened(bfd, bparts, os.O_RDONLY | os.O_DIRECTORY) as top:
            return _found_below(top, raw.strip("/"))
    except OSError:  # gone, not a folder, or reached through a symlink: not there
        return False


def _found_below(top: int, rel: str) -> bool:
    """Whether ``rel`` (a name or a relative path) ends the path of an entry below ``top``, vendor dirs skipped."""
    for _fd, name, st, parts in walk(top, prune=SKIPPED_DIRS):
        if name in SKIPPED_DIRS and stat.S_ISDIR(st.st_mode):
            continue
        candidate = "/".join(parts)
        if candidate == rel or candidate.endswith("/" + rel):
            return True
    return False


def evaluate(pred: Mapping[str, Any], state: Mapping[str, Any], run_dir: Path, also: Sequence[Path] = ()) -> bool:
    """``also``: further folders ``fileExists`` may look in (the run's workspace's folder) besides ``run_dir``;
    a path outside all of them raises ``PredicateError`` naming it."""
    kind = pred["type"]
    if kind == "fileExists":
        return _file_exists(pred, state, (run_dir, *also))
    if kind == "comparison":
        return compare(walk_state(state, str(pred["left"])), str(pred["op"]), pred.get("right"))
    if kind == "and":
        return all(evaluate(p, state, run_dir, also) for p in pred["of"])
    if kind == "or":
        return any(evaluate(p, state, run_dir, also) for p in pred["of"])
    return not evaluate(pred["of"], state, run_dir, also)


def check_run_when(value: Any, path: str) -> None:
    """``runWhen`` is a state key (truthy to run, ``!key`` falsy to run) or a predicate."""
    if isinstance(value, str):
        if not value.lstrip("!"):
            raise PredicateError(f"{path} must name a state key")
        return
    check(value, path)


def run_when_met(value: Any, state: Mapping[str, Any], run_dir: Path, also: Sequence[Path] = ()) -> bool:
    if isinstance(value, str):
        negate = value.startswith("!")
        found = walk_state(state, value.lstrip("!"))
        truthy = found is not ABSENT and bool(found)
        return not truthy if negate else truthy
    return evaluate(value, state, run_dir, also)
