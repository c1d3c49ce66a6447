"""Pull request spaces and their triggers, over the real server: GitHub is the API emulator
(``tests.peers.github_emulator``, its pull request routes answering in githubkit's typed shapes), the repository
is served by git's own smart-HTTP backend (``tests.peers.git_http``) with the pull request's head published at
``refs/pull/<n>/head`` as GitHub does, so the PR's checkout is a real fetch. Webhook deliveries are signed as
GitHub signs them (``tests.peers.github_pulls.deliver``); every refusal of the route is driven, and the ops'
refusals for a guest, a member where an admin is needed, and another workspace's admin."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.core.clock import Clock, FakeClock
from hangar.forges import poll, webhooks
from hangar.pipelines.engine import PipelineEngine
from tests.integration.test_forges_broker import bare_forge
from tests.integration.test_forges_connect import trust_forge
from tests.integration.test_workspace_repos import _git
from tests.peers.git_http import GitHttp
from tests.peers.github_emulator import GitHubEmulator, github_emulator
from tests.peers.github_pulls import Pull, deliver, signature, webhook_payload
from tests.support.mcp import mcp_session, payload
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

APP_ID = 5151
SECRET = "s3cret-webhook-key-0123"
PATCH = "@@ -0,0 +1 @@\n+feature work"


@dataclass
class Forge:
    srv: RunningServer
    owner: RpcClient
    ws: str
    gh: GitHubEmulator
    git: GitHttp
    bare: Path
    repo: dict[str, Any]

    @property
    def hook(self) -> str:
        return self.srv.url.rstrip("/") + webhooks.webhook_path(self.ws)


def sha(bare: Path, ref: str) -> str:
    return _git(bare, "rev-parse", ref)


@asynccontextmanager
async def pulls_forge(tmp_path: Path, clock: Clock | None = None, web_dist: Path | None = None) -> AsyncIterator[Forge]:
    root = bare_forge(tmp_path)
    bare = root / "acme" / "app.git"
    _git(bare, "update-ref", "refs/pull/7/head", sha(bare, "feature"))  # what GitHub publishes for PR 7
    async with github_emulator() as gh, running_server(tmp_path / "data", clock=clock, web_dist=web_dist) as srv:
        with GitHttp(root) as git:
            await trust_forge(srv, gh.api_url)
            ws = await srv.new_workspace("pulls")
            key = gh.add_app(APP_ID)
            gh.install(APP_ID, "acme", ["app"])
            async with RpcClient(srv.ws_url, srv.owner_token) as owner:
                await owner.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
                repo = await owner.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
                await owner.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                yield Forge(srv, owner, ws, gh, git, bare, repo)


def add_pull_7(f: Forge) -> Pull:
    return f.gh.add_pull(
        "acme/app",
        7,
        title="Add the feature",
        author="ada",
        body="It adds feature.txt",
        base_sha=sha(f.bare, "main"),
        head_ref="feature",
        head_sha=sha(f.bare, "feature"),
        files=[{"filename": "feature.txt", "status": "added", "additions": 1, "deletions": 0, "patch": PATCH}],
        check_runs=[{"name": "ci", "status": "completed", "conclusion": "success"}],
        statuses=[{"context": "deploy", "state": "pending", "description": "waiting"}],
    )


ECHO_PR = {
    "id": "on-pr",
    "name": "On a pull request",
    "steps": [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        {
            "id": "say",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "printf '%s %s %s %s' {{repo_id}} {{repo_full_name}} {{pr_number}} {{head_sha}}",
                       "outputKey": "seen"},
        },
    ],
    "edges": [],
}  # fmt: skip


async def with_pr_trigger(f: Forge) -> dict[str, Any]:
    """The template echoing the trigger's state keys, with a pullRequest trigger; answers the trigger."""
    await f.owner.call("pipelines.templates.create", workspace_id=f.ws, template=ECHO_PR)
    return await f.owner.call("pipelines.triggers.create", workspace_id=f.ws, templateId="on-pr", kind="pullRequest")


