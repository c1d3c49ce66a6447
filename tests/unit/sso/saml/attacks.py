"""The attack corpus: each entry crafts one published SAML service-provider attack from a validly signed
response (see the README's SSO: SAML section for the advisories each class comes from)."""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from lxml import etree
from signxml import SignatureMethod

from hangar.sso.saml.xml import DS, SAML, SAMLP, q
from tests.unit.sso.saml.kit import (
    IDP,
    NOW,
    Spec,
    build_assertion,
    build_response,
    keypair,
    sign,
    signed_assertion,
    signed_response,
    to_bytes,
)


@dataclass(frozen=True)
class Attack:
    name: str
    code: str
    make: Callable[[], bytes]
    options: dict[str, object] = field(default_factory=dict)


def _assertion(resp: etree._Element) -> etree._Element:
    found = resp.find(q(SAML, "Assertion"))
    assert found is not None
    return found


def _name_id(el: etree._Element) -> etree._Element:
    found = el.find(f".//{q(SAML, 'NameID')}")
    assert found is not None
    return found


def _evil_assertion(assertion_id: str = "_evil0001", name_id: str = "root@example.test") -> etree._Element:
    evil = build_assertion(Spec(assertion_id=assertion_id, name_id=name_id))
    placeholder = evil.find(q(DS, "Signature"))
    assert placeholder is not None
    evil.remove(placeholder)
    return evil


def _sig(el: etree._Element) -> etree._Element:
    found = el.find(q(DS, "Signature"))
    assert found is not None
    return found


def _object(*children: etree._Element) -> etree._Element:
    obj = etree.Element(q(DS, "Object"), nsmap={"ds": DS})
    for c in children:
        obj.append(c)
    return obj


# --- signature wrapping (XSW) layouts -------------------------------------------------------------------


def xsw1_response_inside_signature() -> bytes:
    """Evil response root; the original signed response hidden in a ds:Object of the copied signature."""
    original = signed_response(sign_response=True)
    evil = copy.deepcopy(original)
    evil.set("ID", "_evilresp")
    _name_id(_assertion(evil)).text = "root@example.test"
    _sig(evil).append(_object(original))
    return to_bytes(evil)


def xsw2_response_before_signature() -> bytes:
    """Evil response root; the original signed response placed detached before the copied signature."""
    original = signed_response(sign_response=True)
    evil = copy.deepcopy(original)
    evil.set("ID", "_evilresp")
    sig = _sig(evil)
    evil.insert(list(evil).index(sig), original)
    return to_bytes(evil)


def xsw3_unsigned_assertion_first() -> bytes:
    resp = signed_response()
    resp.insert(list(resp).index(_assertion(resp)), _evil_assertion())
    return to_bytes(resp)


def xsw3b_unsigned_assertion_last() -> bytes:
    resp = signed_response()
    resp.append(_evil_assertion())
    return to_bytes(resp)


def xsw4_evil_wraps_original() -> bytes:
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion()
    resp.replace(original, evil)
    evil.append(original)
    return to_bytes(resp)


def xsw5_copied_signature_original_appended() -> bytes:
    """Evil assertion with the original's ID and a copy of its signature; original appended unsigned."""
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion(assertion_id=original.get("ID") or "")
    evil.insert(1, copy.deepcopy(_sig(original)))
    resp.replace(original, evil)
    stripped = copy.deepcopy(original)
    stripped.remove(_sig(stripped))
    resp.append(stripped)
    return to_bytes(resp)


def xsw6_original_inside_evil_signature() -> bytes:
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion(assertion_id=original.get("ID") or "")
    sig = copy.deepcopy(_sig(original))
    sig.append(_object(copy.deepcopy(original)))
    evil.insert(1, sig)
    resp.replace(original, evil)
    return to_bytes(resp)


def xsw7_original_in_extensions() -> bytes:
    resp = signed_response()
    original = _assertion(resp)
    ext = etree.Element(q(SAMLP, "Extensions"))
    resp.insert(1, ext)
    resp.remove(original)
    ext.append(original)
    resp.append(_evil_assertion())
    return to_bytes(resp)


