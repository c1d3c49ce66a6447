"""Merging reviewers' findings on a pull request: consensus buckets and the verdict (``prReview.finalize``).

Pure and deterministic: the same reviews always give the same result, in the same order.

**A finding** is what a reviewer reports against the template's output schema (``FINDING_SCHEMA``): ``file``,
``line`` (optionally ``endLine``), ``severity`` (``blocker``, ``high``, ``medium``, ``low``, ``info``),
``category``, ``message`` and ``suggestion``.

**Two findings are the same** (merged into one) when, written down:

1. they name the same file (``./`` and leading ``/`` ignored);
2. their line ranges, each widened by ``LINE_WINDOW`` lines on both sides, overlap;
3. their meaning is close: ``similarity >= MERGE_THRESHOLD``, where ``similarity`` is the Dice coefficient of the
   two messages' word sets (lower-cased words of letters and digits, stop words dropped, a plural or ``-ing``/``-ed``
   ending cut) plus ``CATEGORY_BONUS`` when the categories are equal (after lower-casing), capped at 1.

Merging is transitive (a finding joining two groups joins them), and two findings of one reviewer merge too: a
reviewer counts once in a group however often it repeats itself.

**Buckets**, by how many of the ``n`` reviewers raised a merged finding (``r``): ``every`` (r = n), ``most``
(more than half, not all), ``some`` (two or more, at most half), ``one`` (a single reviewer, when n > 1).

**The verdict**, by these rules in order:

0. when any reviewer failed (its step failed and the run went on, ``continueOnFail``), the verdict is never
   ``approve``: what would have been ``approve`` is ``comment``, and the review says how many failed (``capped``).
   A reviewer that failed said nothing, not "nothing is wrong": the others' silence approves nothing.
   ``request_changes`` and ``comment`` stand;
1. ``request_changes`` when some merged finding was raised at ``high`` or ``blocker`` by more than half the
   reviewers (the only reviewer, when there is one);
2. ``comment`` when some merged finding is ``medium`` or above (whoever raised it), or any finding remains of a
   severity ``high`` or ``blocker`` raised by half or fewer;
3. ``approve`` otherwise (no findings, or only ``low`` and ``info``).

A merged finding keeps the most severe severity given, the category most reviewers gave (ties: the first in
order), the longest message and suggestion, and the widest line range.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hangar.errors import InvalidArgs

SEVERITIES: tuple[str, ...] = ("blocker", "high", "medium", "low", "info")
LINE_WINDOW = 3
MERGE_THRESHOLD = 0.5
CATEGORY_BONUS = 0.25
MAX_FINDINGS = 2000  # all reviewers' findings of one review together
MAX_TEXT = 4000  # characters of a message or a suggestion

Bucket = Literal["every", "most", "some", "one"]
Verdict = Literal["approve", "comment", "request_changes"]
BUCKETS: tuple[Bucket, ...] = ("every", "most", "some", "one")

FINDING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "minLength": 1},
        "line": {"type": "integer", "minimum": 1},
        "endLine": {"type": "integer", "minimum": 1},
        "severity": {"type": "string", "enum": list(SEVERITIES)},
        "category": {"type": "string", "minLength": 1},
        "message": {"type": "string", "minLength": 1},
        "suggestion": {"type": "string"},
    },
    "required": ["file", "line", "severity", "category", "message", "suggestion"],
}
# What each reviewer submits (its output schema in the built-in template).
REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"findings": {"type": "array", "items": FINDING_SCHEMA}},
    "required": ["findings"],
}

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "a an and are as at be but by can could for from has have here if in into is it its may might not of on or "
    "should so than that the their then there these this those to too was were when which while will with would "
    "you your"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


@dataclass(frozen=True)
class Finding:
    reviewer: int  # the reviewer's place in the review list, from 0
    file: str
    line: int
    end_line: int
    severity: str
    category: str
    message: str
    suggestion: str


@dataclass(frozen=True)
class Merged:
    file: str
    line: int
    end_line: int
    severity: str
    category: str
    message: str
    suggestion: str
    reviewers: tuple[int, ...]
    bucket: Bucket
    raised_high_by: int  # reviewers who gave it high or blocker

    def to_state(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "endLine": self.end_line,
            "severity": self.severity,
            "category": self.category,
            "message": self.message,
            "suggestion": self.suggestion,
            "bucket": self.bucket,
            "reviewers": list(self.reviewers),
            "raisedBy": len(self.reviewers),
        }


@dataclass(frozen=True)
class Consolidated:
    reviewers: int
    findings: tuple[Merged, ...]
    verdict: Verdict
    counts: Mapping[str, int] = field(default_factory=dict)


def parse_reviews(reviews: Any, key: str = "reviews") -> list[list[Finding]]:
    """Each reviewer's findings from the accumulated review nodes: a list with one entry per reviewer, each
    ``{"findings": [...]}`` (or the list of findings itself). Bad shapes are ``InvalidArgs`` naming the place."""
    if not isinstance(reviews, list):
        raise InvalidArgs(f"{key} is not a list of reviews (one per reviewer)", field=key)
    found: list[list[Finding]] = []
    total = 0
    for n, review in enumerate(reviews):
        items = review.get("findings") if isinstance(review, Mapping) else review
        if not isinstance(items, list):
            raise InvalidArgs(f"{key}[{n}] has no findings list", field=key)
        total += len(items)
        if total > MAX_FINDINGS:
            raise InvalidArgs(f"{key}: more than {MAX_FINDINGS} findings in one review", field=key)
        found.append([parse_finding(n, item, f"{key}[{n}].findings[{i}]") for i, item in enumerate(items)])
    return found


def parse_finding(reviewer: int, item: Any, where: str) -> Finding:
    """One finding checked against ``FINDING_SCHEMA`` and the limits (``MAX_TEXT``); ``InvalidArgs`` naming
    ``where`` otherwise."""
    if not isinstance(item, Mapping):
        raise InvalidArgs(f"{where} is not a finding (a map)", field=where)

    def text(name: str, *, required: bool = True) -> str:
        value = item.get(name, "" if not required else None)
        if not isinstance(value, str) or (required and not value.strip()):
            raise InvalidArgs(f"{where}.{name} is missing or not text", field=where)
        if len(value) > MAX_TEXT:
            raise InvalidArgs(f"{where}.{name} is longer than {MAX_TEXT} characters", field=where)
        return value.strip()

    line = item.get("line")
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise InvalidArgs(f"{where}.line is not a line number (1 or more)", field=where)
    end = item.get("endLine", line)
    if isinstance(end, bool) or not isinstance(end, int) or end < line:
        raise InvalidArgs(f"{where}.endLine is not a line number at or after line", field=where)
    severity = text("severity").lower()
    if severity not in SEVERITIES:
        raise InvalidArgs(f"{where}.severity {severity!r} is not one of {', '.join(SEVERITIES)}", field=where)
    return Finding(
        reviewer=reviewer,
        file=normal_path(text("file")),
        line=line,
        end_line=end,
        severity=severity,
        category=text("category").lower(),
        message=text("message"),
        suggestion=text("suggestion", required=False),
    )


def normal_path(path: str) -> str:
    return path.strip().removeprefix("./").lstrip("/")


def words(message: str) -> frozenset[str]:
    """The message's words for comparing meaning: lower case, stop words dropped, simple endings cut."""
    out: set[str] = set()
    for w in _WORD.findall(message.lower()):
        if w in _STOP:
            continue
        for ending in ("ing", "ed", "es", "s"):
            if len(w) > len(ending) + 2 and w.endswith(ending):
                w = w[: -len(ending)]
                break
        out.add(w)
    return frozenset(out)


