"""A test identity provider's toolkit: keys and certificates made with ``cryptography``, SAML responses
built to order and signed with signxml, so every attack in the corpus starts from a validly signed response."""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from lxml import etree
from signxml import SignatureMethod, XMLSigner, methods

from hangar.sso.saml.xml import DS, SAML, SAMLP, q

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
IDP = "https://idp.example.test/metadata"
SP = "http://127.0.0.1:8420/saml"
ACS = "http://127.0.0.1:8420/saml/acs"
SSO_URL = "https://idp.example.test/sso/redirect"
EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"


@dataclass(frozen=True)
class KeyPair:
    key_pem: bytes
    cert: x509.Certificate

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def cert_b64(self) -> str:
        return base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()


@lru_cache(maxsize=8)
def keypair(name: str = "idp", *, not_after: datetime | None = None) -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"hangar test {name}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime(2020, 1, 1, tzinfo=UTC))
        .not_valid_after(not_after or datetime(2040, 1, 1, tzinfo=UTC))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return KeyPair(pem, cert)


def idp_metadata_xml(*, entity_id: str = IDP, sso_url: str = SSO_URL, certs: tuple[KeyPair, ...] | None = None) -> str:
    kds = "".join(
        f'<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>{kp.cert_b64}'
        "</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        for kp in (certs or (keypair(),))
    )
    return (
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" '
        f'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="{entity_id}">'
        '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        f"{kds}"
        '<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" '
        f'Location="{sso_url}"/></md:IDPSSODescriptor></md:EntityDescriptor>'
    )


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Spec:
    """Everything a response says; each field is one thing an attack can change."""

    now: datetime = NOW
    response_id: str = "_resp0001"
    assertion_id: str = "_assert0001"
    in_response_to: str | None = "_req0001"
    scd_in_response_to: str | None = "_req0001"
    destination: str | None = ACS
    response_issuer: str | None = IDP
    assertion_issuer: str = IDP
    status: str = "urn:oasis:names:tc:SAML:2.0:status:Success"
    audience: str | None = SP
    recipient: str = ACS
    name_id: str = "ada@example.test"
    name_id_format: str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
    not_before: datetime | None = None
    not_on_or_after: datetime | None = None
    scd_not_on_or_after: datetime | None = None
    attributes: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {
            "email": ("ada@example.test",),
            "displayName": ("Ada Lovelace",),
            "groups": ("engineers", "admins"),
        }
    )

    def with_(self, **changes: object) -> Spec:
        return replace(self, **changes)  # type: ignore[arg-type]


def _el(parent: etree._Element, ns: str, local: str, text: str | None = None, **attrs: str) -> etree._Element:
    el = etree.SubElement(parent, q(ns, local))
    for k, v in attrs.items():
        el.set(k, v)
    if text is not None:
        el.text = text
    return el


def build_assertion(spec: Spec) -> etree._Element:
    a = etree.Element(q(SAML, "Assertion"), nsmap={"saml": SAML})
    a.set("ID", spec.assertion_id)
    a.set("Version", "2.0")
    a.set("IssueInstant", _iso(spec.now))
    _el(a, SAML, "Issuer", spec.assertion_issuer)
    placeholder = etree.SubElement(a, q(DS, "Signature"), nsmap={"ds": DS})
    placeholder.set("Id", "placeholder")
    subject = _el(a, SAML, "Subject")
    _el(subject, SAML, "NameID", spec.name_id, Format=spec.name_id_format)
    sc = _el(subject, SAML, "SubjectConfirmation", Method="urn:oasis:names:tc:SAML:2.0:cm:bearer")
    scd = _el(sc, SAML, "SubjectConfirmationData", Recipient=spec.recipient)
    scd.set("NotOnOrAfter", _iso(spec.scd_not_on_or_after or spec.now + timedelta(minutes=5)))
    if spec.scd_in_response_to:
        scd.set("InResponseTo", spec.scd_in_response_to)
    cond = _el(a, SAML, "Conditions")
    cond.set("NotBefore", _iso(spec.not_before or spec.now - timedelta(minutes=1)))
    cond.set("NotOnOrAfter", _iso(spec.not_on_or_after or spec.now + timedelta(minutes=5)))
    if spec.audience is not None:
        ar = _el(cond, SAML, "AudienceRestriction")
        _el(ar, SAML, "Audience", spec.audience)
    authn = _el(a, SAML, "AuthnStatement", AuthnInstant=_iso(spec.now), SessionIndex="_session1")
    ctx = _el(authn, SAML, "AuthnContext")
    _el(ctx, SAML, "AuthnContextClassRef", "urn:oasis:names:tc:SAML:2.0:ac:classes:Password")
    if spec.attributes:
        st = _el(a, SAML, "AttributeStatement")
        for name, values in spec.attributes.items():
            attr = _el(st, SAML, "Attribute", Name=name)
            for v in values:
                _el(attr, SAML, "AttributeValue", v)
    return a


def build_response(spec: Spec, assertion: etree._Element | None) -> etree._Element:
    r = etree.Element(q(SAMLP, "Response"), nsmap={"samlp": SAMLP, "saml": SAML})
    r.set("ID", spec.response_id)
    r.set("Version", "2.0")
    r.set("IssueInstant", _iso(spec.now))
    if spec.destination:
        r.set("Destination", spec.destination)
    if spec.in_response_to:
        r.set("InResponseTo", spec.in_response_to)
    if spec.response_issuer:
        _el(r, SAML, "Issuer", spec.response_issuer)
    status = _el(r, SAMLP, "Status")
    _el(status, SAMLP, "StatusCode", Value=spec.status)
    if assertion is not None:
        r.append(assertion)
    return r


def sign(
    el: etree._Element,
    kp: KeyPair,
    *,
    algorithm: SignatureMethod = SignatureMethod.RSA_SHA256,
    digest: str = "sha256",
    c14n: str = EXC_C14N,
) -> etree._Element:
    """Sign ``el`` in place of its ``Id="placeholder"`` signature (added after the Issuer when missing)."""
    el = copy.deepcopy(el)
    if el.find(q(DS, "Signature")) is None:
        placeholder = etree.Element(q(DS, "Signature"), nsmap={"ds": DS})
        placeholder.set("Id", "placeholder")
        issuer = el.find(q(SAML, "Issuer"))
        index = list(el).index(issuer) + 1 if issuer is not None else 0
        el.insert(index, placeholder)
    signer = XMLSigner(
        method=methods.enveloped, signature_algorithm=algorithm, digest_algorithm=digest, c14n_algorithm=c14n
    )
    signed: etree._Element = signer.sign(
        el, key=kp.key_pem, cert=kp.cert_pem.decode(), reference_uri=el.get("ID"), id_attribute="ID"
    )
    return signed


def signed_assertion(spec: Spec, kp: KeyPair | None = None, **kw: object) -> etree._Element:
    return sign(build_assertion(spec), kp or keypair(), **kw)  # type: ignore[arg-type]


def signed_response(
    spec: Spec | None = None, *, kp: KeyPair | None = None, sign_response: bool = False
) -> etree._Element:
    spec = spec or Spec()
    kp = kp or keypair()
    resp = build_response(spec, signed_assertion(spec, kp))
    return sign(resp, kp) if sign_response else resp


def to_bytes(el: etree._Element) -> bytes:
    return etree.tostring(el)


def b64(el: etree._Element | bytes) -> str:
    data = el if isinstance(el, bytes) else to_bytes(el)
    return base64.b64encode(data).decode()
