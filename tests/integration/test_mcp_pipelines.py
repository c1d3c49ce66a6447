"""A pipeline run started and awaited over the product MCP endpoint: ``pipelines.runs.wait`` answers once the run
settles and tells a client that asked for progress how far the run got at each step change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp import mcp_session, payload
from tests.support.server import running_server

pytestmark = pytest.mark.packs("terminal")

TEMPLATE: dict[str, Any] = {
    "id": "slow",
    "name": "Slow",
    "steps": [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        {
            "id": "nap",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "sleep 1.5; printf rested", "outputKey": "said", "label": "Take a nap"},
        },
    ],
    "edges": [],
}


async def test_a_run_started_and_awaited_reports_progress(tmp_path: Path) -> None:
    heard: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async with running_server(tmp_path) as srv, mcp_session(srv, srv.owner_token) as session:
        ws = await srv.new_workspace("pipes")
        await session.call_tool("pipelines.templates.create", {"workspace_id": ws, "template": TEMPLATE})
        started = payload(await session.call_tool("pipelines.runs.start", {"workspace_id": ws, "templateId": "slow"}))
        done = payload(
            await session.call_tool(
                "pipelines.runs.wait",
                {"workspace_id": ws, "runId": started["runId"], "timeoutSeconds": 60},
                progress_callback=on_progress,
            )
        )
        assert done["status"] == "completed" and done["state"]["said"] == "rested", done
        assert any("running: Take a nap" in m for m in heard), heard

        again = payload(
            await session.call_tool(
                "pipelines.runs.wait", {"workspace_id": ws, "runId": started["runId"], "timeoutSeconds": 1}
            )
        )
        assert again["status"] == "completed"  # a settled run answers at once
        second = payload(await session.call_tool("pipelines.runs.start", {"workspace_id": ws, "templateId": "slow"}))
        cut_short = payload(
            await session.call_tool(
                "pipelines.runs.wait", {"workspace_id": ws, "runId": second["runId"], "timeoutSeconds": 1}
            )
        )
        assert cut_short["status"] == "running"  # the deadline came first: the run as it stands
        missing = await session.call_tool("pipelines.runs.wait", {"workspace_id": ws, "runId": "nope"})
        assert missing.is_error and missing.content[0].text.startswith("not_found: ")  # type: ignore[union-attr]
