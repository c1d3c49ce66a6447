"""Forge tokens for what a ``hangar worker`` runs: a command agent naming ``forgeRepos`` and a shell step naming
``repoIds`` get, from the server, the token a server gives them, for the worker's claim
(``hangar.agents.worker_forge``, ``hangar.agents.tools.worker_forge_link``).

Real processes: a ``hangar serve`` and a ``hangar worker --server`` on the suite's throwaway PostgreSQL cluster; the
GitHub API emulator (which mints, narrows and revokes installation tokens) and a git server over smart HTTP that
opens a repository only to a token the emulator minted for it, both in the test's process. The programs run on the
worker's host (trusted host execution), so they reach that git server on this host: each points the credential
helper it was given at it (``HANGAR_FORGE_HOST``), so git gets the token from the helper as in an enclosure.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.agents.tools.worker_forge_link import NO_SERVER_FORGE
from hangar.agents.worker_forge import FORGE_REVOKE_PATH, FORGE_TOKENS_PATH
from hangar.forges.github import STEP_PERMISSIONS
from hangar.pipelines.stepqueue import SAFETY_POLL_S, WAITS_FOR_SERVER_WORKER
from tests.integration.test_forges_broker import APP_ID, allow_minted, bare_forge, stored_anywhere
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import hangar_worker, mint, server, sql, workers_attached
from tests.integration.test_workers_agents import OPEN, ask, start
from tests.peers.git_http import GitHttp
from tests.peers.github_emulator import GitHubEmulator, github_emulator
from tests.support.processes import ServeProcess, cli
from tests.support.rpc import RpcClient
from tests.unit.agents.support import template

pytestmark = pytest.mark.slow


def push_script(git_port: int, branch: str) -> str:
    """Clone, commit and push to the git server on this host with the token the credential helper answers (git
    asks it for the host named in HANGAR_FORGE_HOST only), then say what it was given."""
    return (
        "cat > /dev/null 2>&1 || true; set -e; "
        f"export HANGAR_FORGE_HOST=127.0.0.1:{git_port}; d=$(mktemp -d); cd $d; "
        f"git clone -q http://127.0.0.1:{git_port}/acme/app.git work; cd work; "
        'git -c user.email=w@example.test -c user.name=worker commit -q --allow-empty -m "from a worker"; '
        f"git push -q origin HEAD:refs/heads/{branch}; cd /; rm -rf $d; "
        'echo "token=$GH_TOKEN same=$([ "$GH_TOKEN" = "$GITHUB_TOKEN" ] && echo yes) host=$GH_HOST"'
    )


@dataclass
class Forge:
    gh: GitHubEmulator
    git: GitHttp
    root: Path
    s: ServeProcess
    c: RpcClient
    ws: str
    repo: dict[str, Any]
    worker: subprocess.Popen[str]
    worker_cred: str
    token: str  # the owner's


@asynccontextmanager
async def forge_and_worker(tmp_path: Path, pg_url: str, *, given_server: bool = True) -> AsyncIterator[Forge]:
    """A server whose workspace is connected to the emulated GitHub app with one linked repo, and one worker
    (given the server with ``--server`` unless told not to)."""
    root = bare_forge(tmp_path)
    async with github_emulator() as gh:
        with GitHttp(root) as git, server(tmp_path, pg_url) as (s, token):
            mint(tmp_path / "server", pg_url, "pool", tmp_path / "cred")
            key = gh.add_app(APP_ID)
            gh.install(APP_ID, "acme", ["app", "other"])
            extra = ("--server", s.url) if given_server else ()
            with hangar_worker(tmp_path / "w1", pg_url, tmp_path / "cred", tmp_path / "w1.log", *extra) as worker:
                workers_attached(pg_url, 1)
                async with RpcClient(s.ws_url, token) as c:
                    ws = (await c.call("workspaces.create", name="forge"))["id"]
                    repo = await c.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
                    await c.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
                    await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                    git.needs_auth = True  # from now on, only a token minted for the repository opens it
                    git.authorize = allow_minted(gh)
                    cred = (tmp_path / "cred").read_text().strip()
                    yield Forge(gh, git, root, s, c, ws, repo, worker, cred, token)


def pushed(root: Path, branch: str) -> bool:
    found = subprocess.run(
        ["git", "rev-parse", "--verify", f"refs/heads/{branch}"], cwd=root / "acme" / "app.git", check=False
    )
    return found.returncode == 0


async def post(url: str, path: str, bearer: str | None, body: dict[str, Any]) -> httpx.Response:
    """A request of a worker's route, on the loop (the server may call the emulator, which answers on it)."""
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(f"{url}{path}", json=body, headers=headers)


