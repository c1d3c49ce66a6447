"""Take-over: while a person holds control, others' mutating verbs are refused and observations allowed;
hand back restores them; every change is an event and a line in the rig's action log."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.identity import IdentityService
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcClient, RpcError

pytestmark = pytest.mark.packs("terminal")


async def test_take_over_refuses_mutations_allows_observations_and_hands_back(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()  # the owner (think: the agent's side) drives it
        token = await env.srv.new_user_token(env.ws, "member", name="pat")
        async with RpcClient(env.srv.ws_url, token) as pat:
            me = await pat.call("users.me")
            taken = await pat.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
            assert taken == {"rigId": rig, "controller": me["id"]}
            row = await env.status(rig)
            assert row["controller"] == {"userId": me["id"], "displayName": "pat"}

            with pytest.raises(RpcError) as e:
                await env.exec(rig, "touch ~/should-not-exist")
            assert e.value.code == "refused" and "holds control" in e.value.message
            with pytest.raises(RpcError) as e:
                await env.call("rig.sharePort", rigId=rig, guestPort=8000)
            assert e.value.code == "refused"
            # Observations stay allowed for everyone.
            assert (await env.call("rig.ports", rigId=rig))["ports"] == []
            assert [r["rigId"] for r in await env.call("rig_list")] == [rig]
            # The person in control drives.
            out = await pat.call(
                "rig.exec", workspace_id=env.ws, rigId=rig, command="test -e ~/should-not-exist; echo $?"
            )
            assert out["stdout"] == "1\n"
            # A second person cannot snatch control.
            other = await env.srv.new_user_token(env.ws, "member", name="sam")
            async with RpcClient(env.srv.ws_url, other) as sam:
                with pytest.raises(RpcError) as e:
                    await sam.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
                assert e.value.code == "refused"
                with pytest.raises(RpcError) as e:
                    await sam.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
                assert e.value.code == "refused"

            assert await pat.call("rig.releaseControl", workspace_id=env.ws, rigId=rig) == {
                "rigId": rig,
                "controller": None,
            }
        assert (await env.exec(rig, "echo back"))["stdout"] == "back\n"
        changes = await env.events("rigs.controlChanged")
        assert [(c["change"], c["userId"]) for c in changes] == [("takeover", me["id"]), ("handback", me["id"])]
        log = await env.manager.store.actions(env.ws, rig)
        assert [e.seq for e in log] == list(range(1, len(log) + 1))
        verbs = [(e.verb, e.principal) for e in log]
        assert ("takeControl", f"user:{me['id']}") in verbs and ("releaseControl", f"user:{me['id']}") in verbs
        # Commands are kept as a length and a hash, never as text.
        execs = [e.details for e in log if e.verb == "exec"]
        assert execs and all(set(d["command"]) == {"length", "sha256"} for d in execs)
        assert "should-not-exist" not in repr([e.details for e in log])
        wire = await env.call("rig.actionLog", rigId=rig)
        assert [(w["seq"], w["verb"], w["principal"]) for w in wire] == [(e.seq, e.verb, e.principal) for e in log]


async def test_an_admin_can_hand_back_a_stuck_take_over(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        token = await env.srv.new_user_token(env.ws, "member", name="gone")
        async with RpcClient(env.srv.ws_url, token) as gone:
            await gone.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        assert (await env.call("rig.releaseControl", rigId=rig))["controller"] is None  # the owner is admin+
        assert (await env.exec(rig, "echo ok"))["stdout"] == "ok\n"


async def _held_by(env: RigsEnv, rig: str, name: str) -> str:
    """A new member ``name`` takes control of ``rig``; their user id."""
    token = await env.srv.new_user_token(env.ws, "member", name=name)
    async with RpcClient(env.srv.ws_url, token) as person:
        await person.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        return str((await person.call("users.me"))["id"])


async def test_control_held_by_a_removed_member_is_handed_back_at_once(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()  # opened by the owner: it stays open when the holder leaves
        holder = await _held_by(env, rig, "leaver")
        await env.call("members.remove", user_id=holder)
        await env.srv.ctx.bus.drain()  # the removal is an event; no sweep needed
        assert (await env.status(rig))["controller"] is None
        assert (await env.exec(rig, "echo free"))["stdout"] == "free\n"  # nobody else is refused any more
        changes = await env.events("rigs.controlChanged")
        assert [(e["change"], e["userId"]) for e in changes] == [("takeover", holder), ("handback", holder)]
        log = await env.manager.store.actions(env.ws, rig)
        assert [(e.verb, e.principal, e.details) for e in log if e.verb == "releaseControl"] == [
            ("releaseControl", "server", {"forced": True, "reason": "accessEnded"})
        ]


async def test_control_stays_with_a_member_whose_role_changes_but_not_below_member(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        holder = await _held_by(env, rig, "promoted")
        await env.call("members.setRole", user_id=holder, role="admin")
        await env.srv.ctx.bus.drain()
        await env.manager.sweep()
        assert (await env.status(rig))["controller"]["userId"] == holder
        await env.call("members.setRole", user_id=holder, role="guest")  # below member: may not drive a rig
        await env.srv.ctx.bus.drain()
        assert (await env.status(rig))["controller"] is None


async def test_the_sweep_hands_back_control_of_a_member_removed_without_an_event(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        holder = await _held_by(env, rig, "quiet")
        await env.srv.ctx.service(IdentityService).remove_member(env.ws, holder)  # straight to the store: no event
        assert (await env.status(rig))["controller"]["userId"] == holder
        await env.manager.sweep()
        assert (await env.status(rig))["controller"] is None
