"""User code of different trust never shares a process tree, and what a job leaves running dies with it.

Driven through the real server, in real enclosures: a repository's setup script leaves a spy behind that reads
every process's environment, then an agent holding a secret runs in that space; two agents of one space, each
with its own secret, run side by side and look for each other's secrets in processes and in their home; an agent
looks for another run's context file and writes that run's output file; a pipeline's shell steps leave processes
behind in every way a shell can (a new session, ``nohup``, a double fork, a step that times out) and a later step
looks for them; and a step lists what an enclosure shows of the host (its descriptors, ``/proc/1/cmdline``, its
mounts, ``df``) while the host checks what the enclosure's processes hold open.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

import hangar
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.integration.test_confined_user_code import finished, step, template
from tests.integration.test_space_provisioning import with_setup_script
from tests.integration.test_workspace_repos import make_repo
from tests.support.confined import host_processes_named
from tests.support.rpc import RpcClient
from tests.unit.agents.support import wait_run, workspace_server

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

SOURCE_TREE = Path(hangar.__file__).resolve().parent.parent
STOLEN = ("AGENT_TOKEN", "HANGAR_MCP_TOKEN")


async def gone(argv0: str) -> bool:
    """Whether no process named ``argv0`` is left (a killed namespace's processes take a moment to go)."""
    for _ in range(100):
        if not host_processes_named(argv0):
            return True
        await asyncio.sleep(0.05)
    return False


async def wait_for(path: Path, timeout: float = 60.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if path.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path.name} never appeared")


async def command_agent(client: RpcClient, ws: str, name: str, script: str, secret: str) -> str:
    adapter = {"type": "command", "argv": ["bash", "-c", script], "secretEnv": {"AGENT_TOKEN": secret}}
    return str((await client.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"])


async def test_a_setup_scripts_leftover_process_cannot_read_a_later_command_agents_secrets(tmp_path: Path) -> None:
    await ready_pack()
    spy = f"hangar-spy-{secrets.token_hex(4)}"
    secret = f"agent-secret-{secrets.token_hex(8)}"
    origin = make_repo(tmp_path / "src", "app")
    # The attack: the setup script leaves a process in a new session (nohup setsid ... &) that reads the
    # environment of every process it can see, again and again, into the worktree.
    with_setup_script(
        origin,
        "#!/bin/bash\n"
        "cat > /tmp/spy.sh <<'EOF'\n"
        "while true; do\n"
        "  for f in /proc/[0-9]*/environ; do\n"
        f"    tr '\\0' '\\n' < \"$f\" 2>/dev/null | grep -E '^({'|'.join(STOLEN)})=' >> \"$OUT/stolen.txt\"\n"
        "  done\n"
        '  touch "$OUT/spy.alive"\n'
        "  sleep 0.05\n"
        "done\n"
        "EOF\n"
        f"OUT=$PWD setsid nohup bash -c 'exec -a {spy} bash /tmp/spy.sh' >/dev/null 2>&1 &\n"
        "until [ -e spy.alive ]; do sleep 0.05; done\n",  # the spy demonstrably runs before the script ends
    )
    async with workspace_server(tmp_path) as (_srv, client, ws):
        await client.call("repos.register", workspace_id=ws, path=str(origin))
        space = await client.call("spaces.create", workspace_id=ws, title="spied", repoIds=["app"])
        assert space["provisioning"]["state"] == "ready", space
        worktree = Path(space["folder"]) / "app"
        assert (worktree / "spy.alive").exists()

        agent = await command_agent(client, ws, "Holder", "sleep 2; echo done", secret)
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space["id"], prompt="go")
        run = await wait_run(client, ws, started["runId"], timeout=60)
        assert run["outcome"] == "ok", run
        stolen = (worktree / "stolen.txt").read_text() if (worktree / "stolen.txt").exists() else ""
        assert secret not in stolen and "HANGAR_MCP_TOKEN" not in stolen, stolen
        assert await gone(spy), "the setup script's leftover process outlived the script"


async def test_two_agents_of_one_space_never_see_each_others_secrets(tmp_path: Path) -> None:
    await ready_pack()
    first, second = f"first-{secrets.token_hex(8)}", f"second-{secrets.token_hex(8)}"
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="shared")
        folder = Path(space["folder"])
        # The first agent keeps its secret in its home (as a CLI caching its credentials does) and keeps running.
        holder = await command_agent(
            client, ws, "Holder", 'echo "$AGENT_TOKEN" > "$HOME/creds"; touch holding; sleep 4; echo held', first
        )
        # The second looks for it in every process's environment and in the home it is given.
        looker = await command_agent(
            client,
            ws,
            "Looker",
            "for i in $(seq 15); do for f in /proc/[0-9]*/environ; do "
            f"tr '\\0' '\\n' < \"$f\" 2>/dev/null | grep -E '^({'|'.join(STOLEN)})='; "
            'done; cat "$HOME/creds" 2>/dev/null; sleep 0.1; done | sort -u; echo looked',
            second,
        )
        held = await client.call("agents.run", workspace_id=ws, agent_id=holder, space_id=space["id"], prompt="go")
        await wait_for(folder / "holding")
        looked = await client.call("agents.run", workspace_id=ws, agent_id=looker, space_id=space["id"], prompt="go")
        seen = await wait_run(client, ws, looked["runId"], timeout=60)
        assert seen["outcome"] == "ok", seen
        assert (await wait_run(client, ws, held["runId"], timeout=60))["outcome"] == "ok"
        messages = (await client.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"]
        said = [m["content"] for m in messages if m["author"]["kind"] == "agent"]
        looker_said = next(text for text in said if text.endswith("looked"))
        assert first not in looker_said, looker_said
        # only its own run's variables, which it was given (its secret comes back redacted)
        assert [line.split("=")[0] for line in looker_said.splitlines()[:-1]] in (
            ["AGENT_TOKEN", "HANGAR_MCP_TOKEN"],
            ["AGENT_TOKEN"],
        ), looker_said


async def test_an_agent_run_neither_reads_nor_forges_another_runs_context_or_output(tmp_path: Path) -> None:
    await ready_pack()
    private = f"victim-system-prompt-{secrets.token_hex(6)}"  # in the victim run's context file alone
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="shared")
        folder = Path(space["folder"])
        victim = await command_agent(client, ws, "Victim", "touch running; sleep 3; echo '{\"n\": 1}'", "v")
        await client.call("agents.update", workspace_id=ws, agent_id=victim, systemPrompt=private)
        # Another agent of the space reads every run's context file it can find and writes each one's output file.
        forger = await command_agent(
            client,
            ws,
            "Forger",
            "for i in $(seq 30); do "
            'for f in .hangar-context-*.json "$HOME"/.hangar/.hangar-context-*.json; do [ -e "$f" ] || continue; '
            'id=${f##*.hangar-context-}; id=${id%.json}; cat "$f" >> peeked.txt; '
            'echo \'{"n": 666}\' > "$(dirname "$f")/.hangar-output-$id.json"; done; sleep 0.1; done; echo forged',
            "f",
        )
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=victim, space_id=space["id"], prompt="go", outputSchema=schema
        )
        await wait_for(folder / "running")
        forging = await client.call("agents.run", workspace_id=ws, agent_id=forger, space_id=space["id"], prompt="go")
        run = await wait_run(client, ws, started["runId"], timeout=60)
        assert (await wait_run(client, ws, forging["runId"], timeout=60))["outcome"] == "ok"
        assert run["outcome"] == "ok" and run["output"] == {"n": 1}, run
        assert private not in (folder / "peeked.txt").read_text()


