"""One wire convention for time: every timestamp a client receives is RFC 3339 UTC with ``Z``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.support.rpc import RpcClient
from tests.support.server import running_server

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
TEMPLATE = {
    "id": "t",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {"id": "hi", "kind": "listen", "body": "pipeline.trigger", "trigger": {"sourceStepIds": ["start"]}},
    ],
}


def stamps(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if STAMP.match(value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in stamps(v)]
    if isinstance(value, list):
        return [s for v in value for s in stamps(v)]
    return []


async def test_every_timestamp_on_the_wire_is_utc_with_z(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("time")
        space = await c.call("spaces.create", workspace_id=ws, title="s")
        await c.call("messages.post", workspace_id=ws, space_id=space["id"], content="hello")
        await c.call("pipelines.templates.create", workspace_id=ws, template=TEMPLATE)
        run = await c.call("pipelines.runs.start", workspace_id=ws, templateId="t")
        replies = [
            await c.call("workspaces.list"),
            await c.call("devices.list"),
            await c.call("events.list", workspace_id=ws),
            await c.call("audit.list", workspace_id=ws),
            await c.call("spaces.list", workspace_id=ws),
            await c.call("messages.list", workspace_id=ws, space_id=space["id"]),
            await c.call("pipelines.templates.list", workspace_id=ws),
            await c.call("pipelines.runs.get", workspace_id=ws, runId=run["runId"]),
            await c.call("pipelines.runs.list", workspace_id=ws),
        ]
        found = stamps(replies)
        assert len(found) >= 10, found
        assert all(s.endswith("Z") for s in found), [s for s in found if not s.endswith("Z")]
