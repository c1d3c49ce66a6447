"""The credential broker hands a shell step a short-lived forge token, for the repos the step names, in a real
enclosure: git clones and pushes over real smart HTTP through the credential helper, the token narrowed to the one
repository and the step's permissions, revoked when the step ends, and in no log, audit row, event or output. It is
refused, failing the step with the reason, when no forge is connected, the repo is not linked, the forge's host is
not on the enclosure's egress allowlist, or the forge is connected with a token. A command agent naming
``forgeRepos`` gets the same for its run.

The enclosure reaches ``github.com`` (on its default allowlist) through the egress gate's test overrides, which
send it to the git server on this host; the server reaches the GitHub API emulator at its own address."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hangar.forges.github import STEP_PERMISSIONS
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_confined_user_code import finished, step
from tests.integration.test_workspace_repos import _git, make_repo
from tests.peers.git_http import GitHttp
from tests.peers.github_emulator import GitHubEmulator, github_emulator
from tests.support.runs import assert_completed
from tests.unit.agents.support import wait_run

APP_ID = 77

CLONE_AND_PUSH = """
set -e
git clone -q http://github.com/acme/app.git work
cd work
git -c user.email=s@example.test -c user.name=step commit -q --allow-empty -m "from the step"
git push -q origin HEAD:refs/heads/from-step
echo "token=$GH_TOKEN same=$([ "$GH_TOKEN" = "$GITHUB_TOKEN" ] && echo yes) host=$GH_HOST"
"""


def template(tid: str, script: str, repo_ids: list[str]) -> dict[str, Any]:
    return {
        "id": tid,
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "git",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": script, "outputKey": "git", "repoIds": repo_ids},
            },
        ],
    }


async def run(env: RigsEnv, tid: str, script: str, repo_ids: list[str]) -> dict[str, Any]:
    c, ws = env.client, env.ws
    await c.call("pipelines.templates.create", workspace_id=ws, template=template(tid, script, repo_ids))
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid)
    return await finished(c, ws, started["runId"], timeout=600)


def bare_forge(tmp_path: Path) -> Path:
    root = tmp_path / "forge"
    (root / "acme").mkdir(parents=True)
    bare = root / "acme" / "app.git"
    _git(tmp_path, "clone", "-q", "--bare", str(make_repo(tmp_path / "src", "app")), str(bare))
    _git(bare, "config", "http.receivepack", "true")
    return root


def allow_minted(gh: GitHubEmulator) -> Any:
    def authorize(path: str, user: str, password: str) -> bool:
        full = path.lstrip("/").split(".git", 1)[0]
        return user == "x-access-token" and gh.token_allows(password, full)

    return authorize


def stored_anywhere(data_dir: Path, secrets: list[str]) -> list[str]:
    """The files under the data directory holding any of ``secrets``: databases, logs, run directories, rig
    state. The quota disks' image files are left out (their content is the run directories, read as files)."""
    needles = [s.encode() for s in secrets]
    found = []
    for path in data_dir.rglob("*"):
        if "disks" in path.relative_to(data_dir).parts[:1] or not path.is_file() or path.is_symlink():
            continue
        try:
            with path.open("rb") as fh:
                tail = b""
                while chunk := fh.read(1 << 20):
                    if any(n in tail + chunk for n in needles):
                        found.append(str(path))
                        break
                    tail = chunk[-128:]
        except OSError:
            continue
    return found


@pytest.mark.packs("terminal")
async def test_a_shell_step_clones_and_pushes_with_a_brokered_token_revoked_at_its_end_and_shown_nowhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    root = bare_forge(tmp_path)
    async with github_emulator() as gh:
        with GitHttp(root) as git:
            overrides = {"github.com:80": ("127.0.0.1", git.port)}
            async with rigs_server(tmp_path, overrides=overrides) as env:
                c, ws = env.client, env.ws
                key = gh.add_app(APP_ID)
                gh.install(APP_ID, "acme", ["app", "other"])
                repo = await c.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
                git.needs_auth = True  # from now on, only a token minted for the repository opens it
                git.authorize = allow_minted(gh)
                git.requests.clear()

                # no forge connected yet: the step is refused with the reason, nothing minted
                unconnected = await run(env, "before", "echo ran", [repo["id"]])
                assert unconnected["status"] == "failed"
                assert step(unconnected, "git")["error"].startswith("no forge is connected to this workspace")

                await c.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
                unlinked = await run(env, "unlinked", "echo ran", [repo["id"]])
                assert step(unlinked, "git")["error"].startswith(
                    f"repo {repo['name']} is not linked to a repository on github.com"
                )
                assert gh.minted == []

                await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                done = await run(env, "push", CLONE_AND_PUSH, [repo["id"]])
                assert_completed(done)
                assert done["state"]["git"] == "token=[redacted] same=yes host=github.com"

                [minted] = gh.minted
                assert minted.repositories == ("acme/app",) and minted.permissions == STEP_PERMISSIONS
                assert minted.revoked  # ended with the step
                pushed = subprocess.run(
                    ["git", "rev-parse", "--verify", "refs/heads/from-step"], cwd=root / "acme" / "app.git", check=False
                )
                assert pushed.returncode == 0
                assert any("git-receive-pack" in r for r in git.requests)
                # the ended token no longer opens the repository
                assert not gh.token_allows(minted.token, "acme/app")

                # a step with no repoIds gets no token and asks for none
                plain = await run(env, "plain", 'echo "[$GH_TOKEN]"', [])
                assert plain["state"]["git"] == "[]" and len(gh.minted) == 1

                # a token the step prints to stderr fails the step with it redacted
                leak = await run(env, "leak", 'echo "leaked $GH_TOKEN" >&2; exit 3', [repo["id"]])
                error = step(leak, "git")["error"]
                assert "leaked [redacted]" in error and gh.minted[-1].token not in error
                assert all(m.revoked for m in gh.minted)  # a failed step's token ends with it too

                tokens = [m.token for m in gh.minted]
                shown = json.dumps(await c.call("pipelines.runs.list", workspace_id=ws))
                shown += json.dumps(await c.call("audit.list", workspace_id=ws))
                shown += json.dumps(await c.call("events.list", workspace_id=ws))
                logged = "\n".join(r.getMessage() for r in caplog.records)
                for token in tokens:
                    assert token not in shown and token not in logged
                assert stored_anywhere(env.srv.data_dir, tokens) == []