def xsw8_stripped_original_in_object() -> bytes:
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion(assertion_id=original.get("ID") or "")
    sig = copy.deepcopy(_sig(original))
    stripped = copy.deepcopy(original)
    stripped.remove(_sig(stripped))
    sig.append(_object(stripped))
    evil.insert(1, sig)
    resp.replace(original, evil)
    return to_bytes(resp)


def xsw9_original_in_advice() -> bytes:
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion()
    advice = etree.SubElement(evil, q(SAML, "Advice"))
    resp.replace(original, evil)
    advice.append(original)
    return to_bytes(resp)


def xsw10_qualified_id_attribute() -> bytes:
    """Evil assertion whose namespaced ``x:ID`` repeats the original's ID, to steer ID lookups."""
    resp = signed_response()
    original = _assertion(resp)
    evil = _evil_assertion()
    evil.set("{urn:x-attack}ID", original.get("ID") or "")
    evil.insert(1, copy.deepcopy(_sig(original)))
    resp.replace(original, evil)
    return to_bytes(resp)


def decoy_signature_on_error_response() -> bytes:
    """A signed error response plus a decoy signature whose ds:Object carries a forged assertion."""
    spec = Spec(status="urn:oasis:names:tc:SAML:2.0:status:Requester")
    resp = sign(build_response(spec, None), keypair())
    decoy = copy.deepcopy(_sig(resp))
    decoy.append(_object(_evil_assertion()))
    resp.append(decoy)
    return to_bytes(resp)


def signature_in_extensions() -> bytes:
    resp = signed_response()
    ext = etree.Element(q(SAMLP, "Extensions"))
    ext.append(copy.deepcopy(_sig(_assertion(resp))))
    resp.insert(1, ext)
    return to_bytes(resp)


# --- signature, algorithms, keys -------------------------------------------------------------------------


def unsigned_assertion() -> bytes:
    resp = signed_response()
    a = _assertion(resp)
    a.remove(_sig(a))
    return to_bytes(resp)


def tampered_name_id() -> bytes:
    resp = signed_response()
    _name_id(_assertion(resp)).text = "root@example.test"
    return to_bytes(resp)


def tampered_signed_response() -> bytes:
    resp = signed_response(sign_response=True)
    resp.set("Destination", "http://127.0.0.1:8420/saml/acs?x=1")
    return to_bytes(resp)


def _set_algorithm(resp: etree._Element, local: str, uri: str) -> bytes:
    el = _sig(_assertion(resp)).find(f".//{q(DS, local)}")
    assert el is not None
    el.set("Algorithm", uri)
    return to_bytes(resp)


def sha1_signature_method() -> bytes:
    return _set_algorithm(signed_response(), "SignatureMethod", SignatureMethod.RSA_SHA1.value)


def sha1_digest() -> bytes:
    return _set_algorithm(signed_response(), "DigestMethod", "http://www.w3.org/2000/09/xmldsig#sha1")


def hmac_signature_method() -> bytes:
    return _set_algorithm(signed_response(), "SignatureMethod", "http://www.w3.org/2001/04/xmldsig-more#hmac-sha256")


def with_comments_c14n() -> bytes:
    return _set_algorithm(
        signed_response(), "CanonicalizationMethod", "http://www.w3.org/2001/10/xml-exc-c14n#WithComments"
    )


def xslt_transform() -> bytes:
    resp = signed_response()
    transforms = _sig(_assertion(resp)).find(f".//{q(DS, 'Transforms')}")
    assert transforms is not None
    t = etree.SubElement(transforms, q(DS, "Transform"))
    t.set("Algorithm", "http://www.w3.org/TR/1999/REC-xslt-19991116")
    return to_bytes(resp)


