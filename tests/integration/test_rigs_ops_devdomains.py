"""Dev domains through the real server: the ops (validation naming the field, one space's rigs only, a domain
unique in the workspace), the manager's lanes routing a name to a dev server of the same space over HTTP and HTTPS,
names following changes for live rigs, a parked target woken, and a CA that cannot be read (HTTP only, saying why).

Browser rigs carry the lanes from boot; until they land here, ``RigManager.dev.attach`` starts the same lanes on a
terminal rig, and a second terminal rig of the space (the manager otherwise reuses one per space) stands in for
the browser.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from hangar.rigs.model import Surface, limits_for
from hangar.rigs.ops import devdomains
from hangar.rigs.tls import DevTls, dev_ca_pem
from hangar.rpc.registry import spec_of
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcError

pytestmark = pytest.mark.needs_root

DEV_PORT = 18400
TERM = limits_for(Surface.terminal, None)


async def fails(env: RigsEnv, op: str, **args: Any) -> RpcError:
    with pytest.raises(RpcError) as e:
        await env.call(op, **args)
    return e.value


async def sh(env: RigsEnv, rig: str, command: str) -> tuple[int, str]:
    done = await env.exec(rig, command)
    return int(done["exitCode"]), str(done["stdout"]) + str(done["stderr"])


async def dev_server(env: RigsEnv, rig: str, text: str) -> None:
    await env.exec(
        rig,
        f"mkdir -p ~/site && echo '{text}' > ~/site/index.html && cd ~/site && "
        f"setsid -f python3 -m http.server {DEV_PORT} --bind 127.0.0.1 >/dev/null 2>&1",
    )
    handle = env.manager.live(env.ws, rig).handle
    assert handle is not None
    for _ in range(200):  # the server comes up on its own time
        if DEV_PORT in await handle.listening_ports():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the dev server did not start")


async def lanes_rig(env: RigsEnv) -> tuple[str, Any]:
    """A second rig of the space, carrying the dev-domain lanes (what a browser rig gets at boot)."""
    env.manager.rigs._reuse.pop((env.ws, env.space, Surface.terminal, None), None)
    rig = await env.open()
    status = await env.manager.dev.attach(env.manager.live(env.ws, rig))
    return rig, status


def test_only_mapping_carries_the_network_egress_class() -> None:
    actions = {spec_of(o).name: (spec_of(o).kind, spec_of(o).actions) for o in devdomains.OPS}
    assert actions == {
        "rig.devDomains": ("read", frozenset()),
        "rig.setDevDomain": ("mutate", frozenset({"networkEgress"})),
        "rig.removeDevDomain": ("mutate", frozenset()),
    }


@pytest.mark.packs("terminal")
async def test_ops_validate_and_keep_a_domain_to_its_space(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        other_space = await env.new_space()
        other_rig = await env.open(other_space)

        async def set_(domain: str, port: int = DEV_PORT, rig_id: str = rig, space: str = env.space) -> Any:
            return await env.call("rig.setDevDomain", space_id=space, domain=domain, rigId=rig_id, guestPort=port)

        bad_names = (
            "App.test",
            "app.com",
            "test",
            "app..test",
            "-app.test",
            "app_1.test",
            "app.test.",
            "x" * 64 + ".test",
        )
        for bad in (*bad_names, ""):
            with pytest.raises(RpcError) as e:
                await set_(bad)
            assert e.value.code == "invalid_args" and e.value.message.startswith("domain"), (bad, e.value.message)
        for port in (80, 443, 9222, 9223, 7911):
            with pytest.raises(RpcError) as e:
                await set_("app.test", port)
            assert e.value.code == "invalid_args" and e.value.message.startswith("guestPort"), port
        with pytest.raises(RpcError) as e:
            await set_("app.test", rig_id=other_rig)
        assert e.value.code == "refused" and "another space" in e.value.message
        with pytest.raises(RpcError) as e:
            await set_("app.test", rig_id="no-such-rig")
        assert e.value.code == "not_found"
        assert (await env.call("rig.devDomains", space_id=env.space))["domains"] == []

        listed = await set_("app.test")
        assert listed["https"] is True and listed["httpsUnavailableReason"] is None
        [row] = listed["domains"]
        assert (row["domain"], row["rigId"], row["guestPort"], row["spaceId"]) == ("app.test", rig, DEV_PORT, env.space)
        assert (await set_("api.app.test", DEV_PORT + 1))["domains"][0]["domain"] == "api.app.test"  # sub-labels
        assert (await set_("app.test", DEV_PORT + 2))["domains"][1]["guestPort"] == DEV_PORT + 2  # re-pointed
        with pytest.raises(RpcError) as e:  # unique in the workspace
            await set_("app.test", rig_id=other_rig, space=other_space)
        assert e.value.code == "conflict"
        assert (await env.call("rig.devDomains", space_id=other_space))["domains"] == []
        with pytest.raises(RpcError) as e:  # removing is the owning space's
            await env.call("rig.removeDevDomain", space_id=other_space, domain="app.test")
        assert e.value.code == "not_found"

        left = await env.call("rig.removeDevDomain", space_id=env.space, domain="app.test")
        assert [r["domain"] for r in left["domains"]] == ["api.app.test"]
        changes = [(e["domain"], e["change"]) for e in await env.events("rigs.devDomainChanged")]
        assert changes == [("app.test", "set"), ("api.app.test", "set"), ("app.test", "set"), ("app.test", "removed")]
        verbs = [a["verb"] for a in await env.call("rig.actionLog", rigId=rig)]
        assert verbs.count("setDevDomain") == 3


@pytest.mark.packs("terminal")
async def test_a_name_reaches_a_dev_server_of_the_space_over_http_and_https(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        dev = await env.open()
        await dev_server(env, dev, "hello from the dev rig")
        browser, status = await lanes_rig(env)
        assert status.http and status.https and status.https_reason is None
        other_space = await env.new_space()
        other = await env.open(other_space)
        await dev_server(env, other, "another space")
        await env.call("rig.setDevDomain", space_id=other_space, domain="other.test", rigId=other, guestPort=DEV_PORT)

        # mapped after the lanes started: the live rig's resolver follows
        await env.call("rig.setDevDomain", space_id=env.space, domain="app.test", rigId=dev, guestPort=DEV_PORT)
        code, out = await sh(env, browser, "curl -sS http://app.test/")
        assert code == 0 and out == "hello from the dev rig\n", out

        # HTTPS with the CA the manager hands browser rigs (public part only)
        ca = await asyncio.to_thread(dev_ca_pem, env.srv.ctx.datadir.sub("rigs"))
        assert ca is not None and b"PRIVATE" not in ca
        handle = env.manager.live(env.ws, browser).handle
        assert handle is not None
        await handle.write_file("/home/rig/dev-ca.pem", ca, exclusive=True)
        code, out = await sh(env, browser, "curl -sS --cacert ~/dev-ca.pem https://app.test/")
        assert code == 0 and out == "hello from the dev rig\n", out
        # a new name is served at once: the leaf was re-issued with it as an exact name
        await env.call("rig.setDevDomain", space_id=env.space, domain="api.app.test", rigId=dev, guestPort=DEV_PORT)
        code, out = await sh(env, browser, "curl -sS --cacert ~/dev-ca.pem https://api.app.test/")
        assert code == 0 and out == "hello from the dev rig\n", out

        # another space's name neither resolves nor routes here
        code, _ = await sh(env, browser, "curl -sS http://other.test/")
        assert code == 6
        code, out = await sh(
            env, browser, "curl -sS -w '%{http_code}' --resolve other.test:80:127.0.0.1 http://other.test/"
        )
        assert out.endswith("404") and "another space" not in out, out

        # both rigs idle into parking; the next exec wakes the browser, its request wakes the dev rig
        clock.advance(TERM.idle_window_s + 1)
        await env.manager.sweep()
        assert (await env.status(dev))["status"] == "parked"
        code, out = await sh(env, browser, "curl -sS -m 20 http://app.test/")
        assert code == 0 and out == "hello from the dev rig\n", out
        assert (await env.status(dev))["status"] == "ready"

        # removed: the name stops resolving and routing
        await env.call("rig.removeDevDomain", space_id=env.space, domain="app.test")
        code, _ = await sh(env, browser, "curl -sS http://app.test/")
        assert code == 6
        code, out = await sh(
            env, browser, "curl -sS -w '%{http_code}' --resolve app.test:80:127.0.0.1 http://app.test/"
        )
        assert out.endswith("404"), out


@pytest.mark.packs("terminal")
async def test_a_ca_that_cannot_be_read_leaves_http_routing_and_https_says_why(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rigs = env.srv.ctx.datadir.sub("rigs")
        trusted = DevTls(rigs / "tls").ca_pem()  # what browser rigs were given
        (rigs / "tls" / "ca.key").write_bytes(b"not a key")
        dev = await env.open()
        await dev_server(env, dev, "plain http")
        browser, status = await lanes_rig(env)
        why = "dev-domain certificates cannot be issued: the dev-domain key ca.key cannot be read"
        assert status.http and not status.https and status.https_reason.startswith(why), status
        listed = await env.call(
            "rig.setDevDomain", space_id=env.space, domain="app.test", rigId=dev, guestPort=DEV_PORT
        )
        assert listed["https"] is False and listed["httpsUnavailableReason"].startswith(why)
        code, out = await sh(env, browser, "curl -sS http://app.test/")
        assert code == 0 and out == "plain http\n", out
        code, _ = await sh(env, browser, "curl -sS -k https://app.test/")
        assert code == 7  # nothing listens on 443: no lane, rather than one without a certificate
        # The CA the rigs trust is never replaced behind them.
        assert await asyncio.to_thread(dev_ca_pem, rigs) == trusted
        assert (rigs / "tls" / "ca.key").read_bytes() == b"not a key"
