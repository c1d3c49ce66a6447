"""AuthnRequest building and its redirect encoding, bounded inflation, IdP metadata parsing, SP metadata."""

from __future__ import annotations

import base64
import zlib
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from lxml import etree

from hangar.core.clock import FakeClock
from hangar.sso.errors import SsoError
from hangar.sso.saml import (
    PendingRequests,
    SeenAssertions,
    build_authn_request,
    inflate_bounded,
    parse_idp_metadata,
    sp_metadata_xml,
)
from hangar.sso.saml.request import MAX_INFLATED_BYTES, deflate_encode
from hangar.sso.saml.xml import MD, SAML, SAMLP, q
from tests.unit.sso.saml.kit import ACS, IDP, NOW, SP, SSO_URL, idp_metadata_xml, keypair
from tests.unit.sso.saml.state import state_db


def test_authn_request_round_trips_through_the_redirect_binding() -> None:
    req = build_authn_request(
        sp_entity_id=SP, acs_url=ACS, idp_sso_url=SSO_URL + "?tenant=1", now=NOW, relay_state="r1"
    )
    url = urlsplit(req.redirect_url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == SSO_URL
    params = parse_qs(url.query)
    assert params["tenant"] == ["1"]
    assert params["RelayState"] == ["r1"]
    xml = inflate_bounded(params["SAMLRequest"][0])
    root = etree.fromstring(xml)
    assert root.tag == q(SAMLP, "AuthnRequest")
    assert root.get("ID") == req.id and req.id.startswith("_") and len(req.id) == 33
    assert root.get("Destination") == SSO_URL + "?tenant=1"
    assert root.get("AssertionConsumerServiceURL") == ACS
    assert root.get("IssueInstant") == "2026-01-01T12:00:00Z"
    issuer = root.find(q(SAML, "Issuer"))
    assert issuer is not None and issuer.text == SP


def test_request_ids_are_unique() -> None:
    ids = {build_authn_request(sp_entity_id=SP, acs_url=ACS, idp_sso_url=SSO_URL, now=NOW).id for _ in range(50)}
    assert len(ids) == 50


def test_deflate_bomb_is_refused_without_inflating_it_all() -> None:
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = comp.compress(b"\0" * (32 * 1024 * 1024)) + comp.flush()
    encoded = base64.b64encode(bomb).decode()
    assert len(encoded) < 64 * 1024  # small enough to be let in, 32 MiB once inflated
    with pytest.raises(SsoError) as caught:
        inflate_bounded(encoded, limit=MAX_INFLATED_BYTES)
    assert caught.value.sso_code == "malformed"
    assert "inflates beyond" in caught.value.message


@pytest.mark.parametrize(
    ("encoded", "why"),
    [
        ("%%%", "not base64"),
        (base64.b64encode(b"plain text, not deflate").decode(), "not raw DEFLATE"),
        (base64.b64encode(base64.b64decode(deflate_encode(b"<x/>" * 10))[:6]).decode(), "truncated"),
        ("A" * (70 * 1024), "too long"),
    ],
)
def test_bad_redirect_messages_are_malformed(encoded: str, why: str) -> None:
    with pytest.raises(SsoError) as caught:
        inflate_bounded(encoded)
    assert caught.value.sso_code == "malformed"
    assert why in caught.value.message


def test_idp_metadata_is_read() -> None:
    md = parse_idp_metadata(idp_metadata_xml(certs=(keypair("idp"), keypair("rollover"))))
    assert md.entity_id == IDP
    assert md.sso_url == SSO_URL
    assert len(md.certificates) == 2


def test_entities_descriptor_with_one_idp_is_read() -> None:
    wrapped = f'<md:EntitiesDescriptor xmlns:md="{MD}">{idp_metadata_xml()}</md:EntitiesDescriptor>'
    assert parse_idp_metadata(wrapped).entity_id == IDP


@pytest.mark.parametrize(
    ("xml", "why"),
    [
        ("not xml", "not well-formed"),
        ('<!DOCTYPE x [<!ENTITY a "b">]><x/>', "DOCTYPE"),
        (f'<md:EntityDescriptor xmlns:md="{MD}"/>', "no entityID"),
        (f'<md:EntityDescriptor xmlns:md="{MD}" entityID="x"/>', "no IDPSSODescriptor"),
        (idp_metadata_xml().replace("HTTP-Redirect", "HTTP-Artifact"), "HTTP-Redirect"),
        (idp_metadata_xml().replace('use="signing"', 'use="encryption"'), "no signing certificate"),
        (idp_metadata_xml().replace(keypair().cert_b64[:20], "!!!!"), "cannot be read"),
        (idp_metadata_xml().replace("urn:oasis:names:tc:SAML:2.0:protocol", "urn:x"), "SAML 2.0"),
        (idp_metadata_xml().replace(SSO_URL, "javascript:alert(1)"), "not an http(s) URL"),
    ],
)
def test_bad_idp_metadata_is_refused_naming_the_problem(xml: str, why: str) -> None:
    with pytest.raises(SsoError) as caught:
        parse_idp_metadata(xml)
    assert caught.value.sso_code == "malformed"
    assert why in caught.value.message
    assert caught.value.message.startswith("idpMetadataXml")


def test_sp_metadata_names_our_entity_and_consumer() -> None:
    root = etree.fromstring(sp_metadata_xml(SP, ACS))
    assert root.tag == q(MD, "EntityDescriptor") and root.get("entityID") == SP
    sp = root.find(q(MD, "SPSSODescriptor"))
    assert sp is not None and sp.get("WantAssertionsSigned") == "true"
    acs = sp.find(q(MD, "AssertionConsumerService"))
    assert acs is not None and acs.get("Location") == ACS
    assert acs.get("Binding") == "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"


def test_pending_requests_are_one_use_and_expire() -> None:
    clock = FakeClock(NOW)
    pending = PendingRequests(clock, state_db(), ttl=timedelta(minutes=10))
    pending.add("_a", relay="desktop", client_origin=None)
    pending.add("_b")
    assert pending.peek("_a") is not None
    taken = pending.take("_a")
    assert taken is not None and taken.relay == "desktop"
    assert pending.take("_a") is None
    clock.advance(601)
    assert pending.peek("_b") is None and pending.take("_b") is None


def test_pending_requests_are_bounded() -> None:
    pending = PendingRequests(FakeClock(NOW), state_db(), capacity=3)
    for i in range(5):
        pending.add(f"_{i}")
    assert len(pending) == 3
    assert pending.peek("_0") is None and pending.peek("_4") is not None


def test_seen_assertions_refuse_a_second_use_until_expiry() -> None:
    clock = FakeClock(NOW)
    seen = SeenAssertions(clock, state_db())
    assert seen.remember("k", NOW + timedelta(minutes=1))
    assert seen.seen("k") and not seen.remember("k", NOW + timedelta(minutes=1))
    clock.advance(61)
    assert not seen.seen("k") and seen.remember("k", NOW + timedelta(minutes=5))
