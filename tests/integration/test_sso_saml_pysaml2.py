"""The whole SP-initiated round trip against a real identity provider: pysaml2's IdP (signing with xmlsec1)
on loopback, our real server, HTTP all the way (httpx as the browser), and the credential used over RPC."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest

from hangar.identity import IdentityService
from hangar.sso.saml.service import saml_service
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.sso.saml.pysaml2_idp import RSA_SHA1, SHA1, XMLSEC1, Pysaml2Idp, running_idp
from tests.unit.sso.saml.serving import enable_saml, read_post_form

pytestmark = pytest.mark.skipif(XMLSEC1 is None, reason="xmlsec1 (Debian package) is needed by pysaml2")


async def _sign_in(
    client: httpx.AsyncClient, server_url: str, query: str = "relay=desktop", accept: str = "text/html"
) -> httpx.Response:
    """Browser steps: our login redirect, the IdP's auto-posting form, the post to our ACS."""
    start = await client.get(f"{server_url}/saml/login?{query}")
    assert start.status_code == 302, start.text
    to_idp = start.headers["location"]
    assert "SAMLRequest=" in to_idp and "RelayState=" in to_idp
    page = await client.get(to_idp)
    assert page.status_code == 200, page.text
    action, fields = read_post_form(page.text)
    assert action == f"{server_url}/saml/acs"
    assert set(fields) >= {"SAMLResponse", "RelayState"}
    return await client.post(action, data=fields, headers={"Accept": accept})


def _token(location: str, prefix: str) -> str:
    assert location.startswith(prefix + "#token="), location
    return unquote(location.split("#token=", 1)[1])


async def test_round_trip_with_pysaml2_idp_signs_in_and_the_credential_works(tmp_path: Path) -> None:
    async with running_server(tmp_path / "srv") as srv, httpx.AsyncClient() as client:
        sp_md = await client.get(f"{srv.url}/saml/metadata")
        assert sp_md.status_code == 200
        assert sp_md.headers["content-type"].startswith("application/samlmetadata+xml")
        workdir = tmp_path / "idp"
        workdir.mkdir()
        with running_idp(workdir, sp_md.content) as idp:
            idp.user.attributes = {
                "email": ["ada@example.test"],
                "displayName": ["Ada Lovelace"],
                "groups": ["engineers", "platform-admins"],
            }
            ws_id = await srv.new_workspace("team")
            await enable_saml(
                srv.ctx, idp.metadata_xml(), wantResponseSigned=True, groupRoleMap={"platform-admins": "admin"}
            )
            users_before = len(await srv.ctx.service(IdentityService).list_users())

            done = await _sign_in(client, srv.url)
            assert done.status_code == 303, done.text
            token = _token(done.headers["location"], "hangar://auth/complete")
            assert len(idp.requests_seen) == 1

            async with RpcClient(srv.ws_url, token) as rpc:
                me = await rpc.call("users.me")
            assert me["email"] == "ada@example.test"
            assert me["displayName"] == "Ada Lovelace"
            assert me["isServerOwner"] is False
            # autoMember and the group mapping, from the groups attribute the IdP sent.
            assert {"id": ws_id, "name": "team", "role": "admin"} in me["workspaces"]
            user = await srv.ctx.service(IdentityService).find_user_by_sso(idp.entity_id, "ada@example.test")
            assert user is not None and user.id == me["id"]
            assert len(await srv.ctx.service(IdentityService).list_users()) == users_before + 1

            # Signing in again finds the same user through the subject pin.
            again = await _sign_in(client, srv.url)
            token2 = _token(again.headers["location"], "hangar://auth/complete")
            async with RpcClient(srv.ws_url, token2) as rpc:
                assert (await rpc.call("users.me"))["id"] == me["id"]
            assert len(await srv.ctx.service(IdentityService).list_users()) == users_before + 1


