"""An agent client drives a real terminal rig over the product MCP endpoint: ``rig.open`` tells how the boot
goes when the client asked for progress, ``rig.exec`` runs in the enclosure as a tool, and reading the rig as a
resource does not keep it awake."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hangar.core.guestacl import RIG_UID
from hangar.rigs.lifecycle.manager import RigManager
from tests.integration.rigs_env import rigs_server
from tests.support.mcp import mcp_session, payload

pytestmark = pytest.mark.packs("terminal")


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
        assert ran["exitCode"] == 0 and ran["stdout"].split() == [str(RIG_UID), "hi"], ran
        # Reading the rig's resource is a read: it does not count as activity against the idle timeout.
        live = env.srv.ctx.service(RigManager).live_rigs()[0]
        active_at = live.last_active_at
        await asyncio.sleep(0.05)  # the monotonic clock moves on: a touch would show
        uri = f"hangar://workspaces/{env.ws}/rigs/{opened['rigId']}"
        read = json.loads((await session.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        assert live.last_active_at == active_at
        assert read["rig"]["status"] == "ready" and read["rig"]["surface"] == "terminal", read
        await session.call_tool("rig_close", {"workspace_id": env.ws, "rigId": opened["rigId"]})
        closed = json.loads((await session.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        assert closed["rig"]["status"] == "closed", closed  # a closed rig is still there to read
