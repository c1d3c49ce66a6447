"""An agent's ``read_file`` and ``list_files`` read the space's folder while its guests change it: a member, from
their terminal in the space, swaps a plain file for a symlink to a root-only host file (and a folder for a symlink
to a host folder) in a tight loop with ``renameat2(RENAME_EXCHANGE)``, while the agent reads them again and
again. No tool result may ever carry what the links point at. Real server, real enclosure, real agent run."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

from tests.integration.rigs_env import rigs_server
from tests.integration.test_workspace_repos import make_repo
from tests.unit.agents.fake_openai import Reply, ToolCall, running_fake_openai, text
from tests.unit.agents.support import wait_run

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

TRIES = 40
# Run by the rig user in the worktree: the plain file and folder trade places with the links as fast as it can.
SWAPPER = r"""
import ctypes, os, time

libc = ctypes.CDLL(None, use_errno=True)
os.chdir("/home/rig/worktree")
open("x", "w").write("plain text\n")
os.mkdir("d"); open("d/inside.txt", "w").write("")
os.symlink(SECRET_FILE, "link")
os.symlink(SECRET_DIR, "dlink")
open("started", "w").close()
end = time.monotonic() + 150
n = 0
while not os.path.exists("stop") and time.monotonic() < end:
    n += 1
    libc.renameat2(-100, b"x", -100, b"link", 2)
    libc.renameat2(-100, b"d", -100, b"dlink", 2)
print("swapped", n, "times")
"""


async def test_a_racing_symlink_swap_never_reaches_the_agents_file_tools(tmp_path: Path) -> None:
    secret_file, secret_dir = tmp_path / "root-only.txt", tmp_path / "root-only"
    secret_file.write_text("TOP SECRET host file\n")
    secret_file.chmod(0o600)
    secret_dir.mkdir(mode=0o700)
    (secret_dir / "classified-name.txt").write_text("")
    repo = make_repo(tmp_path / "src", "app")
    async with running_fake_openai() as fake, rigs_server(tmp_path) as env:
        await env.call("repos.register", path=str(repo))
        space = await env.call("spaces.create", title="race", repoIds=["app"])
        worktree = Path(space["folder"]) / "app"
        rig = await env.open(space["id"])
        script = SWAPPER.replace("SECRET_FILE", repr(str(secret_file))).replace("SECRET_DIR", repr(str(secret_dir)))
        swapping = asyncio.create_task(env.call("rig.exec", rigId=rig, command=f"python3 -c {shlex.quote(script)}"))
        try:
            for _ in range(600):
                if (worktree / "started").exists() or swapping.done():
                    break
                await asyncio.sleep(0.1)
            assert (worktree / "started").exists(), swapping.done() and swapping.result()

            agent = await env.call(
                "agents.create", name="Reader", adapter={"type": "openai", "baseUrl": fake.url, "model": "race"}
            )
            # One turn per try, so the tries spread over the swapper's time instead of landing in one burst.
            turns = [
                Reply(tool_calls=(ToolCall("read_file", {"path": "app/x"}), ToolCall("list_files", {"path": "app/d"})))
                for _ in range(TRIES)
            ]
            fake.script("race", *turns, text("done"))
            started = await env.call(
                "agents.run", agent_id=agent["id"], space_id=space["id"], prompt="read it", max_turns=TRIES + 1
            )
            run = await wait_run(env.client, env.ws, started["runId"], timeout=120)
            assert run["outcome"] == "ok", run
        finally:
            (worktree / "stop").touch()
            swapped = await swapping
        assert swapped["stdout"].startswith("swapped "), swapped

    results = [m["content"] for m in fake.bodies_for("race")[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 2 * TRIES
    for result in results:
        assert "TOP SECRET" not in result and "classified-name" not in result, result
    # Each read found the plain file or was refused for the link, never anything else.
    reads, listings = results[0::2], results[1::2]
    assert set(reads) <= {
        "plain text\n",
        "app/x is outside your working folder or passes through a symbolic link",
    }
    assert set(listings) <= {
        "app/d/inside.txt",
        "app/d is outside your working folder or passes through a symbolic link",
    }
