"""The settings screens end to end: Debian's Chromium, driven by Playwright, against a real server serving the real
build of ``web/``. The server owner configures SAML (every field, kept after a reload, secrets never echoed),
downloads the SP metadata, sees the SCIM token once, meets the pairing lockout guard, saves the session policy;
the Rigs screen shows the host check, a pack build's progress, the memory budget and custom images; a person who
is not the server owner is told so; devices and users are listed and revoked. axe on each screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from hangar.identity import IdentityService
from hangar.identity.models import DeviceScope
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.part import make_rigs_part
from hangar.sso.part import SSO_PART
from hangar.workspace.part import WORKSPACE_PART
from tests.integration.test_sso_ops_rpc import idp_metadata
from tests.support.chromium import CHROMIUM
from tests.support.fake_mmdebstrap import install_fake_mmdebstrap
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, shot, stored_credential

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, WORKSPACE_PART]
GUARD = "manual pairing cannot be forbidden while no SSO connection works: oidc is not enabled; saml is not enabled"


async def open_signed_in(
    browser: Any, srv: RunningServer, path: str, user_id: str | None = None, **ctx: Any
) -> tuple[Any, Console]:
    """A page at ``path`` in a browser context holding a credential (the owner's unless ``user_id``)."""
    token = await srv.ctx.service(IdentityService).issue_device(user_id or srv.owner_id, "settings test browser")
    context = await browser.new_context(storage_state=stored_credential(srv.url, token), **ctx)
    page = await context.new_page()
    console = Console(page)
    await page.goto(f"{srv.url}{path}")
    return page, console


async def no_axe_violations(page: Any) -> None:
    assert await axe_violations(page) == []


async def test_saml_is_configured_and_kept_secrets_stay_unsaid_and_the_pairing_guard_speaks(
    tmp_path: Path, dist: Path
) -> None:
    metadata = idp_metadata("https://idp.example.com/metadata")
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        page, console = await open_signed_in(browser, srv, "/settings/server/sso", accept_downloads=True)
        await page.get_by_role("heading", name="Single sign-on", exact=True).wait_for()
        saml = page.get_by_role("form", name="SAML connection")
        await saml.get_by_label("Identity provider metadata (XML)").wait_for()
        await no_axe_violations(page)
        await shot(page, "settings-sso")

        # The lockout guard: with no SSO connection working, forbidding manual pairing is refused, and the page
        # says the guard's own words.
        pairing = page.get_by_role("checkbox", name="Allow manual pairing (pairing codes and invite codes)")
        assert await pairing.is_checked()
        await pairing.click()  # the switch shows what the server holds, so it stays on when refused
        refusal = page.get_by_role("alert").filter(has_text="Refused:")
        await refusal.wait_for()
        assert GUARD in await refusal.inner_text()
        assert await pairing.is_checked()
        assert await srv.ctx.service(IdentityService).pairing_enabled()

        # A server validation error shows at its field: enabling SAML without metadata.
        await saml.get_by_role("checkbox", name="Enabled: people may sign in with this connection").check()
        await saml.get_by_role("button", name="Save").click()
        xml = saml.get_by_label("Identity provider metadata (XML)")
        await saml.get_by_role("alert").filter(has_text="config.idpMetadataXml is required").wait_for()
        assert await xml.get_attribute("aria-invalid") == "true"
        await no_axe_violations(page)

        # Every field of the SAML record, saved.
        await xml.fill(metadata)
        await saml.get_by_label("Our entity id").fill("https://hangar.example.com/saml")
        await saml.get_by_label("Email attribute").fill("mail")
        await saml.get_by_label("Display-name attribute").fill("cn")
        await saml.get_by_label("Groups attribute").fill("memberOf")
        await saml.get_by_label("Clock skew allowance (seconds)").fill("120")
        await saml.get_by_role("checkbox", name="Allow IdP-initiated sign-in (unsolicited responses)").check()
        await saml.get_by_role("checkbox", name="Require a signed response", exact=False).check()
        await saml.get_by_label("Default role").select_option("guest")
        await saml.get_by_role("button", name="Add a group").click()
        await saml.get_by_label("Group 1 name").fill("hangar-admins")
        await saml.get_by_label("Group 1 role").select_option("admin")
        await saml.get_by_role("checkbox", name="Add people to every workspace at their first sign-in").uncheck()
        await saml.get_by_role("checkbox", name="Create accounts for unknown people at sign-in").uncheck()
        await saml.get_by_role("button", name="Save").click()
        await saml.get_by_role("status").filter(has_text="Saved. The connection is on").wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            stored = await c.call("sso.getConfig", kind="saml")
        assert stored == {
            "enabled": True,
            "defaultRole": "guest",
            "groupRoleMap": {"hangar-admins": "admin"},
            "autoMember": False,
            "allowJit": False,
            "idpMetadataXml": metadata,
            "spEntityId": "https://hangar.example.com/saml",
            "emailAttribute": "mail",
            "displayNameAttribute": "cn",
            "groupsAttribute": "memberOf",
            "clockSkewSeconds": 120,
            "allowIdpInitiated": True,
            "wantResponseSigned": True,
        }

        # Test connection with the values on screen.
        await saml.get_by_role("button", name="Test connection").click()
        passed = saml.get_by_role("status").filter(has_text="Test passed")
        await passed.wait_for()
        assert "https://idp.example.com/metadata" in await passed.inner_text()

        # After a reload the form shows what was saved.
        await page.reload()
        await saml.get_by_label("Our entity id").wait_for()
        assert await saml.get_by_label("Identity provider metadata (XML)").input_value() == metadata
        assert await saml.get_by_label("Clock skew allowance (seconds)").input_value() == "120"
        assert await saml.get_by_label("Email attribute").input_value() == "mail"
        assert await saml.get_by_label("Group 1 name").input_value() == "hangar-admins"
        assert await saml.get_by_label("Group 1 role").input_value() == "admin"
        assert await saml.get_by_label("Default role").input_value() == "guest"
        assert await saml.get_by_role("checkbox", name="Require a signed response", exact=False).is_checked()
        assert not await saml.get_by_role("checkbox", name="Create accounts for unknown people at sign-in").is_checked()

        # OIDC: the client secret is written, then only ever said to be set.
        await page.get_by_role("tab", name="OpenID Connect").click()
        oidc = page.get_by_role("form", name="OpenID Connect connection")
        await oidc.get_by_label("Issuer URL").fill("http://idp.example.com")
        await oidc.get_by_label("Client id").fill("hangar-web")
        await oidc.get_by_label("Client secret", exact=True).fill("s3cret-never-echoed")
        await oidc.get_by_role("button", name="Save").click()
        await oidc.get_by_role("alert").filter(has_text="config.issuer must use https").wait_for()
        assert await oidc.get_by_label("Issuer URL").get_attribute("aria-invalid") == "true"
        await oidc.get_by_label("Issuer URL").fill("https://idp.example.com")
        await oidc.get_by_role("button", name="Save").click()
        await oidc.get_by_role("status").filter(has_text="Saved (not enabled)").wait_for()
        assert await oidc.get_by_label("Client secret", exact=True).input_value() == ""
        await oidc.get_by_text("A secret is set.", exact=False).wait_for()
        assert "s3cret-never-echoed" not in await page.content()
        await page.reload()
        await page.get_by_role("tab", name="OpenID Connect").click()
        await oidc.get_by_label("Client id").wait_for()
        assert await oidc.get_by_label("Client id").input_value() == "hangar-web"
        assert await oidc.locator(".secret-state .badge").inner_text() == "set"
        assert "s3cret-never-echoed" not in await page.content()
        await no_axe_violations(page)

        # SP metadata for an origin, downloaded as a file; the pinned entity id is in it.
        origin = page.get_by_label("Origin people use to reach this server")
        await origin.fill("https://hangar.example.com")
        async with page.expect_download() as info:
            await page.get_by_role("button", name="Download SP metadata").click()
        download = await info.value
        assert download.suggested_filename == "hangar-sp-metadata.xml"
        sp_xml = Path(await download.path()).read_text()
        assert 'entityID="https://hangar.example.com/saml"' in sp_xml
        assert "https://hangar.example.com/saml/acs" in sp_xml

        # The SCIM token: shown once, working, gone once hidden and after a reload.
        await page.get_by_role("button", name="Generate token").click()
        shown = page.get_by_role("textbox", name="New SCIM token")
        await shown.wait_for()
        token = await shown.input_value()
        assert token.startswith("hgs_")
        assert await page.get_by_text("This is the only time the token is shown", exact=False).is_visible()
        await page.get_by_role("button", name="Copy token").wait_for()
        await no_axe_violations(page)
        async with httpx.AsyncClient() as http:
            scim = await http.get(
                f"{srv.url}/scim/v2/ServiceProviderConfig", headers={"Authorization": f"Bearer {token}"}
            )
        assert scim.status_code == 200
        await page.get_by_role("button", name="Done, hide it").click()
        assert token not in await page.content()
        await page.reload()
        await page.get_by_role("button", name="Regenerate token").click()
        await page.get_by_role("button", name="Yes, replace the token").click()
        again = await page.get_by_role("textbox", name="New SCIM token").input_value()
        assert again.startswith("hgs_") and again != token

        # With a working SAML connection the guard lets manual pairing be forbidden, and allowed again.
        pairing = page.get_by_role("checkbox", name="Allow manual pairing (pairing codes and invite codes)")
        await pairing.click()
        await page.get_by_role("status").filter(has_text="Manual pairing is forbidden.").wait_for()
        await expect(pairing).not_to_be_checked()
        assert not await srv.ctx.service(IdentityService).pairing_enabled()
        await pairing.click()
        await page.get_by_role("status").filter(has_text="Manual pairing is allowed.").wait_for()
        assert await srv.ctx.service(IdentityService).pairing_enabled()

        # The session policy: a bad value is named, a good one is saved and kept.
        max_age = page.get_by_label("Maximum age (minutes)")
        await max_age.fill("-5")
        await page.get_by_role("button", name="Save session policy").click()
        await page.get_by_role("alert").filter(has_text="maxAgeMinutes").wait_for()
        assert await max_age.get_attribute("aria-invalid") == "true"
        await max_age.fill("600")
        await page.get_by_label("Idle timeout (minutes)").fill("60")
        await page.get_by_role("button", name="Save session policy").click()
        await page.get_by_role("status").filter(has_text="Session policy saved.").wait_for()
        await page.reload()
        await page.get_by_label("Maximum age (minutes)").wait_for()
        assert await page.get_by_label("Maximum age (minutes)").input_value() == "600"
        assert await page.get_by_label("Idle timeout (minutes)").input_value() == "60"
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert await c.call("sso.sessionPolicy") == {"maxAgeMinutes": 600, "idleTimeoutMinutes": 60}
        assert console.errors == []


async def test_rigs_settings_show_the_host_check_a_pack_building_the_budget_and_custom_images(
    tmp_path: Path, dist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    rigs = make_rigs_part(lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=tmp_path / "packs"))
    async with running_server(tmp_path / "data", parts=[*PARTS, rigs], web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Images")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            host = await c.call("rigs.status")
        # The dark theme at phone width.
        page, console = await open_signed_in(
            browser, srv, "/settings/server/rigs", viewport={"width": 375, "height": 800}, color_scheme="dark"
        )
        await page.get_by_role("heading", name="Rigs", exact=True).wait_for()
        check = page.get_by_role("region", name="Host check")
        expected = (
            f"Rigs cannot run on this host (enclosure backend): {host['unavailableReason']}"
            if host["unavailableReason"]
            else "Rigs can run on this host (enclosure backend)."
        )
        await check.get_by_text(expected).wait_for()
        await check.get_by_text(f"0 MB of {host['memoryBudgetMb']} MB").wait_for()
        await no_axe_violations(page)

        # A pack build shows its step and a progress bar, then the pack is ready.
        packs = page.get_by_role("list", name="Image packs")
        await packs.get_by_text("not built").nth(3).wait_for()  # the terminal pack, one per browser engine, the desktop
        # Named for people; the pack's cache name is in its details.
        names = await packs.locator("li > div > strong").all_inner_texts()
        assert names == [
            "Terminal image",
            "Chromium browser image",
            "Firefox browser image",
            "WebKit browser image",
            "Desktop image",
        ]
        first = packs.get_by_role("listitem").first
        await first.get_by_text("Details").click()
        await first.get_by_text("terminal-tools-v1-base-v2", exact=True).wait_for()
        await page.get_by_role("button", name="Build Terminal image").click()
        bar = page.get_by_role("progressbar", name="Building Terminal image")
        await bar.wait_for()
        await packs.get_by_text("terminal image: downloading packages (4/10)").wait_for()
        assert await bar.get_attribute("value") == "4" and await bar.get_attribute("max") == "10"
        await no_axe_violations(page)
        fake.finish()
        await packs.get_by_text("ready", exact=True).wait_for(timeout=15_000)
        assert await bar.count() == 0
        await shot(page, "settings-rigs-phone-dark")

        # The memory budget: too small is refused at the field, a good one is saved.
        budget = page.get_by_label("Memory budget of all rigs (MB)")
        await budget.fill("100")
        await page.get_by_role("button", name="Save budget").click()
        await page.get_by_role("alert").filter(has_text="memoryBudgetMb").wait_for()
        assert await budget.get_attribute("aria-invalid") == "true"
        await budget.fill("4096")
        await page.get_by_role("button", name="Save budget").click()
        await page.get_by_role("status").filter(has_text="Memory budget saved.").wait_for()
        await check.get_by_text("0 MB of 4096 MB").wait_for()

        # Custom images per workspace: a local path is refused at the field, a registry reference is kept.
        images = page.get_by_role("region", name="Custom images for a workspace")
        assert await images.get_by_label("Workspace").input_value() == ws
        terminal = images.get_by_label("Terminal image")
        await terminal.fill("/tmp/image.tar")
        await images.get_by_role("button", name="Save terminal image").click()
        await images.get_by_role("alert").wait_for()
        assert await terminal.get_attribute("aria-invalid") == "true"
        await terminal.fill("ghcr.io/team/rig-image:1")
        await images.get_by_role("button", name="Save terminal image").click()
        await images.get_by_role("status").filter(has_text="Image saved").wait_for()
        await page.reload()
        await images.get_by_label("Terminal image").wait_for()
        assert await images.get_by_label("Terminal image").input_value() == "ghcr.io/team/rig-image:1"
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, "the page scrolls sideways at phone width"
        await no_axe_violations(page)
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert (await c.call("rigs.status"))["memoryBudgetMb"] == 4096
            settings = await c.call("settings.get", workspace_id=ws)
        assert settings["rigs.microvm.execImage"]["value"] == "ghcr.io/team/rig-image:1"
        assert console.errors == []


async def test_people_who_are_not_the_server_owner_are_told_and_devices_and_users_are_managed(
    tmp_path: Path, dist: Path
) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Team")
        identity = srv.ctx.service(IdentityService)
        await srv.new_user_token(ws, "owner", name="Wendy")  # owns a workspace, not the server
        wendy = next(u for u in await identity.list_users() if u.display_name == "Wendy")
        await identity.issue_device(
            wendy.id, "Some MCP client (OAuth)", scope=DeviceScope(workspace_id=ws, read_only=True, client_id="c1")
        )

        page, console = await open_signed_in(browser, srv, "/settings/server/sso", user_id=wendy.id)
        refusal = page.get_by_role("alert").filter(has_text="Server owner only")
        await refusal.wait_for()
        assert await page.get_by_role("link", name="Server settings").count() == 0
        await no_axe_violations(page)
        await page.goto(f"{srv.url}/settings/server/rigs")
        await refusal.wait_for()

        # Her devices: this browser, and the OAuth client with its workspace and read-only scope.
        await page.get_by_role("navigation", name="Settings").get_by_role("link", name="Devices").click()
        listed = page.get_by_role("list", name="Signed-in devices")
        client = listed.get_by_role("listitem").filter(has_text="Some MCP client (OAuth)")
        await client.wait_for()
        assert "OAuth client" in await client.inner_text()
        assert "Reaches the workspace Team only, read-only." in await client.inner_text()
        here = listed.get_by_role("listitem").filter(has_text="this browser")
        assert "Reaches all your workspaces." in await here.inner_text()
        await client.get_by_role("button", name="Revoke Some MCP client (OAuth)").click()
        await client.get_by_role("button", name="Yes, revoke Some MCP client (OAuth)").click()
        await page.get_by_role("status").filter(has_text="is revoked").wait_for()
        await expect(client).to_have_count(0)
        await page.get_by_text("Revoked (1)").click()
        assert "Some MCP client (OAuth)" in await page.get_by_role("list", name="Revoked devices").inner_text()

        # A pairing code pairs another device as her.
        await page.get_by_role("button", name="Make a pairing code").click()
        code = await page.locator("code.code").inner_text()
        async with httpx.AsyncClient() as http:
            paired = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "phone"})
        assert paired.status_code == 200 and paired.json()["userId"] == wendy.id
        await no_axe_violations(page)

        # The server owner deactivates her; her open page is signed out.
        owner, owner_console = await open_signed_in(browser, srv, "/settings/server/users")
        await owner.get_by_role("heading", name="Users", exact=True).wait_for()
        row = owner.get_by_role("row").filter(has_text="Wendy")
        await row.get_by_role("button", name="Deactivate Wendy").click()
        await no_axe_violations(owner)
        await row.get_by_role("button", name="Yes, deactivate Wendy").click()
        await row.get_by_text("deactivated", exact=True).wait_for()
        await page.get_by_role("heading", name="Connect to Hangar").wait_for(timeout=15_000)

        creators = owner.get_by_label("Workspace creators")
        assert await creators.input_value() == "members"
        await creators.select_option("anyone")
        await owner.get_by_role("status").filter(has_text="Saved.").wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert await c.call("server.workspaceCreators") == {"who": "anyone"}
        assert owner_console.errors == []
        # Her page's socket was closed under it when she was deactivated; nothing else may be on the console.
        assert [e for e in console.errors if "WebSocket" not in e] == []
