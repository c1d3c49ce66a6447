"""Rigs in ``/metrics`` and in the JSON log, on the real server with real enclosures: live rigs by surface and
state, boots and their times, pack builds; a rig's boot logs under the request id of the ``rig.open`` that
started it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.rigs_env import rigs_server
from tests.integration.test_operations_logs import json_log, lines
from tests.integration.test_operations_metrics import scrape, value
from tests.support.packs import rigs_unavailable
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


@pytest.mark.packs("terminal")
async def test_a_rig_boot_is_counted_timed_and_logged_under_its_open(tmp_path: Path) -> None:
    with json_log() as out:
        async with rigs_server(tmp_path) as env:
            rig = await env.open()
            samples = await scrape(env.srv)
            assert value(samples, "hangar_rigs", surface="terminal", state="ready") == 1
            assert value(samples, "hangar_rig_boots_total", surface="terminal", outcome="ok") == 1
            assert value(samples, "hangar_rig_boot_seconds_count", surface="terminal") == 1
            await env.call("rig_close", rigId=rig)
            for _ in range(200):
                samples = await scrape(env.srv)
                if value(samples, "hangar_rigs", surface="terminal", state="ready") == 0:
                    break
                await asyncio.sleep(0.05)
            assert value(samples, "hangar_rigs", surface="terminal", state="ready") == 0
    records = lines(out)
    opened = next(r for r in records if r.get("op") == "rig.open")
    boot = [r for r in records if r["message"].startswith(f"rigs: rig {rig} (terminal) starts:")]
    assert boot and all(r["requestId"] == opened["requestId"] for r in boot)


async def test_a_pack_build_that_fails_is_counted_with_the_boot_it_failed(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "packs-is-a-file"
    not_a_dir.write_text("a file where the packs directory should be")
    async with (
        running_server(tmp_path / "data", rig_packs_dir=not_a_dir) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
    ):
        ws = await srv.new_workspace()
        space = (await c.call("spaces.create", workspace_id=ws, title="rigs"))["id"]
        if (reason := rigs_unavailable()) is not None:  # refused at once then: nothing to count
            pytest.skip(f"this host cannot run rigs: {reason}")
        try:
            await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal")
        except RpcError as exc:  # the boot failed before the open answered (a quick failure): the open says so
            assert exc.code == "unavailable" and "failed to start" in exc.message, exc
        for _ in range(400):
            samples = await scrape(srv)
            if value(samples, "hangar_rig_boots_total", surface="terminal", outcome="failed") == 1:
                break
            await asyncio.sleep(0.05)
        assert value(samples, "hangar_rig_boots_total", surface="terminal", outcome="failed") == 1
        assert value(samples, "hangar_pack_builds_total", outcome="failed") == 1
        assert value(samples, "hangar_rig_boot_seconds_count", surface="terminal") == 0