@pytest.mark.packs("terminal")
async def test_no_token_is_minted_for_a_forge_host_the_enclosure_cannot_reach_or_for_a_token_connection(
    tmp_path: Path,
) -> None:
    root = bare_forge(tmp_path)
    async with github_emulator() as gh:
        with GitHttp(root) as git:
            async with rigs_server(tmp_path) as env:
                c, ws = env.client, env.ws
                key = gh.add_app(APP_ID)
                gh.install(APP_ID, "acme", ["app"])
                repo = await c.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
                # a GitHub Enterprise Server whose host is on no default allowlist
                await c.call(
                    "forge.connect",
                    workspace_id=ws,
                    appId=APP_ID,
                    privateKey=key,
                    baseUrl="https://ghe.example.test",
                    apiUrl=gh.api_url,
                )
                await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                far = await run(env, "far", "echo ran", [repo["id"]])
                assert far["status"] == "failed"
                assert step(far, "git")["error"] == (
                    "the enclosure's egress allowlist does not reach ghe.example.test: no token is minted for a host "
                    "it cannot reach"
                )
                gh.user_tokens["ghp_long_lived_token"] = "ada"
                await c.call("forge.connect", workspace_id=ws, token="ghp_long_lived_token", apiUrl=gh.api_url)
                await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                with_token = await run(env, "with-token", "echo ran", [repo["id"]])
                assert "cannot be narrowed to one repository" in step(with_token, "git")["error"]
                assert gh.minted == []


@pytest.mark.packs("terminal")
async def test_a_command_agent_naming_forge_repos_pushes_with_a_token_that_ends_with_its_run(tmp_path: Path) -> None:
    root = bare_forge(tmp_path)
    async with github_emulator() as gh:
        with GitHttp(root) as git:
            overrides = {"github.com:80": ("127.0.0.1", git.port)}
            async with rigs_server(tmp_path, overrides=overrides) as env:
                c, ws = env.client, env.ws
                key = gh.add_app(APP_ID)
                gh.install(APP_ID, "acme", ["app"])
                repo = await c.call("repos.register", workspace_id=ws, url=git.url("acme/app.git"))
                git.needs_auth = True
                git.authorize = allow_minted(gh)
                script = "cd /tmp && rm -rf work && " + CLONE_AND_PUSH.replace("set -e\n", "set -e; ")
                adapter = {"type": "command", "argv": ["bash", "-c", script], "forgeRepos": [repo["name"]]}
                agent = await c.call("agents.create", workspace_id=ws, name="Pusher", adapter=adapter)

                async def run_agent() -> dict[str, Any]:
                    started = await c.call(
                        "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=env.space, prompt="push"
                    )
                    return await wait_run(c, ws, started["runId"], timeout=600)

                refused = await run_agent()  # no forge connected yet
                assert refused["outcome"] == "failed"
                assert refused["error"].startswith("no forge token for the command: no forge is connected")

                await c.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
                await c.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
                run = await run_agent()
                assert run["outcome"] == "ok", run
                messages = (await c.call("messages.list", workspace_id=ws, space_id=env.space))["messages"]
                assert messages[-1]["content"] == "token=[redacted] same=yes host=github.com"
                [minted] = gh.minted
                assert minted.repositories == ("acme/app",) and minted.revoked
                assert (
                    minted.token not in json.dumps(messages) and stored_anywhere(env.srv.data_dir, [minted.token]) == []
                )
