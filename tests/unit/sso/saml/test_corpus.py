"""Every attack in the corpus is refused with its code; the genuine response it was crafted from passes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hangar.core.clock import FakeClock
from hangar.sso.errors import SsoError
from hangar.sso.saml import (
    PendingRequests,
    ResponseVerifier,
    SeenAssertions,
    SpSettings,
    parse_idp_metadata,
)
from tests.unit.sso.saml.attacks import ATTACKS, Attack
from tests.unit.sso.saml.kit import ACS, NOW, SP, Spec, idp_metadata_xml, signed_response, to_bytes
from tests.unit.sso.saml.state import state_db


def make_verifier(
    *, want_response_signed: bool = False, allow_idp_initiated: bool = False, clock: FakeClock | None = None
) -> tuple[ResponseVerifier, PendingRequests, SeenAssertions]:
    clock = clock or FakeClock(NOW)
    settings = SpSettings(
        sp_entity_id=SP,
        acs_url=ACS,
        idp=parse_idp_metadata(idp_metadata_xml()),
        clock_skew=timedelta(seconds=90),
        allow_idp_initiated=allow_idp_initiated,
        want_response_signed=want_response_signed,
    )
    db = state_db()
    pending = PendingRequests(clock, db)
    pending.add("_req0001", relay="desktop")
    pending.add("_req0002", relay="web-popup")
    seen = SeenAssertions(clock, db)
    return ResponseVerifier(settings, clock, pending, seen), pending, seen


@pytest.mark.parametrize("want_response_signed", [False, True])
def test_the_genuine_response_passes(want_response_signed: bool) -> None:
    verifier, pending, _ = make_verifier(want_response_signed=want_response_signed)
    who = verifier.verify_xml(to_bytes(signed_response(sign_response=want_response_signed)))
    assert who.subject == "ada@example.test"
    assert who.email == "ada@example.test"
    assert who.display_name == "Ada Lovelace"
    assert who.groups == ("engineers", "admins")
    assert who.request is not None and who.request.relay == "desktop"
    assert pending.peek("_req0001") is None  # used up


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_is_refused_with_its_code(attack: Attack) -> None:
    verifier, pending, seen = make_verifier(**attack.options)  # type: ignore[arg-type]
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(attack.make())
    assert caught.value.sso_code == attack.code, caught.value.message
    assert caught.value.http_status == 400
    assert caught.value.to_dict()["code"] == attack.code
    # A refused response uses up nothing: the pending request still works for the genuine response.
    assert pending.peek("_req0001") is not None
    assert not seen.seen(f"{verifier.settings.idp.entity_id}\n_assert0001")


def test_corpus_covers_at_least_eight_wrapping_layouts() -> None:
    assert len([a for a in ATTACKS if a.name.startswith("xsw")]) >= 8
    assert len({a.name for a in ATTACKS}) == len(ATTACKS)


def test_comment_in_name_id_reads_the_whole_value() -> None:
    """The Duo class: the IdP signed ``ada@example.test.evil.test``; a comment inserted after signing keeps the
    signature valid (canonical form drops comments), and the value read must be the whole signed string."""
    verifier, _, _ = make_verifier()
    resp = to_bytes(signed_response(Spec(name_id="ada@example.test.evil.test", attributes={})))
    injected = resp.replace(b"ada@example.test.evil.test", b"ada@example.test<!---->.evil.test")
    assert injected != resp
    who = verifier.verify_xml(injected)
    assert who.subject == "ada@example.test.evil.test"
    assert who.email == "ada@example.test.evil.test"


def test_comment_in_email_attribute_reads_the_whole_value() -> None:
    verifier, _, _ = make_verifier()
    spec = Spec(attributes={"email": ("ada@example.test.evil.test",)})
    resp = to_bytes(signed_response(spec))
    injected = resp.replace(b">ada@example.test.evil.test<", b">ada@example.test<!-- x -->.evil.test<")
    assert injected != resp
    assert verifier.verify_xml(injected).email == "ada@example.test.evil.test"


def test_skew_allowance_accepts_small_clock_differences() -> None:
    verifier, _, _ = make_verifier()
    spec = Spec(not_before=NOW + timedelta(seconds=60), now=NOW + timedelta(seconds=30))
    assert verifier.verify_xml(to_bytes(signed_response(spec))).subject == "ada@example.test"


def test_expiry_follows_the_injected_clock() -> None:
    clock = FakeClock(NOW)
    verifier, _, _ = make_verifier(clock=clock)
    data = to_bytes(signed_response())
    clock.advance(5 * 60 + 91)
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(data)
    assert caught.value.sso_code == "expired"


def test_replayed_response_is_refused() -> None:
    verifier, _, _ = make_verifier()
    data = to_bytes(signed_response())
    verifier.verify_xml(data)
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(data)
    assert caught.value.sso_code == "invalid"
    assert "replay" in caught.value.message


def test_replayed_unsolicited_response_is_refused() -> None:
    verifier, _, _ = make_verifier(allow_idp_initiated=True)
    data = to_bytes(signed_response(Spec(in_response_to=None, scd_in_response_to=None)))
    assert verifier.verify_xml(data).request is None
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(data)
    assert caught.value.sso_code == "invalid"


def test_pending_request_is_used_once() -> None:
    verifier, _, _ = make_verifier()
    verifier.verify_xml(to_bytes(signed_response()))
    second = signed_response(Spec(assertion_id="_assert0002", response_id="_resp0002"))
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(to_bytes(second))
    assert caught.value.sso_code == "request_match"


def test_pending_request_expires() -> None:
    clock = FakeClock(NOW)
    verifier, _, _ = make_verifier(clock=clock)
    clock.advance(11 * 60)
    later = signed_response(Spec(now=clock.now()))
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(to_bytes(later))
    assert caught.value.sso_code == "request_match"


def test_unsolicited_response_accepted_when_allowed() -> None:
    verifier, _, _ = make_verifier(allow_idp_initiated=True)
    who = verifier.verify_xml(to_bytes(signed_response(Spec(in_response_to=None, scd_in_response_to=None))))
    assert who.request is None


def test_expired_idp_certificate_is_refused() -> None:
    from tests.unit.sso.saml.kit import keypair

    old = keypair("old-idp", not_after=NOW - timedelta(days=1))
    clock = FakeClock(NOW)
    settings = SpSettings(sp_entity_id=SP, acs_url=ACS, idp=parse_idp_metadata(idp_metadata_xml(certs=(old,))))
    db = state_db()
    pending = PendingRequests(clock, db)
    pending.add("_req0001")
    verifier = ResponseVerifier(settings, clock, pending, SeenAssertions(clock, db))
    with pytest.raises(SsoError) as caught:
        verifier.verify_xml(to_bytes(signed_response(kp=old)))
    assert caught.value.sso_code == "signature"
    assert "not valid now" in caught.value.message


def test_metadata_with_two_certificates_accepts_either() -> None:
    from tests.unit.sso.saml.kit import keypair

    clock = FakeClock(NOW)
    certs = (keypair("idp"), keypair("rollover"))
    settings = SpSettings(sp_entity_id=SP, acs_url=ACS, idp=parse_idp_metadata(idp_metadata_xml(certs=certs)))
    for kp in certs:
        db = state_db()
        pending = PendingRequests(clock, db)
        pending.add("_req0001")
        verifier = ResponseVerifier(settings, clock, pending, SeenAssertions(clock, db))
        assert verifier.verify_xml(to_bytes(signed_response(kp=kp))).subject == "ada@example.test"


def test_signed_response_in_response_to_counts_without_one_in_the_assertion() -> None:
    verifier, pending, _ = make_verifier(want_response_signed=True)
    spec = Spec(in_response_to="_req0001", scd_in_response_to=None)
    who = verifier.verify_xml(to_bytes(signed_response(spec, sign_response=True)))
    assert who.request is not None and who.request.id == "_req0001"
    assert pending.peek("_req0001") is None
