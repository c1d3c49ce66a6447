"""The SSO settings give an identity provider's administrator what they register, and the scopes field, end to end:
Debian's Chromium, driven by Playwright, against a real server serving the real build of ``web/``.

The values shown (SAML ACS URL, entity id and metadata URL; the OIDC redirect URI; the SCIM base URL) are compared
with what the server really uses: the SAML metadata fetched from the metadata URL shown, the ``redirect_uri`` of the
authorization request the browser is sent to when it signs in through the certified ``oidc-provider``, a SCIM
request at the base URL shown. Each copy button puts its value on the clipboard (Chromium, clipboard permission
granted). The scopes are saved from the form, refused without ``openid`` and past their bound (accepted at it),
and the authorization request asks for what was saved. axe on the screen, light and dark, desktop and phone."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from hangar.identity import IdentityService
from hangar.sso.config import MAX_SCOPES_CHARS
from tests.integration.test_sso_endpoints import served_saml
from tests.peers.oidc_provider import oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.chromium import CHROMIUM
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, stored_credential

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

CLIPBOARD = ["clipboard-read", "clipboard-write"]
PHONE = {"width": 390, "height": 844}


async def owner_page(browser: Any, srv: RunningServer, **context: Any) -> tuple[Any, Console]:
    token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "sso values browser")
    ctx = await browser.new_context(storage_state=stored_credential(srv.url, token), **context)
    page = await ctx.new_page()
    console = Console(page)
    await page.goto(f"{srv.url}/settings/server/sso")
    await page.get_by_role("heading", name="Single sign-on", exact=True).wait_for()
    return page, console


async def shown_values(page: Any, region: str) -> dict[str, str]:
    """The label and value of each row of a "Give these to your identity provider" region."""
    box = page.get_by_role("region", name=f"Give these to your identity provider ({region})")
    await box.locator("code.value").first.wait_for()
    labels = await box.locator("dt").all_inner_texts()
    values = await box.locator("code.value").all_inner_texts()
    return dict(zip(labels, values, strict=True))


async def copies(page: Any, region: str, values: dict[str, str]) -> None:
    """Each copy button of the region puts its value on the clipboard and says so."""
    box = page.get_by_role("region", name=f"Give these to your identity provider ({region})")
    for label, value in values.items():
        await page.evaluate("navigator.clipboard.writeText('')")
        button = page.get_by_role("button", name=f"Copy {label}")
        await box.locator(button).click()
        await box.locator("dd").filter(has=button).get_by_role("status").filter(has_text="Copied.").wait_for()
        assert await page.evaluate("navigator.clipboard.readText()") == value, label


async def no_violations(page: Any, where: str) -> None:
    assert await axe_violations(page) == [], where


async def authorization_request(browser: Any, srv: RunningServer, issuer: str) -> dict[str, list[str]]:
    """The query of the request a browser makes to the provider when it starts a sign-in here."""
    page = await (await browser.new_context()).new_page()
    async with page.expect_request(lambda r: r.url.startswith(f"{issuer}/")) as sent:
        await page.goto(f"{srv.url}/oidc/login")
    request = await sent.value
    await page.context.close()
    return parse_qs(urlsplit(request.url).query)


async def save_scopes(form: Any, scopes: str) -> None:
    await form.get_by_role("textbox", name="Scopes").fill(scopes)
    await form.get_by_role("button", name="Save").click()


async def test_the_forms_show_the_values_the_server_uses_copy_them_and_save_the_scopes(
    tmp_path: Path, dist: Path
) -> None:
    accounts = {"alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice"}}
    async with (
        running_server(tmp_path, parts=SSO_PARTS, web_dist=dist) as srv,
        oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer,
        chromium() as browser,
        httpx.AsyncClient() as http,
    ):
        page, console = await owner_page(browser, srv, permissions=CLIPBOARD)

        # SAML: the three values, against the metadata served at the metadata URL shown.
        saml = await shown_values(page, "SAML")
        assert list(saml) == ["ACS URL", "Entity ID", "Metadata URL"]
        metadata = await http.get(saml["Metadata URL"])
        assert metadata.status_code == 200
        assert served_saml(metadata.content) == (saml["Entity ID"], saml["ACS URL"])
        await copies(page, "SAML", saml)
        await no_violations(page, "SAML tab, light, desktop")

        # A pinned entity id is shown at once after saving, and it is what the metadata says.
        form = page.get_by_role("form", name="SAML connection")
        await form.get_by_label("Our entity id").fill("urn:hangar:pinned")
        await form.get_by_role("button", name="Save").click()
        await form.get_by_role("status").filter(has_text="Saved").wait_for()
        box = page.get_by_role("region", name="Give these to your identity provider (SAML)")
        await box.get_by_text("urn:hangar:pinned", exact=True).wait_for()
        metadata = await http.get(saml["Metadata URL"])
        assert served_saml(metadata.content) == ("urn:hangar:pinned", saml["ACS URL"])

        # OIDC: the redirect URI, and the scopes field.
        await page.get_by_role("tab", name="OpenID Connect").click()
        oidc = await shown_values(page, "OpenID Connect")
        assert list(oidc) == ["Redirect URI"]
        await copies(page, "OpenID Connect", oidc)
        form = page.get_by_role("form", name="OpenID Connect connection")
        scopes = form.get_by_role("textbox", name="Scopes")
        assert await scopes.input_value() == "openid email profile"
        await form.get_by_role("checkbox", name="Enabled: people may sign in with this connection").check()
        await form.get_by_label("Issuer URL").fill(peer.issuer)
        await form.get_by_label("Client id").fill(peer.client_id)

        # Refused without openid, at the field; refused one past the bound, saved at it.
        await save_scopes(form, "email profile")
        await form.get_by_role("alert").filter(has_text="config.scopes must include openid").wait_for()
        assert await scopes.get_attribute("aria-invalid") == "true"
        await no_violations(page, "OIDC tab with a refused field, light, desktop")
        at_limit = "openid " + "s" * (MAX_SCOPES_CHARS - len("openid "))
        await save_scopes(form, at_limit + "s")
        await form.get_by_role("alert").filter(has_text=f"at most {MAX_SCOPES_CHARS} are allowed").wait_for()
        await save_scopes(form, at_limit)
        await form.get_by_role("status").filter(has_text="Saved. The connection is on").wait_for()
        assert await scopes.get_attribute("aria-invalid") is None
        await save_scopes(form, "openid  email")
        await form.get_by_role("status").filter(has_text="Saved. The connection is on").wait_for()
        await page.reload()
        await page.get_by_role("tab", name="OpenID Connect").click()
        assert await form.get_by_role("textbox", name="Scopes").input_value() == "openid email"

        # The real authorization request: the redirect URI shown, the scopes saved.
        request = await authorization_request(browser, srv, peer.issuer)
        assert request["redirect_uri"] == [oidc["Redirect URI"]]
        assert request["scope"] == ["openid email"]

        # SCIM: the base URL shown answers with the token generated here.
        scim = await shown_values(page, "SCIM")
        assert list(scim) == ["SCIM base URL"]
        await copies(page, "SCIM", scim)
        await page.get_by_role("button", name="Generate token").click()
        token = await page.get_by_role("textbox", name="New SCIM token").input_value()
        answer = await http.get(
            f"{scim['SCIM base URL']}/ServiceProviderConfig", headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 200
        assert answer.json()["meta"]["location"] == f"{scim['SCIM base URL']}/ServiceProviderConfig"
        assert console.errors == []

        # The screen, dark on a desktop, and light and dark at phone width, nothing sideways.
        for where, context in (
            ("dark, desktop", {"color_scheme": "dark"}),
            ("light, phone", {"viewport": PHONE, "color_scheme": "light"}),
            ("dark, phone", {"viewport": PHONE, "color_scheme": "dark"}),
        ):
            other, other_console = await owner_page(browser, srv, **context)
            await shown_values(other, "SAML")
            await no_violations(other, f"SAML tab, {where}")
            await other.get_by_role("tab", name="OpenID Connect").click()
            await shown_values(other, "OpenID Connect")
            await no_violations(other, f"OIDC tab, {where}")
            overflow = await other.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"the SSO settings scroll sideways ({where})"
            assert other_console.errors == []
            await other.context.close()