def similarity(
    a: Finding, b: Finding, words_a: frozenset[str] | None = None, words_b: frozenset[str] | None = None
) -> float:
    """How close two findings' meanings are (0 to 1): Dice of message words, plus the category bonus."""
    wa = words(a.message) if words_a is None else words_a
    wb = words(b.message) if words_b is None else words_b
    dice = 2 * len(wa & wb) / (len(wa) + len(wb)) if wa or wb else 0.0
    return min(1.0, dice + (CATEGORY_BONUS if a.category == b.category else 0.0))


def near(a: Finding, b: Finding) -> bool:
    """Same file, and the line ranges each widened by ``LINE_WINDOW`` on both sides overlap."""
    reach = 2 * LINE_WINDOW
    return a.file == b.file and a.line <= b.end_line + reach and b.line <= a.end_line + reach


def same(a: Finding, b: Finding, words_a: frozenset[str] | None = None, words_b: frozenset[str] | None = None) -> bool:
    """Whether two findings are one (the three rules of the module's docstring)."""
    return near(a, b) and similarity(a, b, words_a, words_b) >= MERGE_THRESHOLD


def groups(findings: Sequence[Finding]) -> list[list[int]]:
    """Indexes of ``findings`` merged into groups (union of every pair that is the same), in first-seen order."""
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    cached = [words(f.message) for f in findings]
    by_file: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        by_file.setdefault(f.file, []).append(i)
    for members in by_file.values():
        members.sort(key=lambda i: (findings[i].line, i))
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if findings[j].line > findings[i].end_line + 2 * LINE_WINDOW:
                    break  # sorted by line: nothing later is near
                if same(findings[i], findings[j], cached[i], cached[j]):
                    ri, rj = root(i), root(j)
                    if ri != rj:
                        parent[max(ri, rj)] = min(ri, rj)
    out: dict[int, list[int]] = {}
    for i in range(len(findings)):
        out.setdefault(root(i), []).append(i)
    return list(out.values())