async def until(check: Callable[[], Any], what: str, timeout: float = 120) -> Any:
    """Wait for ``check`` without blocking the loop (the GitHub emulator answers on it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if found := check():
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_workers_command_agent_and_shell_step_push_with_the_token_their_server_minted(
    tmp_path: Path, pg_url: str
) -> None:
    async with forge_and_worker(tmp_path, pg_url) as f:
        c, ws = f.c, f.ws
        adapter = {
            "type": "command",
            "argv": ["bash", "-c", push_script(f.git.port, "from-agent")],
            "forgeRepos": [f.repo["name"]],
        }
        agent = (await c.call("agents.create", workspace_id=ws, name="Pusher", adapter=adapter))["id"]
        shell = {
            "id": "sh",
            "body": "shell.run",
            "config": {"script": push_script(f.git.port, "from-shell"), "outputKey": "sh", "repoIds": [f.repo["id"]]},
        }
        run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "push"), shell, tid="push"))
        run = await finished(c, ws, run_id, timeout=300)
        worker_log = (tmp_path / "w1.log").read_text()
        assert run["status"] == "completed", (run, worker_log[-3000:])
        audit = await c.call("audit.list", workspace_id=ws)
        events = await c.call("events.list", workspace_id=ws)
        [agent_run] = (await c.call("runs.list", workspace_id=ws))["runs"]
        server_log = f.s.log_text()
        queue = sql(pg_url, "SELECT history, result FROM hangar_server.pipeline_step_queue")
    # Both programs pushed with the token, saw it as GH_TOKEN and GITHUB_TOKEN, and printed it redacted.
    said = "token=[redacted] same=yes host=github.com"
    assert run["state"]["cmd"] == said and run["state"]["sh"] == said
    assert pushed(f.root, "from-agent") and pushed(f.root, "from-shell")
    # They ran on the worker (the queue's history names it), not the server.
    assert len(queue) == 2 and all(h[-1]["outcome"] == "ok" for h, _ in queue)
    # A token each, minted by the server as for its own programs: the one repository, the steps' permissions,
    # ended when the program's run or step ended.
    assert [m.repositories for m in f.gh.minted] == [("acme/app",)] * 2
    assert all(m.permissions == STEP_PERMISSIONS and m.revoked for m in f.gh.minted)
    # No token in any log, audit row, event, run state, agent run or file of either data directory.
    tokens = [m.token for m in f.gh.minted]
    shown = server_log + worker_log + json.dumps([audit, events, run, agent_run, queue], default=str)
    assert not [t for t in tokens if t in shown]
    assert stored_anywhere(tmp_path / "server", tokens) == [] and stored_anywhere(tmp_path / "w1", tokens) == []


@dataclass
class Holding:
    f: Forge
    run_id: str  # the pipeline run's
    live: dict[str, str]  # the claim's ask: workspace, try and agent run
    token: str  # the token the agent's program holds


@asynccontextmanager
async def holding(tmp_path: Path, pg_url: str) -> AsyncIterator[Holding]:
    """A command agent's program on the worker holding the forge token it was given, until the block ends."""
    handed, go = tmp_path / "handed", tmp_path / "go"
    script = (
        f'cat > /dev/null; printf "%s" "$GH_TOKEN" > {handed}.part && mv {handed}.part {handed}; '
        f"while [ ! -e {go} ]; do sleep 0.1; done; echo done"
    )
    async with forge_and_worker(tmp_path, pg_url) as f:
        c, ws = f.c, f.ws
        adapter = {"type": "command", "argv": ["bash", "-c", script], "forgeRepos": [f.repo["name"]]}
        agent = (await c.call("agents.create", workspace_id=ws, name="Holder", adapter=adapter))["id"]
        run_id = await start(c, ws, template(OPEN, ask("cmd", agent, "hold"), tid="hold"))
        await until(handed.exists, "the agent's forge token")
        token = handed.read_text()
        assert f.gh.token_allows(token, "acme/app")
        [agent_run] = (await c.call("runs.list", workspace_id=ws))["runs"]
        live = {"workspaceId": ws, "tryKey": f"pipeline:{run_id}/cmd#1.1", "runId": agent_run["id"]}
        try:
            yield Holding(f, run_id, live, token)
        finally:
            go.touch()
            logs = f.s.log_text() + (tmp_path / "w1.log").read_text()
            assert not [m.token for m in f.gh.minted if m.token in logs]


