"""The pull request review's pipeline bodies: ``prReview.finalize`` and ``forge.prComment``.

``prReview.finalize`` reads the reviewers' accumulated outputs (state ``reviews``: one ``{findings: [...]}`` per
reviewer, as the built-in template's ``append`` reducer or a team's dispatch collects them), merges them
(``hangar.forges.review_merge``: buckets, the verdict, its rules written there) and writes
``consolidated_findings`` (the merged findings, the verdict, the bucket counts and the review's text) and
``review_verdict``. It calls nobody, so it is fast and safe to repeat.

``forge.prComment`` posts ``consolidated_findings`` on the pull request ``repo_full_name``#``pr_number`` as one
review: findings on a line of the diff as inline comments, the others in the review's body; the verdict is the
review's event (``APPROVE``, ``COMMENT``, ``REQUEST_CHANGES``). ``consolidated_findings`` may also be plain text (a
``COMMENT`` review with that body). It is held to what ``prReview.finalize`` writes (at most ``MAX_FINDINGS``
findings, each checked by ``review_merge.parse_finding``; a text at most ``MAX_BODY`` characters) whichever step
wrote it, and a step failure names the field that is not.

The token is the server's own, from the forge connection (``hangar.forges.broker.server_token``); it is used by
the server alone and never put in state, output, progress, an event or a log line. Before anything is sent, every
secret the run's steps may have had (the workspace's agents' API keys and secret variables,
``hangar.core.redact.SecretValues``; the forge connection's credentials and the token minted for the post) is
blanked from the review's text and its inline comments, also in its common encodings
(``hangar.core.redact.encodings``); how many were blanked (never what) is in the step's progress and output
(``redacted``) and, when any was, an audit row ``forge.prComment.redacted``.

The review carries a marker made of the run and the step, so a repeat of the step (a retry, a crash) finds the
review already posted and answers it instead of posting a second; only a review the server's own account posted
counts (``github.own_login``), never one someone else wrote the marker into. Returns ``terminal`` with
``comment_review_id`` and ``commented_at``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.core.redact import outgoing_redactor
from hangar.errors import InvalidArgs
from hangar.forges import github, github_reviews
from hangar.forges.broker import server_token
from hangar.forges.github_reviews import InlineComment
from hangar.forges.review_merge import (
    BUCKETS,
    MAX_FINDINGS,
    Consolidated,
    capped,
    consolidate,
    parse_finding,
    parse_reviews,
)
from hangar.forges.store import check_full_name
from hangar.pipelines import STEP_ERRORS_KEY, ConfigField, StepContext, StepResult, body

REVIEWS_KEY = "reviews"
FINDINGS_KEY = "consolidated_findings"
VERDICT_KEY = "review_verdict"
MAX_INLINE_COMMENTS = 100  # the rest go in the review's body
MAX_BODY = 60_000  # GitHub takes 65,536 characters
# An "approve" verdict is posted as a comment that says so, never as GitHub's approval: the reviewers read a diff
# its author wrote (a prompt injection, or reviewers that all failed, would otherwise grant an approval branch
# protection may count). Requesting changes only ever holds a pull request back, so it is posted as such.
EVENTS = {"approve": "COMMENT", "comment": "COMMENT", "request_changes": "REQUEST_CHANGES"}
_VERDICT_TEXT = {"approve": "Approve", "comment": "Comment", "request_changes": "Request changes"}
_BUCKET_TEXT = {"every": "every reviewer", "most": "most reviewers", "some": "some reviewers", "one": "one reviewer"}


@body(
    "prReview.finalize",
    summary="Merges the reviewers' findings into consensus buckets and computes the pull request's verdict.",
    config=[
        ConfigField("extras.reviewsKey", "State key holding one review per reviewer (default reviews)"),
        ConfigField("state.reviews", "The reviewers' outputs, each {findings: [...]}"),
    ],
    honours_dry_run=True,
)
async def pr_review_finalize(step: StepContext) -> StepResult:
    key = str(step.config.extras.get("reviewsKey") or REVIEWS_KEY)
    if not step.has(key):
        raise InvalidArgs(f"state has no {key}: no reviewer's findings reached this step", field=key)
    merged = consolidate(parse_reviews(step.lookup(key), key))
    failed = _failed_reviewers(step)
    verdict = capped(merged.verdict, len(failed))
    found = {
        "verdict": verdict,
        "reviewers": merged.reviewers,
        "failedReviewers": failed,
        "counts": dict(merged.counts),
        "findings": [f.to_state() for f in merged.findings],
        "body": review_text(merged, verdict, failed),
    }
    return StepResult.ok({FINDINGS_KEY: found, VERDICT_KEY: verdict}, output=found)


def _failed_reviewers(step: StepContext) -> list[str]:
    """The reviewer steps this one waits for that failed and let the run go on (``continueOnFail``: the engine
    keeps their errors in ``STEP_ERRORS_KEY``), in the order the join names them."""
    errors = step.lookup_or(STEP_ERRORS_KEY, {})
    errors = errors if isinstance(errors, Mapping) else {}
    return [sid for sid in step.step.wait_for_step_ids if sid in errors]


def finding_text(f: Mapping[str, Any], reviewers: Any) -> str:
    """One merged finding (as ``consolidated_findings`` holds it) as a comment's text."""
    head = f"**{f.get('severity')}** · {f.get('category')} · raised by {f.get('raisedBy', 1)} of {reviewers}"
    bucket = f.get("bucket")
    if isinstance(bucket, str) and bucket in _BUCKET_TEXT:
        head += f" ({_BUCKET_TEXT[bucket]})"
    text = f"{head}\n\n{f.get('message', '')}"
    return f"{text}\n\n**Suggestion:** {f['suggestion']}" if f.get("suggestion") else text


