"""An agent client drives a real terminal rig over the product MCP endpoint: ``rig.open`` tells how the boot
goes when the client asked for progress, and ``rig.exec`` runs in the enclosure as a tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.rigs_env import rigs_server
from tests.support.mcp import mcp_session, payload


async def test_rig_open_reports_the_boot_and_exec_runs_as_a_tool(tmp_path: Path) -> None:
    heard: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async with rigs_server(tmp_path) as env, mcp_session(env.srv, env.srv.owner_token) as session:
        opened = payload(
            await session.call_tool(
                "rig.open",
                {"workspace_id": env.ws, "space_id": env.space, "surface": "terminal"},
                progress_callback=on_progress,
            )
        )
        assert opened["phase"] == "ready", opened
        assert heard and heard[0].startswith("rig.open: "), heard
        ran: dict[str, Any] = payload(
            await session.call_tool(
                "rig.exec", {"workspace_id": env.ws, "rigId": opened["rigId"], "command": "id -u; echo hi"}
            )
        )
        assert ran["exitCode"] == 0 and ran["stdout"].split() == ["1000", "hi"], ran