async def test_a_forge_token_is_minted_only_for_a_claim_the_worker_credential_holds(
    tmp_path: Path, pg_url: str
) -> None:
    async with holding(tmp_path, pg_url) as h:
        f, live, url = h.f, h.live, h.f.s.url
        mint(tmp_path / "server", pg_url, "other", tmp_path / "other")
        other_cred = (tmp_path / "other").read_text().strip()
        seen: dict[str, Any] = {}
        # The claim's own worker credential gets one (what the worker asked for the program), and can end it.
        held = await post(url, FORGE_TOKENS_PATH, f.worker_cred, live)
        seen["holder"] = held.status_code
        extra = held.json()["token"]
        ended = await post(url, FORGE_REVOKE_PATH, f.worker_cred, {"workspaceId": live["workspaceId"], "token": extra})
        seen["ended"] = (ended.status_code, f.gh.token_allows(extra, "acme/app"))
        minted = len(f.gh.minted)
        # A claim the credential does not hold: another live worker credential; the holder naming a run that is
        # not the try's, or the agent step's try as if it were a shell step's; no credential, a device's.
        seen["other worker"] = (await post(url, FORGE_TOKENS_PATH, other_cred, live)).status_code
        not_its = {**live, "runId": "00000000-0000-4000-8000-000000000000"}
        seen["another run"] = (await post(url, FORGE_TOKENS_PATH, f.worker_cred, not_its)).status_code
        as_shell = {k: v for k, v in live.items() if k != "runId"}
        seen["not a shell step"] = (await post(url, FORGE_TOKENS_PATH, f.worker_cred, as_shell)).status_code
        seen["no credential"] = (await post(url, FORGE_TOKENS_PATH, None, live)).status_code
        seen["a device's"] = (await post(url, FORGE_TOKENS_PATH, f.token, live)).status_code
        malformed = {**live, "tryKey": "x"}
        seen["a malformed key"] = (await post(url, FORGE_TOKENS_PATH, f.worker_cred, malformed)).status_code
        seen["minted by the refusals"] = len(f.gh.minted) - minted
        seen["the program's still works"] = f.gh.token_allows(h.token, "acme/app")
    assert seen == {
        "holder": 200,
        "ended": (200, False),
        "other worker": 403,
        "another run": 403,
        "not a shell step": 403,
        "no credential": 401,
        "a device's": 401,
        "a malformed key": 400,
        "minted by the refusals": 0,
        "the program's still works": True,
    }


async def test_a_forge_token_is_refused_once_the_claims_lease_lapsed(tmp_path: Path, pg_url: str) -> None:
    async with holding(tmp_path, pg_url) as h:
        f, live = h.f, h.live
        # The worker stopped (SIGSTOP), so it renews nothing, and the claim's lease lapsed: refused to the holder.
        f.worker.send_signal(signal.SIGSTOP)
        try:
            lapse = "UPDATE hangar_server.pipeline_step_queue SET lease_until = now() - interval '1 second'"
            sql(pg_url, lapse + " WHERE run_id = %s AND step_id = 'cmd'", h.run_id)
            minted = len(f.gh.minted)
            lapsed = await post(f.s.url, FORGE_TOKENS_PATH, f.worker_cred, live)
        finally:
            f.worker.send_signal(signal.SIGCONT)
    assert lapsed.status_code == 403 and "not a live claim" in lapsed.json()["error"]["message"]
    assert len(f.gh.minted) == minted