def bucket_of(raised_by: int, reviewers: int) -> Bucket:
    if raised_by >= reviewers:
        return "every"
    if raised_by * 2 > reviewers:
        return "most"
    return "some" if raised_by >= 2 else "one"


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def _merge(members: Sequence[Finding], reviewers: int) -> Merged:
    who = tuple(sorted({m.reviewer for m in members}))
    high = len({m.reviewer for m in members if _rank(m.severity) <= _rank("high")})
    categories = Counter(m.category for m in members)
    category = max(categories, key=lambda c: (categories[c], -[m.category for m in members].index(c)))
    return Merged(
        file=members[0].file,
        line=min(m.line for m in members),
        end_line=max(m.end_line for m in members),
        severity=min((m.severity for m in members), key=_rank),
        category=category,
        message=max((m.message for m in members), key=len),
        suggestion=max((m.suggestion for m in members), key=len),
        reviewers=who,
        bucket=bucket_of(len(who), reviewers),
        raised_high_by=high,
    )


def verdict_of(findings: Sequence[Merged], reviewers: int) -> Verdict:
    """The verdict by the rules of the module's docstring."""
    if any(f.raised_high_by * 2 > reviewers for f in findings):
        return "request_changes"
    if any(_rank(f.severity) <= _rank("medium") for f in findings):
        return "comment"
    return "approve"


def capped(verdict: str, failed: int) -> str:
    """Rule 0 of the module's docstring: no approval when ``failed`` reviewers gave no review."""
    return "comment" if failed and verdict == "approve" else verdict


def consolidate(reviews: Sequence[Sequence[Finding]]) -> Consolidated:
    """Merge every reviewer's findings, sort them (bucket, severity, file, line) and give the verdict."""
    n = len(reviews)
    flat = [f for review in reviews for f in review]
    merged = [_merge([flat[i] for i in g], n) for g in groups(flat)]
    merged.sort(key=lambda m: (BUCKETS.index(m.bucket), _rank(m.severity), m.file, m.line, m.message))
    counts = Counter(m.bucket for m in merged)
    return Consolidated(n, tuple(merged), verdict_of(merged, n), {b: counts.get(b, 0) for b in BUCKETS})