async def runs_of(c: RpcClient, ws: str, count: int) -> list[dict[str, Any]]:
    for _ in range(400):
        runs = (await c.call("pipelines.runs.list", workspace_id=ws))["runs"]
        if len(runs) >= count and all(r["status"] in ("completed", "failed") for r in runs):
            return list(runs)
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} finished runs, have {runs}")


async def test_a_webhook_opens_the_pull_requests_space_fires_its_trigger_once_per_head_and_its_checkout_is_real_git(
    tmp_path: Path,
) -> None:
    async with pulls_forge(tmp_path) as f:
        c, ws = f.owner, f.ws
        pull = add_pull_7(f)
        trig = await with_pr_trigger(f)
        assert trig["kind"] == "pullRequest"
        hook = await c.call("forge.setWebhookSecret", workspace_id=ws, secret=SECRET)
        assert hook == {"url": f.hook, "secretSet": True, "events": ["pull_request"]}

        answer = await deliver(f.hook, "pull_request", webhook_payload(f.gh, pull, "opened"), SECRET, delivery="d-1")
        assert answer.status_code == 200, answer.text
        assert answer.json()["fired"] == "opened" and answer.json()["state"] == "open"
        space_id = answer.json()["spaceId"]

        listed = (await c.call("forge.prs", workspace_id=ws))["pulls"]
        assert [(p["fullName"], p["number"], p["title"], p["author"], p["state"]) for p in listed] == [
            ("acme/app", 7, "Add the feature", "ada", "open")
        ]
        shown = await c.call("forge.pr", workspace_id=ws, spaceId=space_id)
        assert shown == await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert shown["htmlUrl"] == f"{f.gh.base}/acme/app/pull/7"
        assert (shown["baseRef"], shown["headRef"], shown["headSha"]) == ("main", "feature", pull.head_sha)
        assert shown["body"] == "It adds feature.txt" and shown["filesTruncated"] is False
        assert shown["files"] == [
            {"filename": "feature.txt", "status": "added", "additions": 1, "deletions": 0, "patch": PATCH,
             "patchTruncated": False}
        ]  # fmt: skip
        assert [(k["kind"], k["name"], k["status"], k.get("conclusion")) for k in shown["checks"]] == [
            ("checkRun", "ci", "completed", "success"),
            ("status", "deploy", "pending", None),
        ]
        space = await c.call("spaces.get", workspace_id=ws, spaceId=space_id)
        assert space["title"] == f"{f.repo['name']}#7 · Add the feature" and space["mode"] == "review"

        (run,) = await runs_of(c, ws, 1)
        assert run["trigger"] == {"kind": "pullRequest", "id": trig["id"]}
        detail = await c.call("pipelines.runs.get", workspace_id=ws, runId=run["runId"])
        assert detail["state"]["seen"] == f"{f.repo['id']} acme/app 7 {pull.head_sha}"

        # The same delivery again, and a new delivery of the same head: nothing more starts.
        again = await deliver(f.hook, "pull_request", webhook_payload(f.gh, pull, "opened"), SECRET, delivery="d-1")
        assert again.status_code == 200 and again.json() == {
            "duplicate": True,
            "delivery": "d-1",
            "reason": "this delivery id was taken before",
        }
        edited = await deliver(f.hook, "pull_request", webhook_payload(f.gh, pull, "edited"), SECRET, delivery="d-2")
        assert edited.status_code == 200 and edited.json()["fired"] is None

        # A push to the pull request (real git), reported: a second run, for the new head.
        work = tmp_path / "work"
        _git(tmp_path, "clone", "-q", "-b", "feature", f.git.url("acme/app.git"), str(work))
        (work / "feature.txt").write_text("feature work, again\n")
        _git(work, "commit", "-q", "-am", "more")
        _git(work, "push", "-q", "origin", "feature")
        _git(f.bare, "update-ref", "refs/pull/7/head", sha(f.bare, "feature"))
        pull.head_sha = sha(f.bare, "feature")
        pushed = await deliver(
            f.hook, "pull_request", webhook_payload(f.gh, pull, "synchronize"), SECRET, delivery="d-3"
        )
        assert pushed.json()["fired"] == "synchronize"
        runs = await runs_of(c, ws, 2)
        assert len(runs) == 2
        assert (await c.call("forge.pr", workspace_id=ws, spaceId=space_id))["headSha"] == pull.head_sha

        # The pull request's checkout: its head fetched from refs/pull/7/head into a worktree.
        wt = await c.call(
            "worktrees.add", workspace_id=ws, repo=f"{f.repo['id']}#7", repoFullName="acme/app", prNumber=7
        )
        assert wt["branch"] == "pr/7"
        assert _git(Path(wt["path"]), "rev-parse", "HEAD") == pull.head_sha

        # The pull request vanishes: a clear state, what was known kept.
        del f.gh.pulls[("acme/app", 7)]
        gone = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert gone["state"] == "vanished" and "404" in gone["error"]
        assert gone["title"] == "Add the feature" and gone["files"] == shown["files"]
        with pytest.raises(RpcError) as never:
            await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=8)
        assert never.value.code == "not_found" and "#8 of acme/app does not exist" in never.value.message
        await f.srv.ctx.service(PipelineEngine).settle()