def xpath_transform() -> bytes:
    resp = signed_response()
    transforms = _sig(_assertion(resp)).find(f".//{q(DS, 'Transforms')}")
    assert transforms is not None
    t = etree.SubElement(transforms, q(DS, "Transform"))
    t.set("Algorithm", "http://www.w3.org/TR/1999/REC-xpath-19991116")
    etree.SubElement(t, q(DS, "XPath")).text = "not(ancestor-or-self::saml:NameID)"
    return to_bytes(resp)


def reference_to_whole_document() -> bytes:
    resp = signed_response()
    ref = _sig(_assertion(resp)).find(f".//{q(DS, 'Reference')}")
    assert ref is not None
    ref.set("URI", "")
    return to_bytes(resp)


def two_references() -> bytes:
    resp = signed_response()
    ref = _sig(_assertion(resp)).find(f".//{q(DS, 'Reference')}")
    assert ref is not None
    extra = copy.deepcopy(ref)
    extra.set("URI", "#_resp0001")
    ref.addnext(extra)
    return to_bytes(resp)


def object_in_signature() -> bytes:
    resp = signed_response()
    obj = _object()
    obj.text = "hidden"
    _sig(_assertion(resp)).append(obj)
    return to_bytes(resp)


def foreign_key_and_certificate() -> bytes:
    """Signed by an attacker's key, with the attacker's certificate in KeyInfo."""
    return to_bytes(signed_response(Spec(name_id="root@example.test"), kp=keypair("attacker")))


def foreign_certificate_real_signature() -> bytes:
    """A genuine signature whose KeyInfo was swapped for a foreign certificate."""
    resp = signed_response()
    cert = _sig(_assertion(resp)).find(f".//{q(DS, 'X509Certificate')}")
    assert cert is not None
    cert.text = keypair("attacker").cert_b64
    return to_bytes(resp)


def foreign_key_no_keyinfo() -> bytes:
    resp = signed_response(Spec(name_id="root@example.test"), kp=keypair("attacker"))
    a = _assertion(resp)
    ki = _sig(a).find(q(DS, "KeyInfo"))
    assert ki is not None
    _sig(a).remove(ki)
    return to_bytes(resp)


def keyinfo_retrieval_method() -> bytes:
    resp = signed_response()
    ki = _sig(_assertion(resp)).find(q(DS, "KeyInfo"))
    assert ki is not None
    rm = etree.SubElement(ki, q(DS, "RetrievalMethod"))
    rm.set("URI", "http://127.0.0.1:9/key")
    return to_bytes(resp)


def digest_value_comment() -> bytes:
    """Tampered assertion with a comment inside DigestValue (the xml-crypto 2025 class)."""
    resp = signed_response()
    a = _assertion(resp)
    dv = _sig(a).find(f".//{q(DS, 'DigestValue')}")
    assert dv is not None
    original = dv.text or ""
    _name_id(a).text = "root@example.test"
    dv.text = "AAAA"
    dv.append(etree.Comment(original))
    return to_bytes(resp)


def processing_instruction_in_name_id() -> bytes:
    resp = signed_response(Spec(name_id="ada@example.test.evil.test"))
    nid = _name_id(_assertion(resp))
    nid.text = "ada@example.test"
    pi = etree.ProcessingInstruction("x")
    pi.tail = ".evil.test"
    nid.append(pi)
    return to_bytes(resp)


def duplicate_ids() -> bytes:
    resp = signed_response()
    status = resp.find(q(SAMLP, "Status"))
    assert status is not None
    status.set("ID", "_assert0001")
    return to_bytes(resp)


def unsigned_response_when_wanted() -> bytes:
    return to_bytes(signed_response())


# --- XML parser attacks ---------------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
"""


def billion_laughs() -> bytes:
    body = to_bytes(signed_response()).replace(b"ada@example.test</saml:NameID>", b"&lol4;</saml:NameID>")
    return BILLION_LAUGHS + body


def external_entity() -> bytes:
    body = to_bytes(signed_response()).replace(b"ada@example.test</saml:NameID>", b"&xxe;</saml:NameID>")
    return b'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n' + body


def parameter_entity_dtd() -> bytes:
    head = b'<!DOCTYPE r [<!ENTITY % ext SYSTEM "http://127.0.0.1:9/evil.dtd"> %ext;]>'
    return head + to_bytes(signed_response())


def utf16_document() -> bytes:
    return ('<?xml version="1.0" encoding="UTF-16"?>' + to_bytes(signed_response()).decode()).encode("utf-16")


def not_xml() -> bytes:
    return b"<samlp:Response"


def wrong_root() -> bytes:
    return to_bytes(signed_assertion(Spec()))


def deflated_response() -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    return comp.compress(to_bytes(signed_response())) + comp.flush()


def mixed_content_name_id() -> bytes:
    """The IdP itself signed a NameID holding an element: refused, never partly read."""
    spec = Spec()
    a = build_assertion(spec)
    nid = _name_id(a)
    inner = etree.SubElement(nid, q(SAML, "Extra"))
    inner.tail = ".evil.test"
    return to_bytes(build_response(spec, sign(a, keypair())))


# --- conditions ------------------------------------------------------------------------------------------


def _resp(**changes: object) -> Callable[[], bytes]:
    return lambda: to_bytes(signed_response(Spec().with_(**changes)))


def _signed_resp(**changes: object) -> Callable[[], bytes]:
    return lambda: to_bytes(signed_response(Spec().with_(**changes), sign_response=True))


def multiple_signed_assertions() -> bytes:
    spec = Spec()
    resp = build_response(spec, signed_assertion(spec))
    resp.append(signed_assertion(spec.with_(assertion_id="_assert0002", name_id="root@example.test")))
    return to_bytes(resp)


def encrypted_assertion() -> bytes:
    resp = signed_response()
    etree.SubElement(resp, q(SAML, "EncryptedAssertion"))
    return to_bytes(resp)


def no_assertion() -> bytes:
    return to_bytes(build_response(Spec(), None))


def unknown_condition() -> bytes:
    spec = Spec()
    a = build_assertion(spec)
    cond = a.find(q(SAML, "Conditions"))
    assert cond is not None
    etree.SubElement(cond, q(SAML, "Condition"))
    return to_bytes(build_response(spec, sign(a, keypair())))


WANT_RESPONSE = {"want_response_signed": True}
LATE = NOW - timedelta(minutes=10)

ATTACKS: list[Attack] = [
    # signature wrapping, at least eight layouts
    Attack("xsw1-response-inside-signature", "signature", xsw1_response_inside_signature, WANT_RESPONSE),
    Attack("xsw2-response-before-signature", "signature", xsw2_response_before_signature, WANT_RESPONSE),
    Attack("xsw3-unsigned-assertion-first", "signature", xsw3_unsigned_assertion_first),
    Attack("xsw3b-unsigned-assertion-last", "signature", xsw3b_unsigned_assertion_last),
    Attack("xsw4-evil-wraps-original", "signature", xsw4_evil_wraps_original),
    Attack("xsw5-copied-signature", "signature", xsw5_copied_signature_original_appended),
    Attack("xsw6-original-inside-signature", "signature", xsw6_original_inside_evil_signature),
    Attack("xsw7-original-in-extensions", "signature", xsw7_original_in_extensions),
    Attack("xsw8-stripped-original-in-object", "signature", xsw8_stripped_original_in_object),
    Attack("xsw9-original-in-advice", "signature", xsw9_original_in_advice),
    Attack("xsw10-qualified-id", "signature", xsw10_qualified_id_attribute),
    Attack("decoy-signature-on-error-response", "signature", decoy_signature_on_error_response),
    Attack("signature-in-extensions", "signature", signature_in_extensions),
    Attack("duplicate-ids", "signature", duplicate_ids),
    # signatures, algorithms, keys
    Attack("unsigned-assertion", "signature", unsigned_assertion),
    Attack("tampered-name-id", "signature", tampered_name_id),
    Attack("tampered-signed-response", "signature", tampered_signed_response, WANT_RESPONSE),
    Attack("unsigned-response-when-wanted", "signature", unsigned_response_when_wanted, WANT_RESPONSE),
    Attack("sha1-signature-method", "signature", sha1_signature_method),
    Attack("sha1-digest", "signature", sha1_digest),
    Attack("hmac-signature-method", "signature", hmac_signature_method),
    Attack("with-comments-c14n", "signature", with_comments_c14n),
    Attack("xslt-transform", "signature", xslt_transform),
    Attack("xpath-transform", "signature", xpath_transform),
    Attack("reference-to-whole-document", "signature", reference_to_whole_document),
    Attack("two-references", "signature", two_references),
    Attack("object-in-signature", "signature", object_in_signature),
    Attack("foreign-key-and-certificate", "signature", foreign_key_and_certificate),
    Attack("foreign-certificate-real-signature", "signature", foreign_certificate_real_signature),
    Attack("foreign-key-no-keyinfo", "signature", foreign_key_no_keyinfo),
    Attack("keyinfo-retrieval-method", "signature", keyinfo_retrieval_method),
    Attack("digest-value-comment", "signature", digest_value_comment),
    Attack("processing-instruction-in-name-id", "signature", processing_instruction_in_name_id),
    # parser
    Attack("billion-laughs", "malformed", billion_laughs),
    Attack("external-entity", "malformed", external_entity),
    Attack("parameter-entity-dtd", "malformed", parameter_entity_dtd),
    Attack("utf16-document", "malformed", utf16_document),
    Attack("not-xml", "malformed", not_xml),
    Attack("wrong-root", "malformed", wrong_root),
    Attack("mixed-content-name-id", "malformed", mixed_content_name_id),
    # assertions
    Attack("multiple-signed-assertions", "invalid", multiple_signed_assertions),
    Attack("encrypted-assertion", "invalid", encrypted_assertion),
    Attack("no-assertion", "invalid", no_assertion),
    Attack("unknown-condition", "invalid", unknown_condition),
    # times
    Attack("conditions-expired", "expired", _resp(not_on_or_after=NOW - timedelta(seconds=91))),
    Attack("conditions-not-yet-valid", "expired", _resp(not_before=NOW + timedelta(seconds=91))),
    Attack("confirmation-expired", "expired", _resp(scd_not_on_or_after=NOW - timedelta(seconds=91))),
    Attack("issued-in-the-future", "expired", _resp(now=NOW + timedelta(minutes=5))),
    # audience, destination, recipient, issuer, status
    Attack("wrong-audience", "audience", _resp(audience="https://other-sp.example.test/saml")),
    Attack("no-audience-restriction", "audience", _resp(audience=None)),
    Attack("wrong-destination", "destination", _resp(destination="https://other-sp.example.test/acs")),
    Attack("signed-response-without-destination", "destination", _signed_resp(destination=None)),
    Attack("wrong-recipient", "recipient", _resp(recipient="https://other-sp.example.test/acs")),
    Attack("wrong-assertion-issuer", "issuer", _resp(assertion_issuer="https://evil-idp.example.test")),
    Attack("wrong-response-issuer", "issuer", _resp(response_issuer="https://evil-idp.example.test")),
    Attack("status-requester", "status", _resp(status="urn:oasis:names:tc:SAML:2.0:status:Requester")),
    Attack("status-responder", "status", _resp(status="urn:oasis:names:tc:SAML:2.0:status:Responder")),
    # request matching
    Attack("unknown-in-response-to", "request_match", _resp(in_response_to="_x", scd_in_response_to="_x")),
    Attack("unsolicited-not-allowed", "request_match", _resp(in_response_to=None, scd_in_response_to=None)),
    Attack("mismatched-in-response-to", "request_match", _resp(scd_in_response_to="_req0002")),
    Attack(
        "unsolicited-assertion-in-forged-unsigned-response",
        "request_match",
        _resp(in_response_to="_req0001", scd_in_response_to=None),
    ),
]

assert IDP  # the corpus is built for the kit's identity provider
