"""The workspace's Skills section end to end (Debian's Chromium, Playwright, the real build of ``web/``): each skill's
verdict and whether agents load it, every finding of its scan, an admin's override of a review (and none offered
for a blocked skill); axe-clean light and dark, at desktop and phone width."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from hangar.server.parts import all_parts
from tests.integration.test_web_settings import open_signed_in
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium
from tests.unit.agents.skill_kits import CLEAN, PLANTED, digest

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_the_skills_section_shows_verdicts_findings_and_takes_an_override(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path / "data", web_dist=dist, parts=all_parts()) as srv, chromium() as browser:
        ws = await srv.new_workspace("Harbour")
        chosen = [CLEAN[0][:3], *(p[:3] for p in PLANTED if p[0] in ("shellcheck-bad", "override-rules"))]
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            for name, kind, data in chosen:
                b64 = base64.b64encode(data).decode()
                await client.call("skills.upload", workspace_id=ws, name=name, kind=kind, contentBase64=b64,
                                  digest=digest(data))  # fmt: skip

        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/skills")
        await page.get_by_role("heading", name="Agent skills").wait_for()
        skills = page.get_by_role("list", name="Skills")
        clean = skills.get_by_role("listitem").filter(has_text="clean-md").first
        await clean.get_by_text("Passed", exact=True).wait_for()
        await clean.get_by_text("loaded by agents").wait_for()
        blocked = skills.get_by_role("listitem").filter(has_text="override-rules").first
        await blocked.get_by_text("Blocked", exact=True).wait_for()
        await blocked.get_by_text("findings").first.click()
        await blocked.get_by_text("instructionOverride").first.wait_for()
        assert await blocked.get_by_role("button", name="Let agents load it").count() == 0

        review = skills.get_by_role("listitem").filter(has_text="shellcheck-bad").first
        await review.get_by_text("Needs review", exact=True).wait_for()
        await review.get_by_text("findings").first.click()
        await review.get_by_text("SC1010").first.wait_for()
        await review.get_by_text("scripts/go.sh:2").first.wait_for()
        assert await axe_violations(page) == []
        await review.get_by_label("Why these findings are acceptable (kept in the audit log)").fill("parse error only")
        await review.get_by_role("button", name="Let agents load it").click()
        await review.get_by_text("review overridden by").wait_for()
        await review.get_by_text("loaded by agents").wait_for()
        assert console.errors == []
        await page.context.close()

        for options in ({"color_scheme": "dark"}, {"viewport": {"width": 375, "height": 800}, "color_scheme": "dark"},
                        {"viewport": {"width": 375, "height": 800}}):  # fmt: skip
            page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/skills", **options)
            await page.get_by_role("list", name="Skills").get_by_text("override-rules", exact=True).wait_for()
            await page.get_by_text("Install a skill from a discovery index").click()
            await page.get_by_label("Index URL (agent-skills discovery 0.2.0)").wait_for()
            assert await axe_violations(page) == []
            assert console.errors == []
            await page.context.close()