async def test_a_pull_request_opened_by_hand_fires_like_a_webhook_and_a_forge_down_loses_nothing(
    tmp_path: Path,
) -> None:
    async with pulls_forge(tmp_path) as f:
        c, ws = f.owner, f.ws
        pull = add_pull_7(f)
        await with_pr_trigger(f)
        opened = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["name"], number=7)
        assert opened["state"] == "open" and opened["title"] == "Add the feature"
        await runs_of(c, ws, 1)
        audit = json.dumps(await c.call("audit.list", workspace_id=ws))
        assert '"fired": "opened"' in audit

        # 5xx: refused as unavailable, the known pull request keeps its facts and says what failed.
        f.gh.outages = 1
        with pytest.raises(RpcError) as down:
            await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert down.value.code == "unavailable" and "502" in down.value.message
        kept = await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert kept["state"] == "open" and kept["title"] == "Add the feature" and "502" in kept["error"]

        # Rate-limited: unavailable, naming it.
        f.gh.rate_limited_until = int(time.time()) + 3600
        with pytest.raises(RpcError) as limited:
            await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert limited.value.code == "unavailable" and "rate-limits" in limited.value.message
        f.gh.rate_limited_until = None

        # A webhook while the forge is down: 503, the delivery forgotten, so its redelivery is taken.
        await c.call("forge.setWebhookSecret", workspace_id=ws, secret=SECRET)
        pull.title = "Add the feature, renamed"
        f.gh.outages = 1
        failed = await deliver(f.hook, "pull_request", webhook_payload(f.gh, pull, "edited"), SECRET, delivery="d-9")
        assert failed.status_code == 503
        redelivered = await deliver(
            f.hook, "pull_request", webhook_payload(f.gh, pull, "edited"), SECRET, delivery="d-9"
        )
        assert redelivered.status_code == 200 and "duplicate" not in redelivered.json()
        renamed = await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7)
        assert renamed["title"] == "Add the feature, renamed" and "error" not in renamed
        assert len(await runs_of(c, ws, 1)) == 1  # the head did not move: no new run
        await f.srv.ctx.service(PipelineEngine).settle()