async def test_web_popup_relay_honours_only_trusted_client_origins(tmp_path: Path) -> None:
    dev = ("http://localhost:5173",)
    async with running_server(tmp_path / "srv", trusted_origins=dev) as srv, httpx.AsyncClient() as client:
        sp_md = (await client.get(f"{srv.url}/saml/metadata")).content
        (tmp_path / "idp").mkdir()
        with running_idp(tmp_path / "idp", sp_md) as idp:
            await enable_saml(srv.ctx, idp.metadata_xml())
            trusted = await _sign_in(client, srv.url, "relay=web-popup&client_origin=http://localhost:5173")
            location = trusted.headers["location"]
            target = location.split("#", 1)[0]
            assert urlsplit(target).path == "/auth/popup-complete"
            assert parse_qs(urlsplit(target).query)["client_origin"] == ["http://localhost:5173"]
            _token(location, target)

            untrusted = await _sign_in(client, srv.url, "relay=web-popup&client_origin=https://evil.example.net")
            assert untrusted.headers["location"].startswith("/auth/popup-complete#token=")

            plain = await _sign_in(client, srv.url, "")
            assert plain.headers["location"].startswith("/auth/complete#token=")
            assert "&state=" not in plain.headers["location"]

            # The state the client kept comes back with the credential, through the real identity provider.
            kept = "pysaml2-state-" + "s" * 30
            echoed = await _sign_in(client, srv.url, f"relay=web-popup&client_state={kept}")
            assert echoed.headers["location"].endswith(f"&state={kept}")


async def test_sha1_signed_responses_from_the_real_idp_are_refused_and_provision_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path / "srv") as srv, httpx.AsyncClient() as client:
        sp_md = (await client.get(f"{srv.url}/saml/metadata")).content
        (tmp_path / "idp").mkdir()
        with running_idp(tmp_path / "idp", sp_md) as idp:
            idp.sign_alg, idp.digest_alg = RSA_SHA1, SHA1
            idp.user.name_id = "grace@example.test"
            await enable_saml(srv.ctx, idp.metadata_xml())
            users_before = len(await srv.ctx.service(IdentityService).list_users())
            refused = await _sign_in(client, srv.url, accept="application/json")
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "signature"
            assert "SHA-1" in refused.json()["error"]["message"]
            html_page = await _sign_in(client, srv.url)
            assert html_page.status_code == 400 and "signature" in html_page.text
            assert len(await srv.ctx.service(IdentityService).list_users()) == users_before
            assert await srv.ctx.service(IdentityService).find_user_by_email("grace@example.test") is None


async def test_want_response_signed_refuses_an_idp_that_signs_only_the_assertion(tmp_path: Path) -> None:
    async with running_server(tmp_path / "srv") as srv, httpx.AsyncClient() as client:
        sp_md = (await client.get(f"{srv.url}/saml/metadata")).content
        (tmp_path / "idp").mkdir()
        with running_idp(tmp_path / "idp", sp_md) as idp:
            idp.sign_response = False
            await enable_saml(srv.ctx, idp.metadata_xml(), wantResponseSigned=True)
            refused = await _sign_in(client, srv.url, accept="application/json")
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "signature"
            # The same IdP answer is accepted once the response signature is no longer wanted.
            await enable_saml(srv.ctx, idp.metadata_xml(), wantResponseSigned=False)
            accepted = await _sign_in(client, srv.url)
            assert accepted.status_code == 303


async def test_a_replayed_idp_response_is_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path / "srv") as srv, httpx.AsyncClient() as client:
        sp_md = (await client.get(f"{srv.url}/saml/metadata")).content
        (tmp_path / "idp").mkdir()
        with running_idp(tmp_path / "idp", sp_md) as idp:
            await enable_saml(srv.ctx, idp.metadata_xml())
            start = await client.get(f"{srv.url}/saml/login?relay=desktop")
            action, fields = read_post_form((await client.get(start.headers["location"])).text)
            first = await client.post(action, data=fields)
            assert first.status_code == 303
            replay = await client.post(action, data=fields, headers={"Accept": "application/json"})
            assert replay.status_code == 400
            assert replay.json()["error"]["code"] == "invalid"
            assert len(saml_service(srv.ctx).pending) == 0


def test_idp_helper_refuses_without_xmlsec1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.unit.sso.saml.pysaml2_idp as peer

    monkeypatch.setattr(peer, "XMLSEC1", None)
    with pytest.raises(RuntimeError, match="xmlsec1"):
        Pysaml2Idp(tmp_path, b"<x/>")
