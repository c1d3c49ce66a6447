"""Settings, Server, Rigs, Clipboard access end to end: Debian's Chromium, driven by Playwright, against a real
server serving the real build of ``web/``. A person who is not the server owner still manages their own grants
there (clipboard crossing is each person's); the server owner sees everyone's "always allow" and revokes it.
axe on each state; no console errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from hangar.identity import IdentityService
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.part import make_rigs_part
from hangar.workspace.part import WORKSPACE_PART
from tests.integration.test_web_settings import open_signed_in
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_people_manage_their_own_clipboard_grants_and_the_owner_sees_everyone_s(
    tmp_path: Path, dist: Path
) -> None:
    rigs = make_rigs_part(lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=tmp_path / "packs"))
    parts = [OVERSIGHT_PART, IDENTITY_PART, WORKSPACE_PART, rigs]
    async with running_server(tmp_path / "data", parts=parts, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Team")
        uma_token = await srv.new_user_token(ws, "member", name="Uma")
        uma = next(u for u in await srv.ctx.service(IdentityService).list_users() if u.display_name == "Uma")

        # Uma is not the server owner: the rest of the page is not hers, her clipboard access is.
        page, console = await open_signed_in(browser, srv, "/settings/server/rigs", user_id=uma.id)
        await page.get_by_role("alert").filter(has_text="Server owner only").wait_for()
        access = page.get_by_role("region", name="Clipboard access")
        await access.get_by_text("None.").wait_for()
        assert await axe_violations(page) == []
        await access.get_by_role("button", name="Always allow copying from rigs").click()
        await access.get_by_role("status").filter(has_text="always allowed now").wait_for()
        mine = access.get_by_role("list", name="Your clipboard grants")
        await mine.get_by_text("Copy from rigs to your computer — always allowed").wait_for()
        await expect(access.get_by_role("button", name="Always allow copying from rigs")).to_have_count(0)
        async with RpcClient(srv.ws_url, uma_token) as c:
            policy = await c.call("rig.clipboardGrants")
            assert [(g["direction"], g["always"]) for g in policy["grants"]] == [("rigToHost", True)]
            await c.call("rig.clipboardGrant", direction="rigToHost", minutes=10)
        assert await axe_violations(page) == []

        # The server owner sees Uma's "always allow" beside the rest of the rigs settings and revokes it.
        owner_page, owner_console = await open_signed_in(browser, srv, "/settings/server/rigs")
        everyone = owner_page.get_by_role("list", name="Other people's always-allow grants")
        row = everyone.get_by_role("listitem").filter(has_text="Uma")
        await row.wait_for()
        assert "Copy from rigs to your computer — always allowed" in await row.inner_text()
        assert await everyone.get_by_role("listitem").count() == 1  # her ten-minute grant is hers to see
        assert await axe_violations(owner_page) == []
        await row.get_by_role("button", name="Revoke: Uma, copy from rigs to your computer").click()
        await owner_page.get_by_role("status").filter(has_text="Revoked Uma's grant.").wait_for()
        await expect(row).to_have_count(0)
        async with RpcClient(srv.ws_url, uma_token) as c:
            assert (await c.call("rig.clipboardGrants"))["grants"] == []  # revoked per direction: both went
            with pytest.raises(Exception, match="server owner"):
                await c.call("rig.clipboardGrants", everyone=True)

        # Uma's page, reloaded, offers "always allow" again.
        await page.reload()
        await access.get_by_role("button", name="Always allow copying from rigs").wait_for()
        assert console.errors == [] and owner_console.errors == []
