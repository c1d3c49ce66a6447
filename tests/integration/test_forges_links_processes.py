"""Repo links given by hand are records of the workspace's database: two ``hangar serve`` processes on one data
directory linking repos at the same moment keep every link, and each reads the other's at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.test_workspace_repos import make_repo
from tests.peers.github_emulator import github_emulator
from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.slow

REPOS = 12
ROUNDS = 3


async def test_links_made_at_once_by_two_server_processes_are_all_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sources = [make_repo(tmp_path / "src", f"r{i}") for i in range(REPOS)]
    async with github_emulator() as gh:
        gh.user_tokens["ghp_links"] = "ada"
        with hangar_serve(data, "--no-prepare-pack") as a, hangar_serve(data, "--no-prepare-pack") as b:
            token = owner_token(data)
            async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
                ws = (await ca.call("workspaces.create", name="linked"))["id"]
                await ca.call("forge.connect", workspace_id=ws, token="ghp_links", apiUrl=gh.api_url)
                repos = [(await ca.call("repos.register", workspace_id=ws, path=str(s)))["id"] for s in sources]
                for n in range(ROUNDS):
                    # each process links half of the repos, all at once
                    await asyncio.gather(
                        *(
                            (ca if i % 2 else cb).call(
                                "forge.linkRepo", workspace_id=ws, repoId=repo, fullName=f"acme/r{i}-{n}"
                            )
                            for i, repo in enumerate(repos)
                        )
                    )
                    expected = {repo: f"acme/r{i}-{n}" for i, repo in enumerate(repos)}
                    for client in (ca, cb):
                        links = (await client.call("forge.status", workspace_id=ws))["links"]
                        assert {k["repoId"]: k["fullName"] for k in links if k["how"] == "given"} == expected, n
                # dropping a link through one process is seen by the other at once
                await ca.call("forge.linkRepo", workspace_id=ws, repoId=repos[0])
                links = (await cb.call("forge.status", workspace_id=ws))["links"]
                assert repos[0] not in [k["repoId"] for k in links] and len(links) == REPOS - 1
