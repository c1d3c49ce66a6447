"""A person moving a browser rig's page through ``rig.navigate`` (the live view's address bar and page list) over
the real server, on a real engine A rig, against pages a test server serves through the rig's egress gate: go to
an address, back, forward, reload, list the pages and choose one; the live view hears of every move. Only the
person holding control may: a member without it, a read-only credential (even of the person holding control),
a guest and read-only mode are refused, and so is any verb that is not a navigation. Agents list and choose
pages through ``browser_use`` (``pages``, ``switch_page``), reading what the pages say fenced."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import pytest_asyncio
import websockets

from hangar.identity import DeviceScope, IdentityService
from hangar.rigs.lanes.fence import unfence
from tests.conformance.engine_fixtures import pages_fixture
from tests.integration.rigs_browser_env import BrowserRigs, site_env_fixture, use
from tests.integration.rigs_env import RigsEnv
from tests.support.rpc import RpcClient, RpcError

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.packs("terminal", "engine-a")]

SITE = "pages.navigation-site.example"
OPENER = f"http://{SITE}/popup_opener.html"
BASIC = f"http://{SITE}/basic.html"
POPUP = f"http://{SITE}/popup_page.html?via=script"
GUARD_S = 30.0  # a bound against hangs only


pages = pages_fixture()
env = site_env_fixture(SITE)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rig(env: RigsEnv) -> str:
    return await BrowserRigs(env, SITE).get("engine-a")


async def go(env: RigsEnv, rig: str, client: RpcClient | None = None, **action: Any) -> dict[str, Any]:
    reply = await (client or env.client).call("rig.navigate", workspace_id=env.ws, rigId=rig, action=action)
    assert isinstance(reply, dict)
    return reply


async def refused(env: RigsEnv, rig: str, client: RpcClient | None = None, **action: Any) -> RpcError:
    with pytest.raises(RpcError) as err:
        await go(env, rig, client, **action)
    return err.value


def current(reply: dict[str, Any]) -> tuple[str, str]:
    [page] = [p for p in reply["pages"] if p["current"]]
    return page["url"], page["title"]


async def fresh(env: RigsEnv, rig: str) -> None:
    """The opener page with nobody in control and no other page open."""
    if (await env.status(rig))["controller"] is not None:
        await env.call("rig.releaseControl", rigId=rig)
    await use(env, rig, action="navigate", url=OPENER)
    assert [unfence(p["url"]) for p in (await use(env, rig, action="pages"))["pages"]] == [OPENER]


async def next_pages(view: websockets.ClientConnection, want: str) -> list[dict[str, Any]]:
    """The live view's page notices until one whose current page is at ``want``."""
    while True:
        frame = await asyncio.wait_for(view.recv(), GUARD_S)
        if isinstance(frame, str):
            notice = json.loads(frame)
            if notice.get("type") == "pages" and any(p["current"] and p["url"] == want for p in notice["pages"]):
                return list(notice["pages"])


async def test_the_person_in_control_moves_the_page_and_the_live_view_follows(env: RigsEnv, rig: str) -> None:
    await fresh(env, rig)
    err = await refused(env, rig, action="navigate", url=BASIC)
    assert err.code == "refused" and "take control of the rig first" in err.message
    await env.call("rig.takeControl", rigId=rig)
    try:
        live = await env.call("rig.liveViewUrl", rigId=rig)
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        async with websockets.connect(env.ws_origin + live["path"], additional_headers=headers) as view:
            assert [(p["url"], p["title"]) for p in await next_pages(view, OPENER)] == [(OPENER, "Popup opener")]
            reply = await go(env, rig, action="navigate", url=BASIC)
            assert current(reply) == (BASIC, "Basic page") and reply["status"] == 200
            assert reply["engine"] == "engine-a" and reply["rigId"] == rig
            await next_pages(view, BASIC)  # the live view hears of it at once
            assert current(await go(env, rig, action="history", direction="back")) == (OPENER, "Popup opener")
            await next_pages(view, OPENER)
            assert current(await go(env, rig, action="history", direction="forward"))[0] == BASIC
            assert current(await go(env, rig, action="reload"))[0] == BASIC
            assert current(await go(env, rig, action="history", direction="back"))[0] == OPENER

            # A page opening another: both are listed, the new one current; the person chooses the first again.
            await use(env, rig, action="click", selector="#script")  # the person's own agent-style click
            listed = await next_pages(view, POPUP)
            assert [(p["url"], p["title"], p["current"]) for p in listed] == [
                (OPENER, "Popup opener", False),
                (POPUP, "Popup page", True),
            ]
            assert not any(p["stale"] for p in listed)
            reply = await go(env, rig, action="switch_page", page=listed[0]["pageId"])
            assert [(p["pageId"], p["current"]) for p in reply["pages"]] == [
                (listed[1]["pageId"], False),
                (listed[0]["pageId"], True),
            ]
            await next_pages(view, OPENER)
            assert (await use(env, rig, action="wait_for", selector="#script"))["found"]  # the verbs act there too
            # A page the session does not know, and verbs that are not navigation, are refused naming why.
            err = await refused(env, rig, action="switch_page", page="no-such-page")
            assert err.code == "not_found"
            err = await refused(env, rig, action="click", selector="#script")
            assert err.code == "invalid_args" and "navigate, history, reload, stop_loading, switch_page" in err.message
            err = await refused(env, rig, action="navigate", url="file:///etc/passwd")
            assert err.code == "invalid_args" and "action.url" in err.message
            # Back to the new page, which the tests close: the session is on the opener again.
            await go(env, rig, action="switch_page", page=listed[1]["pageId"])
            await use(env, rig, action="click", selector="#close")
            await next_pages(view, OPENER)
    finally:
        await env.call("rig.releaseControl", rigId=rig)
    log = await env.call("rig.actionLog", rigId=rig)
    verbs = [(e["verb"], e["outcome"]) for e in log if e["verb"] in ("navigate", "history", "reload", "switch_page")]
    assert verbs[:2] == [("navigate", "ok"), ("navigate", "refused")]  # the fresh page, then the refusal
    assert ("switch_page", "ok") in verbs and ("history", "ok") in verbs and ("reload", "ok") in verbs