def head_text(verdict: str, reviewers: Any, counts: Mapping[str, Any], findings: int, failed: int = 0) -> str:
    tally = ", ".join(f"{counts.get(b, 0)} by {_BUCKET_TEXT[b]}" for b in BUCKETS)
    head = f"## Review: {_VERDICT_TEXT[verdict]}\n{reviewers} reviewers, {findings} findings ({tally})."
    if failed:
        head += (
            f"\n**{failed} of {failed + reviewers} reviewers failed** and gave no review: this is not an approval,"
            " and what they would have found is missing."
        )
    return head


def _listed(f: Mapping[str, Any], reviewers: Any) -> str:
    line, end = f.get("line"), f.get("endLine", f.get("line"))
    where = f"{f.get('file')}:{line}" if end == line else f"{f.get('file')}:{line}-{end}"
    return f"- `{where}` " + finding_text(f, reviewers).replace("\n\n", " — ")


def review_text(merged: Consolidated, verdict: str, failed: list[str]) -> str:
    """The review as text (every finding, by bucket), kept in ``consolidated_findings.body``."""
    lines = [head_text(verdict, merged.reviewers, merged.counts, len(merged.findings), len(failed))]
    lines += [_listed(f.to_state(), merged.reviewers) for f in merged.findings]
    return "\n".join(lines)


def _pr_number(value: Any) -> int:
    if isinstance(value, bool):
        value = None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise InvalidArgs(f"pr_number {value!r} is not a pull request's number", field="pr_number")
    return value


def _required(step: StepContext, key: str) -> Any:
    if not step.has(key):
        raise InvalidArgs(
            f"state has no {key} (the PR comment body needs repo_full_name, pr_number and consolidated_findings)",
            field=key,
        )
    return step.lookup(key)


def _placed(
    findings: list[dict[str, Any]], reviewers: Any, lines: Mapping[str, set[int]]
) -> tuple[list[InlineComment], list[int]]:
    """Inline comments for findings on the diff's lines; the indexes of those that are not."""
    inline: list[InlineComment] = []
    outside: list[int] = []
    for n, f in enumerate(findings):
        on = lines.get(str(f.get("file")), set())
        line, end = f.get("line"), f.get("endLine", f.get("line"))
        text = finding_text(f, reviewers)
        if len(inline) < MAX_INLINE_COMMENTS and isinstance(end, int) and end in on:
            start = line if isinstance(line, int) and line in on and line < end else None
            inline.append(InlineComment(str(f["file"]), end, str(text), start))
        elif len(inline) < MAX_INLINE_COMMENTS and isinstance(line, int) and line in on:
            inline.append(InlineComment(str(f["file"]), line, str(text)))
        else:
            outside.append(n)
    return inline, outside


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FINDINGS:
        raise InvalidArgs(f"{where} is not a count (0 to {MAX_FINDINGS})", field=where)
    return value


def _checked_finding(n: int, f: Any, reviewers: int) -> dict[str, Any]:
    """A finding of ``consolidated_findings`` held to what ``prReview.finalize`` writes (the same checks and
    limits, ``review_merge.parse_finding``): it may come from any step that wrote the state key."""
    where = f"{FINDINGS_KEY}.findings[{n}]"
    one = parse_finding(0, f, where)
    bucket = f.get("bucket")
    if bucket is not None and bucket not in BUCKETS:
        raise InvalidArgs(f"{where}.bucket {str(bucket)[:40]!r} is not one of {', '.join(BUCKETS)}", field=where)
    raised = _count(f.get("raisedBy", 1), f"{where}.raisedBy")
    if raised > reviewers:
        raise InvalidArgs(f"{where}.raisedBy {raised} is more than the {reviewers} reviewers", field=where)
    return {
        "file": one.file, "line": one.line, "endLine": one.end_line, "severity": one.severity,
        "category": one.category, "message": one.message, "suggestion": one.suggestion, "bucket": bucket,
        "raisedBy": raised,
    }  # fmt: skip


