"""A labelled set of reviewers' findings: which ones are the same issue (``label``), written by hand.

Each case is one pull request reviewed by several reviewers; findings with the same label in a case are the same
issue said differently (the merge should join them), different labels are different issues (it should not), some
of them on the same line or in the same category on purpose. ``pair_scores`` gives the precision and recall of the
merge over pairs of findings, the figure the README reports (``bench/bench_pr_review.py`` prints it too).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from hangar.forges.review_merge import Finding, groups

# (reviewer, file, line, category, severity, message, label)
Row = tuple[int, str, int, str, str, str, str]

CASES: list[list[Row]] = [
    [
        (
            0,
            "src/db.py",
            42,
            "security",
            "blocker",
            "SQL query built with string formatting allows SQL injection",
            "sqli",
        ),
        (1, "src/db.py", 42, "security", "high", "Possible SQL injection: user input formatted into the query", "sqli"),
        (
            2,
            "./src/db.py",
            43,
            "security",
            "blocker",
            "User input is interpolated into SQL; use query parameters to avoid injection",
            "sqli",
        ),
        (1, "src/db.py", 44, "style", "low", "Line too long", "long"),
        (
            2,
            "src/db.py",
            120,
            "security",
            "high",
            "SQL query built with string formatting allows SQL injection",
            "sqli2",
        ),
    ],
    [
        (0, "app/views.py", 10, "bug", "high", "Missing null check before accessing user.profile", "null"),
        (1, "app/views.py", 11, "bug", "medium", "user.profile may be None here; add a null check", "null"),
        (2, "app/views.py", 10, "performance", "medium", "Query inside a loop causes N+1 database queries", "n1"),
        (
            3,
            "app/views.py",
            12,
            "performance",
            "medium",
            "N+1 queries: the loop runs one database query per item",
            "n1",
        ),
        (4, "app/views.py", 10, "naming", "info", "Variable name x is not descriptive", "name"),
    ],
    [
        (0, "web/api.ts", 88, "error-handling", "medium", "The promise rejection is not handled", "promise"),
        (1, "web/api.ts", 90, "error-handling", "medium", "Unhandled promise rejection in fetchUser", "promise"),
        (2, "web/api.ts", 88, "error-handling", "medium", "Errors from the request are swallowed silently", "swallow"),
    ],
    [
        (
            0,
            "lib/cache.go",
            5,
            "concurrency",
            "high",
            "Data race: map written from several goroutines without a lock",
            "race",
        ),
        (1, "lib/cache.go", 7, "concurrency", "high", "The cache map is accessed concurrently without a mutex", "race"),
        (
            2,
            "lib/cache.go",
            6,
            "concurrency",
            "blocker",
            "Concurrent map writes will panic at runtime; guard the map with a mutex",
            "race",
        ),
        (
            0,
            "lib/cache.go",
            30,
            "concurrency",
            "high",
            "Data race: map written from several goroutines without a lock",
            "race2",
        ),
    ],
    [
        (0, "README.md", 3, "docs", "low", "Typo: recieve should be receive", "typo"),
        (1, "README.md", 3, "docs", "low", "Spelling: recieve", "typo"),
        (2, "README.md", 4, "docs", "low", "The install section is missing the Python version", "version"),
    ],
    [
        (
            0,
            "src/auth.py",
            77,
            "security",
            "blocker",
            "Password compared with == allows timing attacks; use hmac.compare_digest",
            "timing",
        ),
        (
            1,
            "src/auth.py",
            77,
            "security",
            "high",
            "Use a constant-time comparison (hmac.compare_digest) for the password hash",
            "timing",
        ),
        (2, "src/auth.py", 78, "security", "high", "The password hash uses MD5, which is broken", "md5"),
        (3, "src/auth.py", 77, "security", "medium", "Timing attack possible in password comparison", "timing"),
    ],
    [
        (
            0,
            "src/parse.rs",
            200,
            "bug",
            "high",
            "Off-by-one: the loop reads one byte past the end of the buffer",
            "obo",
        ),
        (
            1,
            "src/parse.rs",
            201,
            "bug",
            "high",
            "Reads past the end of the buffer (off by one in the loop bound)",
            "obo",
        ),
        (2, "src/parse.rs", 205, "bug", "medium", "unwrap() on a parse result will panic on bad input", "unwrap"),
        (3, "src/parse.rs", 206, "error-handling", "medium", "Avoid unwrap here: bad input panics", "unwrap"),
    ],
    [
        (0, "Dockerfile", 1, "security", "medium", "Base image is not pinned to a digest", "pin"),
        (1, "Dockerfile", 1, "reproducibility", "low", "Pin the base image version", "pin"),
        (2, "Dockerfile", 9, "security", "medium", "The container runs as root", "root"),
        (3, "Dockerfile", 10, "security", "medium", "Container runs as root user; add a USER instruction", "root"),
    ],
    [
        (0, "tests/test_x.py", 15, "tests", "low", "This test has no assertion", "noassert"),
        (1, "tests/test_x.py", 15, "tests", "low", "The test asserts nothing", "noassert"),
        (2, "tests/test_x.py", 16, "tests", "low", "The test sleeps for 5 seconds; make it event driven", "sleep"),
    ],
    [
        (0, "src/server.js", 50, "security", "high", "CORS allows any origin with credentials", "cors"),
        (
            1,
            "src/server.js",
            52,
            "security",
            "high",
            "Access-Control-Allow-Origin * together with credentials is unsafe",
            "cors",
        ),
        (2, "src/server.js", 50, "security", "high", "Missing rate limiting on the login endpoint", "rate"),
        (3, "src/server.js", 70, "security", "high", "The login endpoint has no rate limiting", "rate"),
    ],
]


def findings_of(case: list[Row]) -> tuple[list[Finding], list[str]]:
    found = [
        Finding(r, f.removeprefix("./"), line, line, sev, cat, msg, "") for r, f, line, cat, sev, msg, _label in case
    ]
    return found, [row[6] for row in case]


def pair_scores() -> dict[str, Any]:
    """Precision and recall of the merge over all pairs of findings within a case."""
    tp = fp = fn = 0
    for case in CASES:
        found, labels = findings_of(case)
        merged_with: dict[int, int] = {}
        for g, members in enumerate(groups(found)):
            for i in members:
                merged_with[i] = g
        for i, j in combinations(range(len(found)), 2):
            predicted, truth = merged_with[i] == merged_with[j], labels[i] == labels[j]
            tp += predicted and truth
            fp += predicted and not truth
            fn += truth and not predicted
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    findings = sum(len(c) for c in CASES)
    return {
        "cases": len(CASES),
        "findings": findings,
        "precision": precision,
        "recall": recall,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }
