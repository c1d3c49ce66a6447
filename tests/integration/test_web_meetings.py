"""The workspace's Meetings section end to end (Debian's Chromium, Playwright, the real build of ``web/``): a meeting
whose channels were uploaded over the audio lane and whose outcome the meeting bodies saved shows its transcript by
speaker, a playable recording fetched with the browser's credential, its notes and decisions, and an action item
that becomes a ticket with one click; axe-clean light and dark, at desktop and phone width."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.server.parts import all_parts
from tests.integration.test_meeting_audio import tone, upload
from tests.integration.test_web_settings import open_signed_in
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.runs import finished
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium
from tests.unit.agents.support import template

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

TRANSCRIPT = [
    {"start": 0.0, "end": 1.0, "speaker": "Ada", "text": "Shall we fix the budget?"},
    {"start": 1.0, "end": 2.0, "speaker": "Ada", "text": "I say ten thousand."},
    {"start": 2.0, "end": 3.0, "speaker": "Bo", "text": "Agreed, and I will book the room."},
]
OUTCOME = {
    "summary": "The budget is agreed at ten thousand.",
    "enhancedNotes": "- budget: 10k\n- room to book",
    "actionItems": [{"text": "Book the room", "owner": "Bo"}],
    "decisions": ["The budget is 10k"],
}


async def test_the_meetings_section_shows_a_meeting_and_makes_a_ticket(tmp_path: Path, dist: Path) -> None:
    ada, bo = tone(tmp_path / "ada.ogg", 2.0, freq=300), tone(tmp_path / "bo.wav", 3.0, freq=600)
    async with running_server(tmp_path / "data", web_dist=dist, parts=all_parts()) as srv, chromium() as browser:
        ws = await srv.new_workspace("Harbour")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            m = await c.call("meetings.create", workspace_id=ws, title="Budget review", participants=["Ada", "Bo"])
            await c.call("meetings.importTranscript", workspace_id=ws, meetingId=m["id"], format="json",
                         content=json.dumps(TRANSCRIPT))  # fmt: skip
            for data, label in ((ada, "Ada"), (bo, "Bo")):
                assert (await upload(srv, ws, m["id"], data, label=label)).status_code == 201
            bodies = ("saveNotes", "addActionItems", "addDecisions", "assemblePlayback")
            steps = [{"id": b, "body": f"meeting.{b}"} for b in bodies]
            await c.call("pipelines.templates.create", workspace_id=ws, template=template(*steps, tid="notes"))
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="notes",
                                   payload={"meeting_id": m["id"], "meeting_outcome": OUTCOME})  # fmt: skip
            assert (await finished(c, ws, started["runId"]))["status"] == "completed"

        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/meetings")
        await page.get_by_role("heading", name="Meetings", exact=True).wait_for()
        row = page.get_by_role("list", name="Meetings").get_by_role("listitem").filter(has_text="Budget review").first
        await row.get_by_text("Budget review").click()
        transcript = row.get_by_role("list", name="Transcript")
        await transcript.get_by_text("Shall we fix the budget? I say ten thousand.").wait_for()  # one turn of Ada's
        assert await transcript.get_by_role("listitem").count() == 2
        audio = row.get_by_label("Recording of Budget review")
        await audio.wait_for()
        assert (await audio.get_attribute("src") or "").startswith("blob:")
        # The track the lane served plays: the browser read its length (three seconds, Bo's channel).
        element = await audio.element_handle()
        await page.wait_for_function("a => a.readyState >= 1", arg=element, timeout=30_000)
        assert await audio.evaluate("a => a.duration") == pytest.approx(3.0, abs=0.1)
        await row.get_by_text("The budget is agreed at ten thousand.").wait_for()
        await row.get_by_role("list", name="Decisions").get_by_text("The budget is 10k").wait_for()
        assert await axe_violations(page) == []
        await row.get_by_role("button", name="Make ticket: Book the room").click()
        await row.get_by_role("link", name="Open its ticket").wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            [ticket] = (await c.call("tickets.list", workspace_id=ws))["tickets"]
            assert ticket["title"] == "Book the room"
        assert console.errors == []
        await page.context.close()

        for options in ({"color_scheme": "dark"}, {"viewport": {"width": 375, "height": 800}, "color_scheme": "dark"},
                        {"viewport": {"width": 375, "height": 800}}):  # fmt: skip
            page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/meetings", **options)
            row = page.get_by_role("list", name="Meetings").get_by_role("listitem").filter(has_text="Budget review")
            await row.first.get_by_text("Budget review").click()
            await row.first.get_by_label("Recording of Budget review").wait_for()
            await page.get_by_text("Record a meeting").click()
            await page.get_by_label("Participants (comma-separated)").wait_for()
            assert await axe_violations(page) == []
            assert console.errors == []
            await page.context.close()