@pytest.mark.sqlite_only("reads the forge's credential file, a sealed row on PostgreSQL")
async def test_every_bad_delivery_is_refused_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with pulls_forge(tmp_path) as f:
        c, ws = f.owner, f.ws
        pull = add_pull_7(f)
        payload = webhook_payload(f.gh, pull, "opened")

        unset = await deliver(f.hook, "pull_request", payload, SECRET)
        assert unset.status_code == 404 and "forge.setWebhookSecret" in unset.text
        nowhere = await deliver(f.srv.url.rstrip("/") + webhooks.webhook_path("no-such-ws"), "ping", {}, SECRET)
        assert nowhere.status_code == 404 and nowhere.json() == unset.json()  # the same answer either way

        await c.call("forge.setWebhookSecret", workspace_id=ws, secret=SECRET)
        folder = f.srv.data_dir / ws / "forge_credentials"
        stored = folder / "webhook.json"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert SECRET not in json.dumps(await c.call("audit.list", workspace_id=ws))
        assert SECRET not in json.dumps(await c.call("forge.status", workspace_id=ws))

        unsigned = await deliver(f.hook, "pull_request", payload, None)
        assert unsigned.status_code == 401 and "no X-Hub-Signature-256" in unsigned.text
        forged = await deliver(f.hook, "pull_request", payload, SECRET, sign_with="another-secret-value")
        assert forged.status_code == 401 and "does not match" in forged.text
        unknown = await deliver(f.hook, "issues", {"action": "opened"}, SECRET)
        assert unknown.status_code == 400 and "event 'issues' is not one Hangar takes" in unknown.text
        no_event = await deliver(f.hook, "", {}, SECRET)
        assert no_event.status_code == 400 and "no X-GitHub-Event" in no_event.text
        async with httpx.AsyncClient() as raw:
            body = json.dumps(payload).encode()
            no_id = await raw.post(
                f.hook,
                content=body,
                headers={"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": signature(SECRET, body)},
            )
        assert no_id.status_code == 400 and "X-GitHub-Delivery" in no_id.text
        long_id = await deliver(f.hook, "ping", {}, SECRET, delivery="d" * (webhooks.DELIVERY_MAX + 1))
        assert long_id.status_code == 400 and "X-GitHub-Delivery" in long_id.text
        at_most = await deliver(f.hook, "ping", {}, SECRET, delivery="d" * webhooks.DELIVERY_MAX)
        assert at_most.status_code == 200
        malformed = await deliver(f.hook, "pull_request", b"{not json", SECRET)
        assert malformed.status_code == 400 and "not JSON" in malformed.text
        for broken, field in (
            ([1, 2], "body"),
            ({**payload, "number": "7"}, "number"),
            ({**payload, "action": None}, "action"),
            ({**payload, "repository": {}}, "repository.full_name"),
        ):
            answer = await deliver(f.hook, "pull_request", broken, SECRET)  # type: ignore[arg-type]
            assert answer.status_code == 400 and answer.json()["error"]["field"] == field, (field, answer.text)
        elsewhere = await deliver(
            f.hook, "pull_request", {**payload, "repository": {"full_name": "acme/other"}}, SECRET
        )
        assert elsewhere.status_code == 202 and "linked to no repo" in elsewhere.text
        ping = await deliver(f.hook, "ping", {"zen": "Keep it logically awesome."}, SECRET)
        assert ping.status_code == 200 and ping.json() == {"ok": True, "event": "ping"}
        assert (await c.call("forge.prs", workspace_id=ws))["pulls"] == []

        # The body's limit, both sides of it.
        monkeypatch.setattr(webhooks, "MAX_BODY", 200)
        at_limit = b'{"zen": "' + b"x" * (200 - 11) + b'"}'
        assert len(at_limit) == 200
        assert (await deliver(f.hook, "ping", at_limit, SECRET)).status_code == 200
        past = await deliver(f.hook, "ping", at_limit[:-2] + b'x"}', SECRET)
        assert past.status_code == 413

        # The secret's length, both sides; removing it refuses deliveries again.
        for bad in ("x" * 15, "x" * 257):
            with pytest.raises(RpcError) as short:
                await c.call("forge.setWebhookSecret", workspace_id=ws, secret=bad)
            assert short.value.code == "invalid_args" and "secret" in short.value.message
        for good in ("x" * 16, "x" * 256):
            assert (await c.call("forge.setWebhookSecret", workspace_id=ws, secret=good))["secretSet"] is True
        removed = await c.call("forge.setWebhookSecret", workspace_id=ws)
        assert removed["secretSet"] is False and not stored.exists()
        assert (await deliver(f.hook, "ping", {}, "x" * 256)).status_code == 404


