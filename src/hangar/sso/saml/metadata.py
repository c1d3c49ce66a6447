"""Identity-provider metadata in, service-provider metadata out.

The IdP's ``EntityDescriptor`` (saved as ``idpMetadataXml``) gives its entity id, its HTTP-Redirect
single sign-on URL and its signing certificates. Those certificates are the only keys a response is
ever checked against: nothing a response carries in ``KeyInfo`` is trusted.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from lxml import etree

from hangar.sso.errors import SsoError
from hangar.sso.saml.xml import DS, MD, SAMLP, parse_untrusted, q, text_of

BINDING_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
BINDING_POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
NAMEID_EMAIL = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
NAMEID_PERSISTENT = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent"
NAMEID_UNSPECIFIED = "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"


@dataclass(frozen=True)
class IdpMetadata:
    entity_id: str
    sso_url: str
    certificates: tuple[x509.Certificate, ...]

    def trusts(self, der: bytes) -> x509.Certificate | None:
        """The metadata certificate whose DER encoding is ``der``, if any."""
        return self._by_der.get(der)

    @cached_property
    def _by_der(self) -> dict[bytes, x509.Certificate]:
        return {cert.public_bytes(Encoding.DER): cert for cert in self.certificates}


def _bad(message: str) -> SsoError:
    return SsoError("malformed", f"idpMetadataXml: {message}")


def load_certificate(text: str) -> x509.Certificate:
    """A certificate from the base64 body of ``X509Certificate`` (whitespace and PEM armour allowed)."""
    body = "".join(line for line in text.splitlines() if not line.startswith("-----"))
    try:
        der = base64.b64decode("".join(body.split()), validate=True)
        return x509.load_der_x509_certificate(der)
    except (binascii.Error, ValueError) as exc:
        raise _bad(f"a signing certificate cannot be read ({exc})") from None


def parse_idp_metadata(xml: str | bytes) -> IdpMetadata:
    """Read the IdP's entity descriptor; every problem is a ``malformed`` ``SsoError`` naming it."""
    data = xml.encode() if isinstance(xml, str) else xml
    try:
        root = parse_untrusted(data, what="document")
    except SsoError as exc:
        raise _bad(exc.message) from None
    if root.tag == q(MD, "EntitiesDescriptor"):
        idps = [e for e in root.iter(q(MD, "EntityDescriptor")) if e.find(q(MD, "IDPSSODescriptor")) is not None]
        if len(idps) != 1:
            raise _bad(f"an EntitiesDescriptor must hold exactly one identity provider, found {len(idps)}")
        root = idps[0]
    if root.tag != q(MD, "EntityDescriptor"):
        raise _bad(f"expected an md:EntityDescriptor, found {etree.QName(root).localname}")
    entity_id = (root.get("entityID") or "").strip()
    if not entity_id:
        raise _bad("the EntityDescriptor has no entityID")
    idp = root.find(q(MD, "IDPSSODescriptor"))
    if idp is None:
        raise _bad("no IDPSSODescriptor (this is not an identity provider's metadata)")
    if SAMLP not in (idp.get("protocolSupportEnumeration") or "").split():
        raise _bad("the IDPSSODescriptor does not support SAML 2.0")
    sso_url = ""
    for sso in idp.findall(q(MD, "SingleSignOnService")):
        if sso.get("Binding") == BINDING_REDIRECT:
            sso_url = (sso.get("Location") or "").strip()
            break
    if not sso_url:
        raise _bad("no SingleSignOnService with the HTTP-Redirect binding")
    if urlsplit(sso_url).scheme not in ("http", "https"):
        raise _bad(f"the SingleSignOnService location is not an http(s) URL: {sso_url[:80]!r}")
    certs: list[x509.Certificate] = []
    for kd in idp.findall(q(MD, "KeyDescriptor")):
        if kd.get("use", "signing") != "signing":
            continue
        for el in kd.iter(q(DS, "X509Certificate")):
            certs.append(load_certificate(text_of(el, "X509Certificate")))
    if not certs:
        raise _bad("no signing certificate in the IDPSSODescriptor's KeyDescriptor")
    return IdpMetadata(entity_id=entity_id, sso_url=sso_url, certificates=tuple(certs))


def sp_metadata_xml(entity_id: str, acs_url: str) -> bytes:
    """Our SPSSODescriptor: unsigned requests, signed assertions wanted, one HTTP-POST consumer."""
    nsmap = {"md": MD}
    ed = etree.Element(q(MD, "EntityDescriptor"), nsmap=nsmap)
    ed.set("entityID", entity_id)
    sp = etree.SubElement(ed, q(MD, "SPSSODescriptor"))
    sp.set("AuthnRequestsSigned", "false")
    sp.set("WantAssertionsSigned", "true")
    sp.set("protocolSupportEnumeration", SAMLP)
    for fmt in (NAMEID_EMAIL, NAMEID_PERSISTENT, NAMEID_UNSPECIFIED):
        etree.SubElement(sp, q(MD, "NameIDFormat")).text = fmt
    acs = etree.SubElement(sp, q(MD, "AssertionConsumerService"))
    acs.set("Binding", BINDING_POST)
    acs.set("Location", acs_url)
    acs.set("index", "0")
    acs.set("isDefault", "true")
    return etree.tostring(ed, xml_declaration=True, encoding="UTF-8", pretty_print=True)
