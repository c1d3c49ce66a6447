"""Events people and scripts emit live in their own namespace: the server's own event types are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import cli
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

SYSTEM = [
    "workspace.messagePosted",
    "pipeline.taskFinished",
    "identity.memberRemoved",
    "pipeline.runFinished",
    "pipeline.madeUp",
    "agents.anything",
    "rig.closed",
]


async def test_pipelines_emit_refuses_system_event_types(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("forge")
        member = await srv.new_user_token(ws, "member", name="mallory")
        async with RpcClient(srv.ws_url, member) as c:
            space = await c.call("spaces.create", workspace_id=ws, title="general")
            for type_name in SYSTEM:
                with pytest.raises(RpcError) as err:
                    await c.call(
                        "pipelines.emit",
                        workspace_id=ws,
                        eventType=type_name,
                        payload={"space_id": space["id"], "content": "from the owner", "author_id": srv.owner_id},
                    )
                assert err.value.code == "refused" and "namespace" in err.value.message, type_name
            for bad in ("nodots", ".x", "a..b", "x." + "y" * 200, "a b.c"):
                with pytest.raises(RpcError) as invalid:
                    await c.call("pipelines.emit", workspace_id=ws, eventType=bad)
                assert invalid.value.code == "invalid_args"
            ok = await c.call("pipelines.emit", workspace_id=ws, eventType="review.approved", payload={"by": "me"})
            assert ok["seq"] > 0
            msgs = (await c.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"]
            assert msgs == []
            recorded = [e["type"] for e in await c.call("events.list", workspace_id=ws)]
            assert not set(SYSTEM) & set(recorded) and "review.approved" in recorded


def test_the_command_line_refuses_them_too(tmp_path: Path) -> None:
    data = tmp_path / "data"
    forged = cli(data, "pipeline", "emit", "pipeline.taskFinished", "--workspace", "w1", check=False)
    assert forged.returncode != 0 and "namespace" in forged.stderr
    assert "recorded" not in forged.stdout