async def test_what_a_shell_step_leaves_running_is_killed_when_the_step_ends(tmp_path: Path) -> None:
    await ready_pack()
    mark = f"hangar-left-{secrets.token_hex(4)}"
    leave = (
        f"setsid nohup bash -c 'exec -a {mark}-session sleep 300' >/dev/null 2>&1 & "
        f"( bash -c 'exec -a {mark}-double sleep 300' & ) ; "
        f"nohup bash -c 'exec -a {mark}-nohup sleep 300' >/dev/null 2>&1 & "
        "echo warm > /tmp/warm-marker; echo left"
    )
    # the class [t] keeps grep's own command line from matching
    look = f"cat /tmp/warm-marker; grep -l '{mark[:-1]}[{mark[-1]}]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l"
    stall = f"setsid nohup bash -c 'exec -a {mark}-stalled sleep 300' >/dev/null 2>&1 & sleep 100"
    async with workspace_server(tmp_path) as (_srv, client, ws):
        raw = template(
            "leave", ("leave", leave, {}), ("look", look, {}), ("stall", stall, {"config": {"timeoutMs": 3000}})
        )
        await client.call("pipelines.templates.create", workspace_id=ws, template=raw)
        started = await client.call("pipelines.runs.start", workspace_id=ws, templateId="leave")
        run = await finished(client, ws, started["runId"])
        assert step(run, "leave")["status"] == "completed" and run["state"]["leave"] == "left"
        # a later step of the same run: the same warm enclosure (its /tmp), none of the processes left behind
        assert step(run, "look")["status"] == "completed", step(run, "look")
        assert run["state"]["look"].splitlines() == ["warm", "0"], run["state"]["look"]
        assert step(run, "stall")["status"] == "timedOut"
        for suffix in ("session", "double", "nohup", "stalled"):
            assert await gone(f"{mark}-{suffix}"), f"the {suffix} leftover survived its step"


