"""Take-over: while a person holds control, others' mutating verbs are refused and observations allowed;
hand back restores them; every change is an event and a line in the rig's action log."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.rigs_env import rigs_server
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