async def test_who_may_read_open_and_set_the_secret(tmp_path: Path) -> None:
    async with pulls_forge(tmp_path) as f:
        srv, ws = f.srv, f.ws
        add_pull_7(f)
        await f.owner.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=7)
        other_ws = await srv.new_workspace("elsewhere")
        member = await srv.new_user_token(ws, "member", name="mia")
        guest = await srv.new_user_token(ws, "guest", name="gus")
        stranger = await srv.new_user_token(other_ws, "admin", name="sam")
        async with RpcClient(srv.ws_url, member) as m:
            assert len((await m.call("forge.prs", workspace_id=ws))["pulls"]) == 1
            assert (await m.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7))["number"] == 7
            assert (await m.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=7))["state"] == "open"
            with pytest.raises(RpcError) as not_admin:
                await m.call("forge.setWebhookSecret", workspace_id=ws, secret=SECRET)
            assert not_admin.value.code == "forbidden"
            with pytest.raises(RpcError) as no_polling:
                await m.call("forge.setPolling", workspace_id=ws, seconds=60)
            assert no_polling.value.code == "forbidden"
        async with mcp_session(srv, member) as session:  # the same ops as tools on /mcp
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"forge.prs", "forge.pr", "forge.openPr", "forge.setWebhookSecret", "forge.setPolling"} <= names
            shown = payload(
                await session.call_tool("forge.pr", {"workspace_id": ws, "repoId": f.repo["id"], "number": 7})
            )
            assert shown["title"] == "Add the feature" and shown["files"][0]["filename"] == "feature.txt"
        for token in (guest, stranger):
            async with RpcClient(srv.ws_url, token) as c:
                for name, args in (
                    ("forge.prs", {}),
                    ("forge.pr", {"repoId": f.repo["id"], "number": 7}),
                    ("forge.openPr", {"repoId": f.repo["id"], "number": 7}),
                    ("forge.setWebhookSecret", {"secret": SECRET}),
                    ("forge.setPolling", {"seconds": 60}),
                ):
                    with pytest.raises(RpcError) as refused:
                        await c.call(name, workspace_id=ws, **args)
                    assert refused.value.code == "forbidden", (name, refused.value)
        # Nobody may announce a pull request but the forges part: its event type is the server's own.
        with pytest.raises(RpcError) as forged:
            await f.owner.call("pipelines.emit", workspace_id=ws, eventType="forge.pullRequest", payload={})
        assert forged.value.code == "refused" and "forge" in forged.value.message
        with pytest.raises(RpcError) as both:
            await f.owner.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7, spaceId="x")
        assert both.value.code == "invalid_args"
        with pytest.raises(RpcError) as unknown:
            await f.owner.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=9)
        assert unknown.value.code == "not_found" and "forge.openPr" in unknown.value.message


async def polled(f: Forge, clock: FakeClock, seconds: float, before: int) -> int:
    """Advance the clock, wait for the poller's next whole pass, and answer how often the pull requests have been
    listed by then."""
    poller = f.srv.ctx.service(poll.Poller)
    passes = poller.passes
    clock.advance(seconds)
    if seconds == 0:
        poller.poke()
    for _ in range(600):
        if poller.passes > passes:
            break
        await asyncio.sleep(0.02)
    return f.gh.requests.count("GET /repos/acme/app/pulls")