async def test_a_forge_token_is_refused_to_a_revoked_worker_credential_and_its_tokens_are_ended(
    tmp_path: Path, pg_url: str
) -> None:
    async with holding(tmp_path, pg_url) as h:
        f, live = h.f, h.live
        minted = len(f.gh.minted)
        pool_id = f.worker_cred.split("_")[1]
        # The holder's own credential revoked mid-step: its ask refused saying so; its worker stops the program
        # and, with the revoked credential, has the token ended (ending is all a revoked credential may still ask).
        cli(tmp_path / "server", "admin", "worker-credential", "revoke", pool_id, "--database-url", pg_url)
        revoked = await post(f.s.url, FORGE_TOKENS_PATH, f.worker_cred, live)
        await until(lambda: not f.gh.token_allows(h.token, "acme/app"), "the program's token to be ended")
    assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]["message"]
    assert len(f.gh.minted) == minted
    assert [m.revoked for m in f.gh.minted] == [True]


async def test_a_worker_without_a_server_leaves_a_shell_step_naming_repos_and_fails_a_command_agent_saying_why(
    tmp_path: Path, pg_url: str
) -> None:
    """Without ``--server`` there is nobody to mint the token. A shell step naming ``repoIds`` says so in its
    config, so the worker never claims it: it stays queued, saying it waits for a worker with ``--server``, while
    the worker runs the run's other shell step (it used to be claimed and failed; before that, its ``repoIds``
    ignored and its script run without a token). A command agent's ``forgeRepos`` is the agent's, read when its
    turn runs, so its turn fails before its program starts, saying why."""
    async with forge_and_worker(tmp_path, pg_url, given_server=False) as f:
        c, ws = f.c, f.ws
        after_start = {"kind": "listen", "body": "shell.run", "trigger": {"sourceStepIds": ["start"]}}
        both = {
            "id": "shell",
            "steps": [
                {"id": "start", "kind": "trigger"},
                {**after_start, "id": "sh", "config": {"script": "echo ran", "repoIds": [f.repo["id"]]}},
                {**after_start, "id": "plain", "config": {"script": "echo plain", "outputKey": "plain"}},
            ],
        }
        await c.call("pipelines.templates.create", workspace_id=ws, template=both)
        shell_run = str((await c.call("pipelines.runs.start", workspace_id=ws, templateId="shell"))["runId"])
        rows = "SELECT step_id, status, tries, needs_server FROM hangar_server.pipeline_step_queue WHERE run_id = %s"

        def queue() -> dict[str, tuple[str, int, bool]]:
            return {step: (status, tries, needs) for step, status, tries, needs in sql(pg_url, rows, shell_run)}

        await until(lambda: queue().get("plain", ("",))[0] == "done", "the plain shell step on the worker")
        await asyncio.sleep(2 * SAFETY_POLL_S)  # the worker's safety polls pass over the other row too
        assert queue() == {"plain": ("done", 1, False), "sh": ("queued", 0, True)}
        run = await c.call("pipelines.runs.get", workspace_id=ws, runId=shell_run)
        [sh] = [st for st in run["steps"] if st["stepId"] == "sh"]
        assert run["status"] == "running" and sh["progress"] == {"waitingFor": WAITS_FOR_SERVER_WORKER}
        await c.call("pipelines.runs.cancel", workspace_id=ws, runId=shell_run)

        adapter = {"type": "command", "argv": ["bash", "-c", "echo ran"], "forgeRepos": [f.repo["name"]]}
        agent = (await c.call("agents.create", workspace_id=ws, name="Pusher", adapter=adapter))["id"]
        agent_run = await finished(c, ws, await start(c, ws, template(OPEN, ask("cmd", agent, "go"), tid="cmd")))
    assert agent_run["steps"][-2]["stepId"] == "cmd"
    assert agent_run["steps"][-2]["error"] == (
        f"the run of agent 'Pusher' ended failed: no forge token for the command: {NO_SERVER_FORGE}"
    )
    assert f.gh.minted == []
