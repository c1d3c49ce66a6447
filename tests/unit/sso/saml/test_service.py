"""The saved SAML connection as the verifier sees it, and the login start remembering its request."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from hangar.core.clock import FakeClock
from hangar.sso.config import SamlConnection
from hangar.sso.errors import SsoError
from hangar.sso.saml.service import SamlService
from tests.unit.sso.saml.kit import IDP, NOW, SSO_URL, idp_metadata_xml
from tests.unit.sso.saml.state import state_db

ORIGIN = "https://hangar.example.com"


def test_settings_follow_the_saved_record() -> None:
    service = SamlService(FakeClock(NOW), state_db())
    conn = SamlConnection(
        enabled=True,
        idpMetadataXml=idp_metadata_xml(),
        clockSkewSeconds=5,
        allowIdpInitiated=True,
        wantResponseSigned=True,
        emailAttribute="mail",
        displayNameAttribute="cn",
        groupsAttribute="memberOf",
    )
    s = service.settings(conn, ORIGIN)
    assert (s.sp_entity_id, s.acs_url, s.idp.entity_id) == (f"{ORIGIN}/saml", f"{ORIGIN}/saml/acs", IDP)
    assert s.clock_skew == timedelta(seconds=5)
    assert s.allow_idp_initiated and s.want_response_signed
    assert (s.email_attribute, s.display_name_attribute, s.groups_attribute) == ("mail", "cn", "memberOf")
    pinned = service.settings(conn.model_copy(update={"spEntityId": "urn:pinned"}), ORIGIN)
    assert pinned.sp_entity_id == "urn:pinned"
    # Parsed metadata is reused while the saved XML is unchanged.
    assert service.idp_metadata(conn) is s.idp


def test_start_login_remembers_the_request_with_its_relay() -> None:
    service = SamlService(FakeClock(NOW), state_db())
    conn = SamlConnection(enabled=True, idpMetadataXml=idp_metadata_xml())
    request = service.start_login(
        conn, ORIGIN, relay="web-popup", client_origin="http://localhost:5173", client_state="k" * 43
    )
    assert request.redirect_url.startswith(SSO_URL + "?SAMLRequest=")
    # The client's state stays on this side: the identity provider sees only our request id.
    assert parse_qs(urlsplit(request.redirect_url).query)["RelayState"] == [request.id]
    assert "k" * 43 not in request.redirect_url
    pending = service.pending.peek(request.id)
    assert pending is not None
    assert (pending.relay, pending.client_origin, pending.client_state) == (
        "web-popup",
        "http://localhost:5173",
        "k" * 43,
    )


def test_a_record_without_metadata_is_refused() -> None:
    with pytest.raises(SsoError) as caught:
        SamlService(FakeClock(NOW), state_db()).settings(SamlConnection(), ORIGIN)
    assert caught.value.sso_code == "invalid"
