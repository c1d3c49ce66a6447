"""What a rig's egress gate refuses reaches the people watching the rig, not only the server log: ``rig.watch`` tells
each refusal as an ``egress`` event naming the host and the rule (once, then at most every few seconds while it
recurs), and its first reply lists the latest ones. Only those who may watch the rig hear of it: a guest, a member
of another workspace and a credential limited to another space are refused the watch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.identity import DeviceScope, IdentityService
from hangar.rigs.live.refusals import KEPT
from tests.integration.rigs_env import rigs_server
from tests.support.rpc import RpcClient, RpcError, Watch

pytestmark = pytest.mark.packs("terminal")

BLOCKED = "not-granted.example"


async def egress_event(watch: Watch, host: str) -> dict[str, Any]:
    """The next ``egress`` event about ``host`` (other activity, the commands themselves, passes by)."""
    while True:
        event = await watch.next(timeout=30)
        if event.get("type") == "egress" and event["refusal"]["host"] == host:
            return dict(event["refusal"])


async def test_a_refused_host_is_told_to_the_rigs_watchers_with_its_rule(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        watch = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        assert watch.result["egress"] == []
        out = await env.exec(rig, f"curl -sS -m 5 http://{BLOCKED}/ 2>&1; curl -sS -m 5 https://{BLOCKED}/ 2>&1")
        assert "Could not resolve host" in out["stdout"]  # all the program can say
        refusal = await egress_event(watch, BLOCKED)
        assert (refusal["rule"], refusal["kind"], refusal["grantable"]) == ("allowlist", "dns", True)
        assert refusal["reason"] == "name not allow-listed" and refusal["at"].endswith("Z")
        # A connection around the gate, to an address: its own rule, and no grant lets it by.
        await env.exec(rig, "curl -sS -m 3 http://192.0.2.7:8080/ 2>&1 || true")
        direct = await egress_event(watch, "192.0.2.7:8080")
        assert (direct["rule"], direct["kind"], direct["grantable"]) == ("direct", "tcp", False)
        await watch.close()

        # The rig's status lists them, each host and rule once however often it recurred.
        again = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        listed = {(r["host"], r["rule"]): r for r in again.result["egress"]}
        assert set(listed) == {(BLOCKED, "allowlist"), ("192.0.2.7:8080", "direct")}
        assert listed[(BLOCKED, "allowlist")]["count"] >= 2  # asked for twice (and per address family)
        await again.close()

        # An admin grants the host: it resolves from then on, and its notice is done with (the watchers are told).
        granted = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        await env.call("rig.grantHosts", rigId=rig, hosts=[f"*.{BLOCKED.split('.', 1)[1]}"])
        while (event := await granted.next(timeout=30))["type"] != "egressGranted":
            pass
        assert event["hosts"] == ["*.example"]
        await granted.close()
        after = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        assert [(r["host"], r["rule"]) for r in after.result["egress"]] == [("192.0.2.7:8080", "direct")]
        out = await env.exec(rig, f"curl -sS -m 5 http://{BLOCKED}/ 2>&1 || true")
        assert "Could not resolve host" not in out["stdout"]
        # The name resolves now, to a host that does not exist: told as such, under its own rule.
        assert (await egress_event(after, BLOCKED))["rule"] == "unreachable"
        await after.close()


async def test_only_those_who_may_watch_the_rig_hear_of_its_refusals(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await env.exec(rig, f"curl -sS -m 5 http://{BLOCKED}/ 2>&1 || true")
        guest = await env.srv.new_user_token(env.ws, "guest", name="visitor")
        stranger = await env.srv.new_user_token(name="stranger")  # a member of another workspace
        await env.srv.new_workspace("theirs", owner_token=stranger)
        other_space = await env.new_space("elsewhere")
        identity = env.srv.ctx.service(IdentityService)
        elsewhere = await identity.issue_device(
            env.srv.owner_id, "one space", scope=DeviceScope(workspace_id=env.ws, space_id=other_space)
        )
        for token, code in ((guest, "forbidden"), (stranger, "forbidden"), (elsewhere, "forbidden")):
            async with RpcClient(env.srv.ws_url, token) as c:
                with pytest.raises(RpcError) as err:
                    await c.watch("rig.watch", workspace_id=env.ws, rigId=rig)
                assert err.value.code == code, (token, err.value)
        member = await env.srv.new_user_token(env.ws, "member", name="colleague")
        async with RpcClient(env.srv.ws_url, member) as c:
            watch = await c.watch("rig.watch", workspace_id=env.ws, rigId=rig)
            assert [(r["host"], r["rule"]) for r in watch.result["egress"]] == [(BLOCKED, "allowlist")]
            await watch.close()


async def test_a_rig_keeps_its_latest_refusals(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        hosts = [f"h{i}.not-granted.example" for i in range(KEPT + 1)]

        async def kept_hosts() -> list[str]:
            watch = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
            await watch.close()
            return [r["host"] for r in watch.result["egress"]]

        await env.exec(rig, "; ".join(f"getent hosts {h}" for h in hosts[:KEPT]) + "; true")
        assert await kept_hosts() == hosts[:KEPT]  # at the bound: every one
        await env.exec(rig, f"getent hosts {hosts[KEPT]}; true")
        assert await kept_hosts() == hosts[1:]  # one past it: the oldest one went