def _host_paths(srv_data: Path) -> list[str]:
    return [str(srv_data), str(PACKS), str(PACKS.resolve()), str(SOURCE_TREE)]


async def test_an_enclosure_shows_no_host_path_and_holds_no_host_file(tmp_path: Path) -> None:
    await ready_pack()
    probe = (
        'for f in /proc/self/fd/*; do readlink "$f"; done; echo ---; '
        "tr '\\0' ' ' < /proc/1/cmdline; echo; echo ---; "
        "cat /proc/self/mountinfo; echo ---; df -a 2>&1; "
        "touch probed; sleep 3"
    )
    async with workspace_server(tmp_path) as (srv, client, ws):
        await client.call(
            "pipelines.templates.create", workspace_id=ws, template=template("probe", ("probe", probe, {}))
        )
        started = await client.call("pipelines.runs.start", workspace_id=ws, templateId="probe")
        await wait_for(srv.data_dir / "pipelines" / started["runId"] / "probed")
        # Seen from the host while the step runs: no process inside an enclosure holds a file of the host open.
        held = enclosed_descriptors()
        assert held and not [t for t in held if any(t.startswith(p) for p in _host_paths(srv.data_dir))], held
        run = await finished(client, ws, started["runId"])
        assert step(run, "probe")["status"] == "completed", step(run, "probe")
        fds, cmdline, mounts, df = run["state"]["probe"].split("---\n")
        seen = [fds, cmdline, df, mounts]
        # The step's working folder is a disk of its own (``hangar.core.disks``), mounted at its root: Linux
        # reports a mount's source relative to its file system, which then names nothing of the host.
        folders = [line.split()[3] for line in mounts.splitlines() if line.split()[4] == "/home/rig/worktree"]
        assert folders == ["/"], mounts
        leaks = [(path, text) for text in seen for path in _host_paths(srv.data_dir) if path in text]
        assert not leaks, leaks
        assert "lowerdir=image,upperdir=upper,workdir=work" in mounts


def enclosed_descriptors() -> list[str]:
    """What processes inside PID namespaces other than this one (enclosures) hold open, seen from the host."""
    here = Path("/proc/self/ns/pid").readlink()
    targets: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "ns" / "pid").readlink() == here:
                continue
            fds = list((entry / "fd").iterdir())
            targets += [str(fd.readlink()) for fd in fds]
        except OSError:
            continue
    return targets