def _comment_parts(value: Any) -> tuple[str, str, list[dict[str, Any]], int]:
    """The review's head text, its event and its findings, from ``consolidated_findings``, checked as
    ``prReview.finalize`` checks what it merges (counts and sizes): any earlier step may have written it."""
    if isinstance(value, str):
        if not value.strip():
            raise InvalidArgs("consolidated_findings is empty", field=FINDINGS_KEY)
        if len(value) > MAX_BODY:
            raise InvalidArgs(f"consolidated_findings is longer than {MAX_BODY} characters", field=FINDINGS_KEY)
        return value, "COMMENT", [], 0
    if not isinstance(value, Mapping) or not isinstance(value.get("findings"), list):
        raise InvalidArgs(
            "consolidated_findings is neither a comment's text nor prReview.finalize's findings", field=FINDINGS_KEY
        )
    verdict = value.get("verdict", "comment")
    if not isinstance(verdict, str) or verdict not in EVENTS:
        raise InvalidArgs(f"consolidated_findings.verdict {str(verdict)[:40]!r} is not a verdict", field=FINDINGS_KEY)
    if len(value["findings"]) > MAX_FINDINGS:
        raise InvalidArgs(f"consolidated_findings.findings: more than {MAX_FINDINGS} findings", field=FINDINGS_KEY)
    reviewers = _count(value.get("reviewers", 0), f"{FINDINGS_KEY}.reviewers")
    failed = value.get("failedReviewers", [])
    if not isinstance(failed, list) or len(failed) > MAX_FINDINGS:
        raise InvalidArgs(f"{FINDINGS_KEY}.failedReviewers is not a list of step ids", field=FINDINGS_KEY)
    verdict = capped(verdict, len(failed))
    findings = [_checked_finding(n, f, max(reviewers, 1)) for n, f in enumerate(value["findings"])]
    raw_counts = value.get("counts")
    raw_counts = raw_counts if isinstance(raw_counts, Mapping) else {}
    counts: dict[str, int] = {b: _count(raw_counts.get(b, 0), f"{FINDINGS_KEY}.counts.{b}") for b in BUCKETS}
    return head_text(verdict, reviewers, counts, len(findings), len(failed)), EVENTS[verdict], findings, reviewers


@body(
    "forge.prComment",
    summary="Posts the consolidated findings on the pull request as one review with inline comments.",
    config=[
        ConfigField("state.repo_full_name", "The forge repository, owner/name (linked to a workspace repo)"),
        ConfigField("state.pr_number", "The pull request's number"),
        ConfigField("state.consolidated_findings", "prReview.finalize's findings, or a comment's text"),
        ConfigField("state.head_sha", "Optional: the commit reviewed (inline comments are placed on it)"),
    ],
)
async def forge_pr_comment(step: StepContext) -> StepResult:
    full_name = check_full_name(str(_required(step, "repo_full_name")), field="repo_full_name")
    number = _pr_number(_required(step, "pr_number"))
    head, event, findings, reviewers = _comment_parts(_required(step, FINDINGS_KEY))
    head_sha = step.lookup_or("head_sha")
    marker = github_reviews.review_marker(f"{step.run_key}/{step.step_id}")
    async with server_token(step.app, step.workspace_id, full_name) as t:
        # What the reviewers wrote may carry a secret one of them was given (a program that echoes its
        # environment, a diff that talks it into printing one): blanked before anything leaves for the forge.
        redactor = await outgoing_redactor(step.app, step.workspace_id, t.token, *t.connection.secrets)
        head, findings = redactor.clean(head), redactor.clean_json(findings)
        author = await github.own_login(t.connection, t.route)
        pr = github_reviews.PullRequest(t.connection, t.token, t.route, t.full_name, number, step.clock)
        lines = await github_reviews.commentable_lines(pr) if findings else {}
        inline, outside = _placed(findings, reviewers, lines)
        body = head
        if outside:
            body += "\n\n### Not on the diff's lines\n" + "\n".join(_listed(findings[n], reviewers) for n in outside)
        if redactor.count:
            await step.app.audit.append(
                step.workspace_id,
                principal=step.run_key,
                action="forge.prComment.redacted",
                target=f"pr:{full_name}#{number}",
                details={"stepId": step.step_id, "redacted": redactor.count},
            )
        posted = await github_reviews.post_review(
            pr,
            body=body[:MAX_BODY],
            event=event,
            comments=inline,
            marker=marker,
            author=author,
            commit_id=str(head_sha) if isinstance(head_sha, str) and head_sha else None,
        )
    done = {"reviewId": posted.id, "inline": len(inline), "inBody": len(outside), "found": posted.found}
    await step.progress(done | {"redacted": redactor.count})
    return StepResult.terminal(
        {"comment_review_id": posted.id, "commented_at": posted.submitted_at.isoformat().replace("+00:00", "Z")},
        output={"reviewId": posted.id, "redacted": redactor.count},
    )


BODIES = [pr_review_finalize, forge_pr_comment]
