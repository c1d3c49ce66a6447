"""Rig ops over the real RPC socket: malformed input answers invalid_args naming the field; surfaces
without a backend answer unavailable naming it; roles, guardrail classes and unknown rigs are enforced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.ops import RIG_OPS
from hangar.rpc.registry import spec_of
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcClient, RpcError


async def fails(env: RigsEnv, op: str, **args: Any) -> RpcError:
    with pytest.raises(RpcError) as e:
        await env.call(op, **args)
    return e.value


def test_guardrail_action_classes_follow_the_spec() -> None:
    actions = {spec_of(o).name: spec_of(o).actions for o in RIG_OPS}
    use = {"enclosureControl", "networkEgress", "processSpawn"}
    for name in ("rig.open", "rig.exec", "computer_use", "browser_use"):
        assert actions[name] == use, name
    for name in ("mobile_use", "sim_use"):
        assert actions[name] == use | {"packageInstall"}, name
    assert actions["rig_close"] == {"enclosureControl"}
    assert actions["rig_list"] == frozenset()
    assert spec_of(RIG_OPS[2]).kind == "destructive"


@pytest.mark.packs("terminal")
async def test_open_validates_surface_engine_and_space(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        e = await fails(env, "rig.open", space_id=env.space)
        assert (e.code, "surface" in e.message) == ("invalid_args", True)
        e = await fails(env, "rig.open", space_id=env.space, surface="desktop")
        assert e.code == "invalid_args" and "surface must be one of" in e.message
        e = await fails(env, "rig.open", space_id=env.space, surface="terminal", engine="engine-a")
        assert e.code == "invalid_args" and "no engines" in e.message
        e = await fails(env, "rig.open", space_id=env.space, surface="browser", engine="engine-z")
        assert e.code == "invalid_args" and "engine-z" in e.message  # refused, never defaulted
        # Phones and simulators say what this host lacks (test_rigs_mobile_refusals.py has the details).
        e = await fails(env, "rig.open", space_id=env.space, surface="mobile")
        assert e.code == "unavailable" and "rigs.mobile.device" in e.message, e.message
        e = await fails(env, "rig.open", space_id=env.space, surface="simulator")
        assert e.code == "unavailable" and "macOS" in e.message, e.message
        e = await fails(env, "rig.open", space_id="no-such-space", surface="terminal")
        assert e.code == "not_found"
        e = await fails(env, "rig.open", space_id=env.space, surface="terminal", colour="red")
        assert e.code == "invalid_args" and "colour" in e.message
        assert await env.call("rig_list") == []
        assert (await fails(env, "rig.get", rigId="no-such-rig")).code == "not_found"


@pytest.mark.packs("terminal")
async def test_exec_validates_its_arguments(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        e = await fails(env, "rig.exec", rigId=rig)
        assert e.code == "invalid_args" and "command" in e.message
        e = await fails(env, "rig.exec", rigId=rig, command="true", timeoutMs=0)
        assert e.code == "invalid_args" and "timeoutMs" in e.message
        e = await fails(env, "rig.exec", rigId=rig, command="true", timeoutMs="5")
        assert e.code == "invalid_args" and "timeoutMs" in e.message
        e = await fails(env, "rig.exec", command="true")
        assert e.code == "invalid_args" and "rigId" in e.message
        e = await fails(env, "rig.exec", rigId="nope", command="true")
        assert e.code == "not_found"


MALFORMED: list[tuple[str, Any, str]] = [
    ("computer_use", {"action": "left_click", "coordinate": [1, -1]}, "action.coordinate.1"),
    ("computer_use", {"action": "hold_key", "text": "shift", "duration": 61}, "action.duration"),
    ("computer_use", {"action": "wait"}, "action.duration"),
    ("computer_use", "screenshot", "action"),
    ("computer_use", {"action": "fly"}, "action.action"),
    ("browser_use", {"action": "wait_for", "selector": "a", "timeout": 31}, "action.timeout"),
    ("browser_use", {"action": "set_viewport", "width": 300, "height": 240}, "action.width"),
    ("browser_use", {"action": "navigate", "url": "file:///etc/passwd"}, "action.url"),
    (
        "mobile_use",
        {"action": "swipe", "start_coordinate": [0, 0], "coordinate": [1, 1], "duration_ms": 10},
        "action.duration_ms",
    ),
    ("sim_use", {"action": "spawn", "argv": "ls -la"}, "action.argv"),
]


@pytest.mark.packs("terminal")
async def test_malformed_actions_name_the_field(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        for op, action, field in MALFORMED:
            e = await fails(env, op, rigId="r-1", action=action)
            assert e.code == "invalid_args", (op, action)
            assert e.message.startswith(field), e.message


@pytest.mark.packs("terminal")
async def test_valid_actions_answer_unavailable_naming_the_backend(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        cases = [
            ("sim_use", {"action": "home"}, "mobile-simulator"),
        ]
        for op, action, backend in cases:
            e = await fails(env, op, rigId="r-1", action=action)
            assert e.code == "unavailable" and backend in e.message, e.message
        # Browser, computer and phone rigs run here: a valid action on a rig that does not exist is answered as such.
        e = await fails(env, "browser_use", rigId="r-1", action={"action": "navigate", "url": "https://example.test/"})
        assert e.code == "not_found"
        e = await fails(env, "computer_use", rigId="r-1", action={"action": "screenshot"})
        assert e.code == "not_found"
        e = await fails(env, "mobile_use", rigId="r-1", action={"action": "key", "key": "KEYCODE_HOME"})
        assert e.code == "not_found"
        # A terminal is never driven as a desktop.
        rig = await env.open()
        e = await fails(env, "computer_use", rigId=rig, action={"action": "screenshot"})
        assert e.code == "refused" and "terminal" in e.message
        e = await fails(env, "mobile_use", rigId=rig, action={"action": "screenshot"})
        assert e.code == "refused" and "terminal" in e.message


@pytest.mark.packs("terminal")
async def test_roles_and_guardrails(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        guest = await env.srv.new_user_token(env.ws, "guest", name="guest")
        async with RpcClient(env.srv.ws_url, guest) as g:
            for op, args in (("rig.open", {"space_id": env.space, "surface": "terminal"}), ("rig_list", {})):
                with pytest.raises(RpcError) as e:
                    await g.call(op, workspace_id=env.ws, **args)
                assert e.value.code == "forbidden"
            with pytest.raises(RpcError) as e:
                await g.call("rig.exec", workspace_id=env.ws, rigId=rig, command="true")
            assert e.value.code == "forbidden"
        stranger = await env.srv.new_user_token(None, name="stranger")
        async with RpcClient(env.srv.ws_url, stranger) as s:
            with pytest.raises(RpcError) as e:
                await s.call("rig_list", workspace_id=env.ws)
            assert e.value.code == "forbidden"
        await env.call("guardrails.set", askFirst=["processSpawn"])
        e = await fails(env, "rig.exec", rigId=rig, command="true")
        assert e.code == "refused" and "processSpawn" in e.message
        assert [r["rigId"] for r in await env.call("rig_list")] == [rig]  # rig_list declares no class
        await env.call("guardrails.set", readOnly=True)
        e = await fails(env, "rig_close", rigId=rig)
        assert e.code == "refused" and "read-only" in e.message


@pytest.mark.packs("terminal")
async def test_a_space_in_read_only_mode_holds_its_rig(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        elsewhere = await env.open(await env.new_space("free"))
        await env.call("guardrails.set", space_id=env.space, readOnly=True)
        for op, args in (
            ("rig.exec", {"command": "true"}),
            ("rig.takeControl", {}),
            ("rig.terminalUrl", {}),
            ("rig_close", {}),
        ):
            e = await fails(env, op, rigId=rig, **args)
            assert e.code == "refused" and "this space is in read-only mode" in e.message, (op, e.message)
        assert (await env.call("rig.ports", rigId=rig))["ports"] == []  # observations stay allowed
        assert (await env.exec(elsewhere, "echo free"))["stdout"] == "free\n"
