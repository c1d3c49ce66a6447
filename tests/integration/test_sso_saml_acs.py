"""The SAML routes of the real server over HTTP: every corpus attack posted to /saml/acs is refused with its
code and provisions nothing; the login redirect, the metadata, bounds on what the ACS reads, and refusals by
the login outcome."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
from lxml import etree

from hangar.core.clock import FakeClock
from hangar.httpkit.ratelimit import Budget, RateLimits
from hangar.identity import IdentityService
from hangar.sso.saml import inflate_bounded
from hangar.sso.saml.service import saml_service
from hangar.sso.saml.xml import MD, SAML, SAMLP, q
from tests.support.server import RunningServer, running_server
from tests.unit.sso.saml.attacks import ATTACKS
from tests.unit.sso.saml.kit import ACS, NOW, SP, SSO_URL, Spec, b64, idp_metadata_xml, signed_response
from tests.unit.sso.saml.serving import enable_saml

# The kit's responses are addressed to this origin; the server is told it is its public URL.
PUBLIC_URL = "http://127.0.0.1:8420"
JSON = {"Accept": "application/json"}


async def _post(client: httpx.AsyncClient, srv: RunningServer, saml_response: str) -> httpx.Response:
    return await client.post(f"{srv.url}/saml/acs", data={"SAMLResponse": saml_response}, headers=JSON)


async def test_every_corpus_attack_is_refused_over_http_and_provisions_nothing(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv,
        httpx.AsyncClient() as client,
    ):
        assert f"{PUBLIC_URL}/saml/acs" == ACS and f"{PUBLIC_URL}/saml" == SP
        await enable_saml(srv.ctx, idp_metadata_xml())
        # The whole corpus comes from one client in a few seconds: past the sign-in budget of a real client.
        srv.ctx.service(RateLimits).budgets["signin"] = Budget(burst=10_000, per_minute=10_000)
        service = saml_service(srv.ctx)
        users_before = {u.id for u in await srv.ctx.service(IdentityService).list_users()}
        for attack in ATTACKS:
            want = bool(attack.options.get("want_response_signed", False))
            await enable_saml(srv.ctx, idp_metadata_xml(), wantResponseSigned=want)
            for rid in ("_req0001", "_req0002"):
                if service.pending.peek(rid) is None:
                    service.pending.add(rid, relay="desktop")
            answer = await _post(client, srv, b64(attack.make()))
            assert answer.status_code == 400, attack.name
            assert answer.json()["error"]["code"] == attack.code, (attack.name, answer.json())
        assert {u.id for u in await srv.ctx.service(IdentityService).list_users()} == users_before

        # The genuine response the attacks were crafted from goes through, once.
        await enable_saml(srv.ctx, idp_metadata_xml())
        genuine = b64(signed_response())
        ok = await _post(client, srv, genuine)
        assert ok.status_code == 303, ok.text
        assert ok.headers["location"].startswith("hangar://auth/complete#token=")
        assert ok.headers["cache-control"] == "no-store"
        assert len(await srv.ctx.service(IdentityService).list_users()) == len(users_before) + 1
        again = await _post(client, srv, genuine)
        assert again.json()["error"]["code"] == "invalid"


async def test_failure_page_without_json_shows_the_code(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv,
        httpx.AsyncClient() as client,
    ):
        await enable_saml(srv.ctx, idp_metadata_xml())
        page = await client.post(f"{srv.url}/saml/acs", data={"SAMLResponse": b64(signed_response())})
        assert page.status_code == 400
        assert page.headers["content-type"].startswith("text/html")
        assert "<code id='code'>request_match</code>" in page.text


async def test_login_redirects_to_the_idp_with_a_pending_request(tmp_path: Path) -> None:
    async with (
        running_server(
            tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL, trusted_origins=("http://localhost:3000",)
        ) as srv,
        httpx.AsyncClient() as client,
    ):
        await enable_saml(srv.ctx, idp_metadata_xml())
        start = await client.get(f"{srv.url}/saml/login?relay=web-popup&client_origin=http://localhost:3000")
        assert start.status_code == 302
        url = urlsplit(start.headers["location"])
        assert f"{url.scheme}://{url.netloc}{url.path}" == SSO_URL
        params = parse_qs(url.query)
        request = etree.fromstring(inflate_bounded(params["SAMLRequest"][0]))
        assert request.tag == q(SAMLP, "AuthnRequest")
        assert request.get("AssertionConsumerServiceURL") == ACS
        issuer = request.find(q(SAML, "Issuer"))
        assert issuer is not None and issuer.text == SP
        rid = request.get("ID") or ""
        assert params["RelayState"] == [rid]
        pending = saml_service(srv.ctx).pending.peek(rid)
        assert pending is not None
        assert (pending.relay, pending.client_origin) == ("web-popup", "http://localhost:3000")

        # The response to that request completes the web-popup hand-off to the trusted origin.
        response = signed_response(Spec(in_response_to=rid, scd_in_response_to=rid))
        done = await _post(client, srv, b64(response))
        assert done.status_code == 303
        assert done.headers["location"].startswith(
            "/auth/popup-complete?client_origin=http%3A%2F%2Flocalhost%3A3000#token="
        )

        bad_relay = await client.get(f"{srv.url}/saml/login?relay=mobile", headers=JSON)
        assert bad_relay.status_code == 400 and bad_relay.json()["error"]["code"] == "invalid"
        assert "relay" in bad_relay.json()["error"]["message"]


async def test_disabled_connection_refuses_login_and_acs(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        login = await c.get(f"{srv.url}/saml/login?relay=desktop", headers=JSON)
        assert login.status_code == 400 and login.json()["error"]["code"] == "invalid"
        acs = await _post(c, srv, b64(signed_response()))
        assert acs.status_code == 400 and acs.json()["error"]["code"] == "invalid"
        assert "not enabled" in acs.json()["error"]["message"]


async def test_metadata_names_our_entity_and_honours_a_pinned_entity_id(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        root = etree.fromstring((await c.get(f"{srv.url}/saml/metadata")).content)
        assert root.tag == q(MD, "EntityDescriptor") and root.get("entityID") == SP
        acs = root.find(f".//{q(MD, 'AssertionConsumerService')}")
        assert acs is not None and acs.get("Location") == ACS
        await enable_saml(srv.ctx, idp_metadata_xml(), spEntityId="urn:hangar:pinned")
        pinned = etree.fromstring((await c.get(f"{srv.url}/saml/metadata")).content)
        assert pinned.get("entityID") == "urn:hangar:pinned"
        # Responses must now name the pinned audience.
        saml_service(srv.ctx).pending.add("_req0001")
        wrong = await _post(c, srv, b64(signed_response()))
        assert wrong.json()["error"]["code"] == "audience"
        right = await _post(c, srv, b64(signed_response(Spec(audience="urn:hangar:pinned"))))
        assert right.status_code == 303


async def test_acs_bounds_what_it_reads(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        await enable_saml(srv.ctx, idp_metadata_xml())
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        bomb = base64.b64encode(comp.compress(b"<" * (32 * 1024 * 1024)) + comp.flush()).decode()
        cases = {
            "deflate bomb": await _post(c, srv, bomb),
            "not base64": await _post(c, srv, "%%%not base64%%%"),
            "empty": await _post(c, srv, ""),
            "oversized": await _post(c, srv, "A" * (1024 * 1024 + 10)),
            "json body": await c.post(f"{srv.url}/saml/acs", json={"SAMLResponse": "x"}, headers=JSON),
            "two responses": await c.post(
                f"{srv.url}/saml/acs",
                content=b"SAMLResponse=a&SAMLResponse=b",
                headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"},
            ),
        }
        for name, answer in cases.items():
            assert answer.status_code == 400, name
            assert answer.json()["error"]["code"] == "malformed", (name, answer.json())
        assert (await c.get(f"{srv.url}/saml/acs")).status_code == 405


async def test_login_outcome_refusal_provisions_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        await enable_saml(srv.ctx, idp_metadata_xml(), allowJit=False)
        saml_service(srv.ctx).pending.add("_req0001")
        before = len(await srv.ctx.service(IdentityService).list_users())
        answer = await _post(c, srv, b64(signed_response()))
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid"
        assert "just-in-time" in answer.json()["error"]["message"]
        assert len(await srv.ctx.service(IdentityService).list_users()) == before


async def test_a_failing_internal_seam_answers_internal_and_provisions_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        await enable_saml(srv.ctx, idp_metadata_xml())
        service = saml_service(srv.ctx)
        service.pending.add("_req0001")
        before = len(await srv.ctx.service(IdentityService).list_users())

        def broken(conn: object, key: str, until: object, now: object) -> bool:
            raise OSError("replay store unavailable")

        service.seen.remember_in = broken  # type: ignore[method-assign,assignment]
        answer = await _post(c, srv, b64(signed_response()))
        assert answer.status_code == 400
        assert answer.json()["error"] == {"code": "internal", "message": "the server could not complete the sign-in"}
        assert len(await srv.ctx.service(IdentityService).list_users()) == before


async def test_unreadable_saved_metadata_is_named_in_the_failure(tmp_path: Path) -> None:
    async with running_server(tmp_path, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv, httpx.AsyncClient() as c:
        await enable_saml(srv.ctx, "<md:EntityDescriptor xmlns:md='urn:oasis:names:tc:SAML:2.0:metadata'/>")
        answer = await c.get(f"{srv.url}/saml/login?relay=desktop", headers=JSON)
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "malformed"
        assert answer.json()["error"]["message"].startswith("idpMetadataXml")
