"""Pull requests are records of the workspace's database, synced in serialized transactions: two ``hangar serve``
processes on one data directory given two deliveries of a new pull request at once keep one pull request and one
space and start one run of its trigger, and given the same delivery at once take it once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hangar.forges import webhooks
from tests.integration.test_workspace_repos import make_repo
from tests.peers.github_emulator import github_emulator
from tests.peers.github_pulls import deliver, webhook_payload
from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.slow

SECRET = "two-processes-secret"
ONLY_A_TRIGGER = {"id": "on-pr", "name": "On a pull request", "steps": [
    {"id": "start", "kind": "trigger", "body": "pipeline.trigger"}], "edges": []}  # fmt: skip


async def test_two_server_processes_take_a_delivery_once_and_announce_a_head_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = make_repo(tmp_path / "src", "app")
    async with github_emulator() as gh:
        gh.user_tokens["ghp_pulls"] = "ada"
        pull = gh.add_pull("acme/app", 7, title="Twice", head_sha="a" * 40)
        with hangar_serve(data, "--no-prepare-pack") as a, hangar_serve(data, "--no-prepare-pack") as b:
            token = owner_token(data)
            async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
                ws = (await ca.call("workspaces.create", name="pulled"))["id"]
                await ca.call("forge.connect", workspace_id=ws, token="ghp_pulls", apiUrl=gh.api_url)
                repo = (await ca.call("repos.register", workspace_id=ws, path=str(source)))["id"]
                await ca.call("forge.linkRepo", workspace_id=ws, repoId=repo, fullName="acme/app")
                await ca.call("forge.setWebhookSecret", workspace_id=ws, secret=SECRET)
                await ca.call("pipelines.templates.create", workspace_id=ws, template=ONLY_A_TRIGGER)
                await ca.call("pipelines.triggers.create", workspace_id=ws, templateId="on-pr", kind="pullRequest")
                body = webhook_payload(gh, pull, "opened")
                hooks = [s.url.rstrip("/") + webhooks.webhook_path(ws) for s in (a, b)]

                # A new pull request synced by both at once: one row, one space kept (the loser's archived). (Two
                # deliveries of one event: their bodies differ as GitHub's do, else the second is a replay.)
                other = await asyncio.gather(
                    *(
                        deliver(h, "pull_request", {**body, "hook": i}, SECRET, delivery=f"d-{i}")
                        for i, h in enumerate(hooks)
                    )
                )
                assert all(r.status_code == 200 for r in other), [r.text for r in other]
                same = await asyncio.gather(*(deliver(h, "pull_request", body, SECRET, delivery="one") for h in hooks))
                assert sorted("duplicate" in r.json() for r in same) == [False, True], [r.text for r in same]
                # One signed body under two new ids, one to each process at once: taken once (the body's hash is
                # in the workspace's database, which both use).
                replayed = {**body, "hook": "replayed"}
                twice = await asyncio.gather(
                    *(deliver(h, "pull_request", replayed, SECRET, delivery=f"r-{i}") for i, h in enumerate(hooks))
                )
                assert sorted("duplicate" in r.json() for r in twice) == [False, True], [r.text for r in twice]
                assert any("a replay is ignored" in r.text for r in twice), [r.text for r in twice]
                assert [r.json()["fired"] for r in [*same, *other] if "fired" in r.json()].count("opened") == 1

                for client in (ca, cb):
                    (row,) = (await client.call("forge.prs", workspace_id=ws))["pulls"]
                    assert row["headSha"] == "a" * 40
                spaces = [s for s in (await cb.call("spaces.list", workspace_id=ws))["spaces"] if "#7" in s["title"]]
                assert [s["id"] for s in spaces] == [row["spaceId"]]
                for _ in range(200):
                    runs = (await cb.call("pipelines.runs.list", workspace_id=ws))["runs"]
                    if runs:
                        break
                    await asyncio.sleep(0.05)
                await asyncio.sleep(1.0)  # a second run, were one started, would be listed by now
                assert len((await ca.call("pipelines.runs.list", workspace_id=ws))["runs"]) == 1