async def test_polling_syncs_new_heads_at_its_interval_and_honours_rate_limits_and_backs_off_on_5xx(
    tmp_path: Path,
) -> None:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    async with pulls_forge(tmp_path, clock) as f:
        c, ws = f.owner, f.ws
        pull = add_pull_7(f)
        await with_pr_trigger(f)
        for bad in (poll.MIN_POLL_S - 1, poll.MAX_POLL_S + 1):
            with pytest.raises(RpcError) as out_of_range:
                await c.call("forge.setPolling", workspace_id=ws, seconds=bad)
            assert out_of_range.value.code == "invalid_args" and "seconds" in out_of_range.value.message
        assert (await c.call("forge.setPolling", workspace_id=ws, seconds=poll.MAX_POLL_S))["seconds"] == 86400
        listed = await polled(f, clock, 0, 0)  # set: polled at once
        assert listed == 1
        assert (await c.call("forge.setPolling", workspace_id=ws, seconds=60)) == {"seconds": 60}
        listed = await polled(f, clock, 0, listed)
        assert (await c.call("forge.status", workspace_id=ws))["pollSeconds"] == 60
        (row,) = (await c.call("forge.prs", workspace_id=ws))["pulls"]
        assert row["number"] == 7 and row["headSha"] == pull.head_sha
        await runs_of(c, ws, 1)

        # Not before the interval; at it, a moved head is synced and fires.
        assert await polled(f, clock, 59, listed) == listed
        pull.head_sha = "2" * 40
        listed = await polled(f, clock, 1, listed)
        assert (await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7))["headSha"] == "2" * 40
        assert len(await runs_of(c, ws, 2)) == 2

        # 5xx: asked again after twice the interval, not at the interval.
        f.gh.outages = 1
        failed = await polled(f, clock, 60, listed)
        assert failed == listed + 1
        assert await polled(f, clock, 60, failed) == failed
        listed = await polled(f, clock, 60, failed)
        assert listed == failed + 1

        # Rate-limited: not asked again before the reset the forge named.
        reset = int(clock.now().timestamp()) + 600
        f.gh.rate_limited_until = reset
        limited = await polled(f, clock, 60, listed)
        assert limited == listed + 1
        assert await polled(f, clock, 500, limited) == limited
        f.gh.rate_limited_until = None
        listed = await polled(f, clock, 100, limited)
        assert listed == limited + 1

        # Closed on the forge: no longer listed, synced once more and kept as closed.
        pull.state = "closed"
        listed = await polled(f, clock, 60, listed)
        assert (await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=7))["state"] == "closed"
        assert (await c.call("forge.setPolling", workspace_id=ws)) == {"seconds": None}
        assert (await polled(f, clock, 3600, listed)) == listed
        await f.srv.ctx.service(PipelineEngine).settle()


async def test_what_a_pull_request_keeps_of_its_files_and_patches_both_sides_of_the_limits(tmp_path: Path) -> None:
    from hangar.forges.github_pulls import MAX_FILES, MAX_PATCH_CHARS

    async with pulls_forge(tmp_path) as f:
        c, ws = f.owner, f.ws

        def files(n: int) -> list[dict[str, Any]]:
            return [{"filename": f"f{i:04}.txt", "additions": 1, "patch": "@@ -0,0 +1 @@\n+x"} for i in range(n)]

        at_limit = [
            {"filename": "big.txt", "additions": 1, "patch": "+" + "x" * (MAX_PATCH_CHARS - 1)},
            {"filename": "bigger.txt", "additions": 1, "patch": "+" + "x" * MAX_PATCH_CHARS},
        ]
        f.gh.add_pull("acme/app", 1, files=at_limit + files(MAX_FILES - 2), head_sha="3" * 40)
        f.gh.add_pull("acme/app", 2, files=files(MAX_FILES + 1), head_sha="4" * 40)
        kept = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=1)
        assert len(kept["files"]) == MAX_FILES and kept["filesTruncated"] is False
        big, bigger = kept["files"][:2]
        assert len(big["patch"]) == MAX_PATCH_CHARS and big["patchTruncated"] is False
        assert len(bigger["patch"]) == MAX_PATCH_CHARS and bigger["patchTruncated"] is True
        cut = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=2)
        assert len(cut["files"]) == MAX_FILES and cut["filesTruncated"] is True
        assert cut["files"][-1]["filename"] == f"f{MAX_FILES - 1:04}.txt"