async def test_without_control_or_through_a_read_only_credential_nobody_navigates(env: RigsEnv, rig: str) -> None:
    await fresh(env, rig)
    member = await env.srv.new_user_token(env.ws, "member", name="watcher")
    guest = await env.srv.new_user_token(env.ws, "guest", name="visitor")
    identity = env.srv.ctx.service(IdentityService)
    reader = await identity.issue_device(env.srv.owner_id, "Reader (OAuth)", scope=DeviceScope(read_only=True))
    async with RpcClient(env.srv.ws_url, member) as m, RpcClient(env.srv.ws_url, reader) as r:
        # Nobody holds control: a member may not move the page an agent may be using.
        err = await refused(env, rig, m, action="navigate", url=BASIC)
        assert err.code == "refused" and "take control of the rig first" in err.message
        # Another person holds control: still refused.
        await env.call("rig.takeControl", rigId=rig)
        try:
            err = await refused(env, rig, m, action="history", direction="back")
            assert err.code == "refused" and "another person holds control" in err.message
            # The person in control, through a read-only credential of theirs: refused all the same.
            err = await refused(env, rig, r, action="navigate", url=BASIC)
            assert err.code == "forbidden" and "read-only" in err.message
            async with RpcClient(env.srv.ws_url, guest) as g:
                err = await refused(env, rig, g, action="reload")
                assert err.code == "forbidden"
            # Read-only mode refuses the person in control through their whole credential.
            await env.call("guardrails.set", space_id=env.space, readOnly=True)
            try:
                err = await refused(env, rig, action="navigate", url=BASIC)
                assert err.code == "refused" and "read-only" in err.message
            finally:
                await env.call("guardrails.set", space_id=env.space, readOnly=False)
        finally:
            await env.call("rig.releaseControl", rigId=rig)
        # Nothing moved the page.
        assert unfence((await use(env, rig, action="extract", kind="dom"))["content"]).count("Opener page") == 1
        # The member who takes control moves it.
        await m.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
        try:
            assert current(await go(env, rig, m, action="navigate", url=BASIC))[0] == BASIC
        finally:
            await m.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)


async def test_agents_list_the_pages_fenced_and_choose_one(env: RigsEnv, rig: str) -> None:
    await fresh(env, rig)
    opened = await use(env, rig, action="click", selector="#script")
    assert [p["change"] for p in opened["pages"]] == ["opened"]
    listed = (await use(env, rig, action="pages"))["pages"]
    assert [(unfence(p["url"]), unfence(p["title"]), p["current"]) for p in listed] == [
        (OPENER, "Popup opener", False),
        (POPUP, "Popup page", True),
    ]
    chosen = await use(env, rig, action="switch_page", page=listed[0]["page"])
    assert chosen["url"] == OPENER and unfence(chosen["title"]) == "Popup opener"
    assert [p["change"] for p in chosen["pages"]] == ["switched"] and "another page" in chosen["note"]
    await use(env, rig, action="switch_page", page=listed[1]["page"])
    await use(env, rig, action="click", selector="#close")
    assert [unfence(p["url"]) for p in (await use(env, rig, action="pages"))["pages"]] == [OPENER]
