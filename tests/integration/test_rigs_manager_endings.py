"""How rigs end besides a request: memory-budget eviction (LRU, never a rig in use), a process dying
underneath, the server stopping, the conversation ending, the opener losing membership."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import tempfile
from pathlib import Path

import pytest

from hangar.identity import IdentityService
from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.lifecycle.manager import RigManager
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_parts, rigs_server
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

pytestmark = pytest.mark.packs("terminal")


async def resident(env: RigsEnv, rig: str) -> int:
    await env.manager.sweep()
    mb = (await env.status(rig))["residentMb"]
    assert mb > 0  # measured from the rig's cgroup
    return int(mb)


async def wait_status(env: RigsEnv, rig: str, status: str) -> dict[str, object]:
    for _ in range(400):  # the backend notices a death on its own time
        row = await env.status(rig)
        if row["status"] == status:
            return row
        await asyncio.sleep(0.025)
    raise AssertionError(f"rig {rig} never reached {status}: {row}")


async def test_opening_past_the_budget_evicts_the_least_recently_used_idle_rig(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        older = await env.open()
        newer = await env.open(await env.new_space("b"))
        await env.exec(newer, "true")  # `newer` is the most recently used
        older_mb = await resident(env, older)
        used = older_mb + await resident(env, newer)
        # The next 512 MB terminal does not fit, and fits once `older` is gone: the budget sits in the middle of
        # that window so the few megabytes resident memory drifts between measurements cannot tip it.
        env.manager.budget_mb = used + 512 - max(1, older_mb // 2)
        third = await env.open(await env.new_space("c"))
        assert (await env.status(older))["closeReason"] == "idleTimeout"
        assert (await env.status(newer))["status"] == "ready"
        assert (await env.status(third))["status"] == "ready"
        reaped = await env.events("rigs.reaped")
        assert [(e["rigId"], e["cause"]) for e in reaped] == [(older, "memory")]


async def test_the_sweep_evicts_over_budget_but_never_a_rig_in_use(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        held = await env.open()
        idle = await env.open(await env.new_space("b"))
        await env.call("rig.takeControl", rigId=held)  # a person is driving `held`
        idle_mb = await resident(env, idle)
        total = await resident(env, held) + idle_mb
        env.manager.budget_mb = total - max(1, idle_mb // 2)  # over budget, and back under once `idle` goes
        await env.manager.sweep()
        assert (await env.status(idle))["closeReason"] == "idleTimeout"
        assert (await env.status(held))["status"] == "ready"
        # Everything left is in use: a new rig is refused, naming the budget, and nothing is evicted.
        env.manager.budget_mb = 1
        with pytest.raises(RpcError) as e:
            await env.call("rig.open", space_id=await env.new_space("c"), surface="terminal")
        assert e.value.code == "refused" and "memory budget" in e.value.message
        assert (await env.status(held))["status"] == "ready"


async def test_a_rig_whose_process_dies_fails_with_backend_failure(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        doomed = await env.open()
        other = await env.open(await env.new_space("b"))
        live = env.manager.live(env.ws, doomed)
        assert isinstance(live.handle, EnclosureRig) and live.handle.pid1 is not None
        os.kill(live.handle.pid1, signal.SIGKILL)
        await asyncio.wait_for(live.ended.wait(), 30)
        row = await env.status(doomed)
        assert row["status"] == "failed"
        assert row["closeReason"] == "backendFailure"
        assert "died underneath it (bubblewrap's status" in str(row["statusDetail"]), row
        assert "memory limit" not in str(row["statusDetail"])  # a kill from outside is not the kernel's OOM
        closed = await env.events("rigs.closed")
        assert [(e["rigId"], e["reason"], e["phase"]) for e in closed] == [(doomed, "backendFailure", "failed")]
        with pytest.raises(RpcError) as e:
            await env.exec(doomed, "true")
        assert e.value.code == "not_found" and "failed" in e.value.message
        # Other rigs are unaffected, and the conversation can open a fresh one.
        assert (await env.exec(other, "echo fine"))["stdout"] == "fine\n"
        assert await env.open() not in (doomed, other)


async def test_stopping_the_server_closes_every_rig(tmp_path: Path) -> None:
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hr-", dir="/tmp") as short:
        data = Path(short)
        async with running_server(data, parts=rigs_parts()) as srv:
            ws = await srv.new_workspace()
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                space = (await c.call("spaces.create", workspace_id=ws, title="s"))["id"]
                rig = (await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"]
        async with running_server(data, parts=rigs_parts()) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            rows = await c.call("rig_list", workspace_id=ws, includeClosed=True)
            closed = await c.call("events.list", workspace_id=ws, types=["rigs.closed"])
        assert [(r["rigId"], r["status"], r["closeReason"]) for r in rows] == [(rig, "closed", "serverShutdown")]
        assert [e["payload"]["reason"] for e in closed] == ["serverShutdown"]
        assert not (data / "rigs" / "homes" / rig).exists()


async def test_archiving_the_space_ends_its_rig(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await env.call("spaces.archive", space_id=env.space)
        await env.srv.ctx.bus.drain()
        row = await wait_status(env, rig, "closed")
        assert row["closeReason"] == "conversationEnded"
        with pytest.raises(RpcError) as e:
            await env.call("rig.open", space_id=env.space, surface="terminal")
        assert e.value.code == "refused" and "archived" in e.value.message


async def test_losing_membership_closes_the_rigs_you_opened(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        token = await env.srv.new_user_token(env.ws, "member", name="leaver")
        async with RpcClient(env.srv.ws_url, token) as member:
            rig = (await member.call("rig.open", workspace_id=env.ws, space_id=env.space, surface="terminal"))["rigId"]
            me = await member.call("users.me")
        await env.call("members.remove", user_id=me["id"])
        await env.srv.ctx.bus.drain()  # the removal is an event; no sweep needed
        row = await env.status(rig)
        assert (row["status"], row["closeReason"]) == ("closed", "workspaceGone")


async def test_the_sweep_notices_lost_membership_without_an_event(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        token = await env.srv.new_user_token(env.ws, "member", name="quiet")
        async with RpcClient(env.srv.ws_url, token) as member:
            rig = (await member.call("rig.open", workspace_id=env.ws, space_id=env.space, surface="terminal"))["rigId"]
            me = await member.call("users.me")
        await env.srv.ctx.service(IdentityService).remove_member(env.ws, me["id"])  # straight to the store: no event
        assert (await env.status(rig))["status"] == "ready"
        await env.manager.sweep()
        assert (await env.status(rig))["closeReason"] == "workspaceGone"


@pytest.mark.sqlite_only("it edits the workspace.db a stopped server left (on PostgreSQL the sweep closes such rows)")
async def test_rows_a_crashed_server_left_live_are_closed_at_start(tmp_path: Path) -> None:
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hr-", dir="/tmp") as short:
        data = Path(short)
        async with running_server(data, parts=rigs_parts()) as srv:
            ws = await srv.new_workspace()
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                space = (await c.call("spaces.create", workspace_id=ws, title="s"))["id"]
                rig = (await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"]
        # What a killed process leaves behind: the row still says ready.
        db = sqlite3.connect(data / ws / "workspace.db")
        with db:
            db.execute("UPDATE rig_sessions SET phase='ready', close_reason=NULL WHERE id=?", (rig,))
        db.close()
        async with running_server(data, parts=rigs_parts()) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            [row] = await c.call("rig_list", workspace_id=ws, includeClosed=True)
        assert (row["status"], row["closeReason"]) == ("closed", "serverShutdown")
        assert "stopped before closing" in row["statusDetail"]


async def test_a_process_that_starts_beside_a_live_server_leaves_its_rigs_alone(tmp_path: Path) -> None:
    """A second server (or a ``hangar`` command that starts every part) on the same records closes only the rows
    whose rig died with its process: at its start and at its sweeps, the first server's rig stays live."""
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hr-", dir="/tmp") as short:
        data = Path(short)
        async with running_server(data, parts=rigs_parts()) as first:
            ws = await first.new_workspace()
            async with RpcClient(first.ws_url, first.owner_token) as c:
                space = (await c.call("spaces.create", workspace_id=ws, title="s"))["id"]
                rig = (await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"]
                async with running_server(data, parts=rigs_parts()) as second:
                    await second.ctx.service(RigManager).sweep()
                    async with RpcClient(second.ws_url, second.owner_token) as other:
                        [row] = await other.call("rig_list", workspace_id=ws, includeClosed=True)
                    assert (row["status"], row["closeReason"]) == ("ready", None)
                    done = await c.call("rig.exec", workspace_id=ws, rigId=rig, command="echo alive")
                    assert "alive" in done["stdout"]
                [row] = await c.call("rig_list", workspace_id=ws, includeClosed=True)
                assert row["status"] == "ready"


async def test_the_server_owner_sets_the_memory_budget(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        status = await env.client.call("rigs.status")
        assert status["backend"] == "enclosure" and status["unavailableReason"] is None
        assert status["memoryBudgetMb"] == 12 * 1024 and status["liveRigs"] == 1 and status["residentMb"] > 0
        with pytest.raises(RpcError) as e:
            await env.client.call("rigs.setMemoryBudget", memoryBudgetMb=100)
        assert e.value.code == "invalid_args" and "memoryBudgetMb" in e.value.message
        member = await env.srv.new_user_token(env.ws, "admin", name="admin")
        async with RpcClient(env.srv.ws_url, member) as a:
            with pytest.raises(RpcError) as e:
                await a.call("rigs.setMemoryBudget", memoryBudgetMb=4096)
            assert e.value.code == "forbidden"
        # The smallest budget still holds one idle terminal; it applies at once and is kept as a server setting.
        status = await env.client.call("rigs.setMemoryBudget", memoryBudgetMb=512)
        assert status["memoryBudgetMb"] == 512 and env.manager.budget_mb == 512
        assert (await env.status(rig))["status"] == "ready"
        assert await env.srv.ctx.service(IdentityService).get_setting("rigs.memoryBudgetMb") == 512
        # With it full, the next terminal (512 MB ceiling) evicts the idle one.
        await env.open(await env.new_space("b"))
        assert (await env.status(rig))["closeReason"] == "idleTimeout"
