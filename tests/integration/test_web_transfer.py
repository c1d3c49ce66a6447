"""Workspace export and import in the web client, end to end: Debian's Chromium driven by Playwright against a
real server serving the real build of ``web/``. An admin exports from the workspace's settings (a download of the
archive), the workspace list imports it into a new workspace and opens it; a refused upload says why; a member sees
no Export button. axe finds nothing serious or critical, light and dark, desktop and phone width."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from hangar.core.principal import Role
from hangar.identity import IdentityService
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_export_from_settings_and_import_from_the_workspace_list(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path / "d", web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Launch plans")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            space = await client.call("spaces.create", workspace_id=ws, title="kickoff")
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="hello")
        url = f"{srv.url}/settings/workspaces/{ws}"
        page, console = await open_signed_in(browser, url, srv.owner_token, accept_downloads=True)
        export = page.get_by_role("button", name="Export workspace")
        await export.wait_for()
        assert await axe_violations(page) == []
        async with page.expect_download() as downloading:
            await export.click()
        saved = tmp_path / "export.tar"
        await (await downloading.value).save_as(saved)
        assert saved.read_bytes().startswith(b"README.txt")
        await expect(page.get_by_role("status").filter(has_text="downloading")).to_be_visible()

        await page.goto(srv.url + "/")
        form = page.get_by_role("form", name="Import a workspace")
        await form.wait_for()
        # A file that is not an export: refused, the server's sentence shown, nothing made.
        junk = tmp_path / "junk.tar"
        junk.write_bytes(b"not an export" * 100)
        await form.get_by_label("Export file").set_input_files(str(junk))
        await form.get_by_role("button", name="Import workspace").click()
        await expect(form.get_by_role("alert")).to_contain_text("damaged")
        assert len(await srv.ctx.service(IdentityService).list_workspace_ids()) == 1
        assert await axe_violations(page) == []

        await form.get_by_label("Export file").set_input_files(str(saved))
        await form.get_by_label("Name (optional: the exported workspace's name)").fill("Launch plans (copy)")
        await form.get_by_role("button", name="Import workspace").click()
        await page.wait_for_url(lambda u: "/workspaces/" in u and ws not in u)
        await expect(page.get_by_role("heading", name="Launch plans (copy)")).to_be_visible()
        assert len(await srv.ctx.service(IdentityService).list_workspace_ids()) == 2
        assert all("status of 422" in e for e in console.errors)  # the refused upload, and nothing else

        # A member: no Export button; dark, at phone width, still accessible.
        member = await srv.new_user_token(ws, Role.member, name="mel")
        for context in ({}, {"color_scheme": "dark", "viewport": {"width": 375, "height": 800}}):
            other, _ = await open_signed_in(browser, url, member, **context)
            await other.get_by_role("heading", name="Members and roles").wait_for()
            assert await other.get_by_role("button", name="Export workspace").count() == 0
            await other.goto(srv.url + "/")
            await other.get_by_role("form", name="Import a workspace").wait_for()
            assert await axe_violations(other) == []
        dark, _ = await open_signed_in(browser, url, srv.owner_token, color_scheme="dark")
        await dark.get_by_role("button", name="Export workspace").wait_for()
        assert await axe_violations(dark) == []