async def test_a_pull_requests_patches_together_are_kept_within_their_budget_both_sides(tmp_path: Path) -> None:
    """300 files of 100,000 characters would be stored at 30 MB: the patches of one pull request together are kept
    to ``MAX_PATCHES_CHARS``; the files after it is spent keep what is left (maybe nothing), marked cut."""
    from hangar.forges.github_pulls import MAX_PATCH_CHARS, MAX_PATCHES_CHARS

    async with pulls_forge(tmp_path) as f:
        c, ws = f.owner, f.ws
        full = MAX_PATCHES_CHARS // MAX_PATCH_CHARS  # files at the per-file limit that fill the budget

        def patched(last: int, more: int = 0) -> list[dict[str, Any]]:
            big = [{"filename": f"f{i:03}", "additions": 1, "patch": "x" * MAX_PATCH_CHARS} for i in range(full - 1)]
            ends = [{"filename": "end", "additions": 1, "patch": "y" * (MAX_PATCH_CHARS - 1)}]
            tail = [{"filename": "last", "additions": 1, "patch": "z" * last}]
            return big + ends + tail + [{"filename": "after", "additions": 1, "patch": "w" * more}] * bool(more)

        f.gh.add_pull("acme/app", 1, files=patched(1), head_sha="3" * 40)
        f.gh.add_pull("acme/app", 2, files=patched(2, more=3), head_sha="4" * 40)
        at = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=1)
        assert sum(len(x["patch"]) for x in at["files"]) == MAX_PATCHES_CHARS
        assert not any(x["patchTruncated"] for x in at["files"])
        over = await c.call("forge.openPr", workspace_id=ws, repoId=f.repo["id"], number=2)
        assert sum(len(x["patch"]) for x in over["files"]) == MAX_PATCHES_CHARS
        last, after = over["files"][-2:]
        assert (last["patch"], last["patchTruncated"]) == ("z", True)
        assert (after["patch"], after["patchTruncated"]) == ("", True)
        assert not any(x["patchTruncated"] for x in over["files"][:-2])
        # What is stored is what was kept (read again from the row).
        again = await c.call("forge.pr", workspace_id=ws, repoId=f.repo["id"], number=2)
        assert [x["patchTruncated"] for x in again["files"]][-2:] == [True, True]


async def test_a_signed_body_replayed_under_a_new_delivery_id_is_ignored_for_seven_days(tmp_path: Path) -> None:
    """Anyone who captured one signed delivery could send its body again with an X-GitHub-Delivery of their own:
    the body, not the caller-chosen id, is what the signature vouches for, so a body taken once is ignored (with a
    clear answer, and without asking the forge again) for the same seven days a delivery id is remembered; a body
    never seen is taken."""
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    async with pulls_forge(tmp_path, clock=clock) as f:
        pull = add_pull_7(f)
        await with_pr_trigger(f)
        await f.owner.call("forge.setWebhookSecret", workspace_id=f.ws, secret=SECRET)
        captured = json.dumps(webhook_payload(f.gh, pull, "opened")).encode()
        first = await deliver(f.hook, "pull_request", captured, SECRET, delivery="d-1")
        assert first.status_code == 200 and first.json()["fired"] == "opened", first.text
        asked = len(f.gh.requests)

        replayed = await deliver(f.hook, "pull_request", captured, SECRET, delivery="d-replayed")
        assert replayed.status_code == 200, replayed.text
        assert replayed.json() == {
            "duplicate": True,
            "delivery": "d-replayed",
            "reason": "this signed body was delivered before (as d-1): a replay is ignored",
        }
        assert len(f.gh.requests) == asked  # the forge was not asked again
        # A new body (a genuine event) is taken.
        edited = await deliver(f.hook, "pull_request", webhook_payload(f.gh, pull, "edited"), SECRET, delivery="d-2")
        assert edited.status_code == 200 and "duplicate" not in edited.json(), edited.text
        # The window: at seven days the body is still remembered; one second past, it is forgotten and taken.
        clock.advance(webhooks.KEEP_DELIVERIES.total_seconds())
        still = await deliver(f.hook, "pull_request", captured, SECRET, delivery="d-7days")
        assert still.json().get("duplicate") is True, still.text
        clock.advance(1)
        later = await deliver(f.hook, "pull_request", captured, SECRET, delivery="d-7days-and-1s")
        assert later.status_code == 200 and "duplicate" not in later.json(), later.text
        assert len(await runs_of(f.owner, f.ws, 1)) == 1  # the head never moved: one run in all
        await f.srv.ctx.service(PipelineEngine).settle()
