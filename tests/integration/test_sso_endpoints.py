"""The values an identity provider's administrator registers (``sso.endpoints``) against what the server really
uses: the SAML metadata it serves, the ``redirect_uri`` of a real OIDC authorization request, the SCIM resources'
own locations. Asked for through another name of the same server (``localhost`` for ``127.0.0.1``), every one stays
the configured value: the browser's address is never the source. And the OIDC scopes: saved, validated on both
sides of their bound, sent in the authorization request, and honoured by the certified ``oidc-provider``."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
from lxml import etree

from hangar.sso.config import MAX_SCOPES_CHARS
from tests.peers.oidc_provider import drive_login, oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

MD = "{urn:oasis:names:tc:SAML:2.0:metadata}"
ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice Liddell"},
}


def served_saml(xml: bytes) -> tuple[str, str]:
    """The entity id and the assertion consumer URL of an SP entity descriptor."""
    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    acs = root.find(f"{MD}SPSSODescriptor/{MD}AssertionConsumerService")
    assert acs is not None
    return root.get("entityID"), acs.get("Location")


def other_name(srv: RunningServer) -> str:
    """The same listener under another name a browser may use for it."""
    return srv.url.replace("127.0.0.1", "localhost")


async def authorization_request(http: httpx.AsyncClient, login_url: str) -> dict[str, list[str]]:
    """The query of the authorization request ``/oidc/login`` sends the browser to."""
    start = await http.get(login_url)
    assert start.status_code == 302, start.text
    return parse_qs(urlsplit(start.headers["location"]).query)


async def test_the_values_shown_are_the_ones_the_sign_ins_use_whatever_address_is_asked(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=ACCOUNTS) as peer,
        httpx.AsyncClient(follow_redirects=False) as http,
    ):
        shown = await c.call("sso.endpoints")
        assert shown == {
            "origin": srv.url,
            "originSource": "listener",
            "samlEntityId": f"{srv.url}/saml",
            "samlAcsUrl": f"{srv.url}/saml/acs",
            "samlMetadataUrl": f"{srv.url}/saml/metadata",
            "oidcRedirectUri": f"{srv.url}/oidc/callback",
            "scimBaseUrl": f"{srv.url}/scim/v2",
        }
        token = (await c.call("sso.scimRegenerateToken"))["token"]
        await c.call(
            "sso.saveConfig", kind="oidc", config={"enabled": True, "issuer": peer.issuer, "clientId": "hangar"}
        )
        for base in (srv.url, other_name(srv)):
            metadata = await http.get(f"{base}/saml/metadata")
            assert served_saml(metadata.content) == (shown["samlEntityId"], shown["samlAcsUrl"]), base
            request = await authorization_request(http, f"{base}/oidc/login")
            assert request["redirect_uri"] == [shown["oidcRedirectUri"]], base
            config = await http.get(
                f"{base}/scim/v2/ServiceProviderConfig", headers={"Authorization": f"Bearer {token}"}
            )
            assert config.json()["meta"]["location"] == f"{shown['scimBaseUrl']}/ServiceProviderConfig", base
        # The metadata URL shown is where the metadata is.
        assert (await http.get(shown["samlMetadataUrl"])).content == metadata.content

        # A pinned entity id is what both show.
        await c.call("sso.saveConfig", kind="saml", config={"spEntityId": "urn:hangar:pinned"})
        assert (await c.call("sso.endpoints"))["samlEntityId"] == "urn:hangar:pinned"
        metadata = await http.get(f"{other_name(srv)}/saml/metadata")
        assert served_saml(metadata.content) == ("urn:hangar:pinned", shown["samlAcsUrl"])


async def test_behind_a_proxy_the_public_url_is_the_source(tmp_path: Path) -> None:
    public = "https://hangar.example.com"
    async with (
        running_server(tmp_path, parts=SSO_PARTS, public_url=public) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        oidc_provider(redirect_uris=[f"{public}/oidc/callback"], accounts=ACCOUNTS) as peer,
        httpx.AsyncClient(follow_redirects=False) as http,
    ):
        shown = await c.call("sso.endpoints")
        assert shown["origin"] == public and shown["originSource"] == "publicUrl"
        assert (shown["samlAcsUrl"], shown["oidcRedirectUri"], shown["scimBaseUrl"]) == (
            f"{public}/saml/acs",
            f"{public}/oidc/callback",
            f"{public}/scim/v2",
        )
        assert (await c.call("sso.status"))["origin"] == public
        metadata = await http.get(f"{srv.url}/saml/metadata")
        assert served_saml(metadata.content) == (f"{public}/saml", f"{public}/saml/acs")
        await c.call(
            "sso.saveConfig", kind="oidc", config={"enabled": True, "issuer": peer.issuer, "clientId": "hangar"}
        )
        request = await authorization_request(http, f"{srv.url}/oidc/login")
        assert request["redirect_uri"] == [f"{public}/oidc/callback"]


async def test_only_the_server_owner_reads_them(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv:
        ws = await srv.new_workspace("W")
        token = await srv.new_user_token(ws, "owner", name="wsowner")
        async with RpcClient(srv.ws_url, token) as c:
            with pytest.raises(RpcError) as err:
                await c.call("sso.endpoints")
        assert err.value.code == "forbidden"


async def saved_scopes(c: RpcClient, scopes: Any) -> str:
    saved = await c.call("sso.saveConfig", kind="oidc", config={"scopes": scopes})
    return str(saved["scopes"])


async def refused_scopes(c: RpcClient, scopes: Any) -> str:
    with pytest.raises(RpcError) as err:
        await c.call("sso.saveConfig", kind="oidc", config={"scopes": scopes})
    assert err.value.code == "invalid_args"
    assert "config.scopes" in err.value.message
    return err.value.message


async def test_scopes_are_validated_on_both_sides_of_the_bound(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        assert (await c.call("sso.getConfig", kind="oidc"))["scopes"] == "openid email profile"
        assert await saved_scopes(c, "openid  email\n groups") == "openid email groups"
        at_limit = "openid " + "s" * (MAX_SCOPES_CHARS - len("openid "))
        assert len(at_limit) == MAX_SCOPES_CHARS
        assert await saved_scopes(c, at_limit) == at_limit
        message = await refused_scopes(c, at_limit + "s")
        assert f"is {MAX_SCOPES_CHARS + 1} characters; at most {MAX_SCOPES_CHARS}" in message
        assert "must include openid" in await refused_scopes(c, "email profile")
        assert "must include openid" in await refused_scopes(c, "")
        assert "'a\"b' is not a scope" in await refused_scopes(c, 'openid a"b')
        assert "'naïve' is not a scope" in await refused_scopes(c, "openid naïve")
        assert "names 'email' twice" in await refused_scopes(c, "openid email email")
        await refused_scopes(c, ["openid"])
        # A refusal keeps what was saved; null brings the default back.
        assert (await c.call("sso.getConfig", kind="oidc"))["scopes"] == at_limit
        assert await saved_scopes(c, None) == "openid email profile"


async def test_the_scopes_saved_are_asked_for_and_the_provider_honours_them(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as c,
        oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=ACCOUNTS) as peer,
    ):
        base = {"enabled": True, "issuer": peer.issuer, "clientId": "hangar"}
        await c.call("sso.saveConfig", kind="oidc", config={**base, "scopes": "openid email"})
        async with httpx.AsyncClient(follow_redirects=False) as http:
            assert (await authorization_request(http, f"{srv.url}/oidc/login"))["scope"] == ["openid email"]
        # No profile scope, so the provider releases no name: the account is named by its email.
        assert await signed_in_as(srv) == ("alice@example.com", "alice@example.com")

        await c.call("sso.saveConfig", kind="oidc", config={"scopes": "openid email profile"})
        async with httpx.AsyncClient(follow_redirects=False) as http:
            assert (await authorization_request(http, f"{srv.url}/oidc/login"))["scope"] == ["openid email profile"]
        assert await signed_in_as(srv) == ("alice@example.com", "Alice Liddell")


async def signed_in_as(srv: RunningServer) -> tuple[str, str]:
    """A whole sign-in as alice in a fresh browser: the email and display name of the account it signs in."""
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        done = await drive_login(browser, f"{srv.url}/oidc/login?relay=desktop", login="alice")
    assert done.status_code == 303, done.text
    token = unquote(done.headers["location"].split("#token=", 1)[1])
    async with RpcClient(srv.ws_url, token) as alice:
        me = await alice.call("users.me")
    return me["email"], me["displayName"]
