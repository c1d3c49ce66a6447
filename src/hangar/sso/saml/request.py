"""SP-initiated login: the ``AuthnRequest`` and its HTTP-Redirect encoding (deflate, base64, query string).

Decoding a redirect-binding message is bounded: inflation stops at ``MAX_INFLATED_BYTES`` so a deflate bomb
(a few kilobytes that expand to gigabytes) is refused as ``malformed`` instead of eating memory.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import zlib
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode, urlsplit, urlunsplit

from lxml import etree

from hangar.sso.errors import SsoError
from hangar.sso.saml.metadata import BINDING_POST
from hangar.sso.saml.xml import SAML, SAMLP, instant, q

MAX_INFLATED_BYTES = 256 * 1024
MAX_ENCODED_CHARS = 64 * 1024


@dataclass(frozen=True)
class AuthnRequest:
    id: str
    xml: bytes
    redirect_url: str


def new_request_id() -> str:
    # An NCName (it must not start with a digit) with 128 bits of randomness: unguessable, one use.
    return "_" + secrets.token_hex(16)


def build_authn_request(
    *,
    sp_entity_id: str,
    acs_url: str,
    idp_sso_url: str,
    now: datetime,
    relay_state: str | None = None,
    request_id: str | None = None,
) -> AuthnRequest:
    """An unsigned AuthnRequest asking for an HTTP-POST response to ``acs_url``, encoded for redirect."""
    rid = request_id or new_request_id()
    req = etree.Element(q(SAMLP, "AuthnRequest"), nsmap={"samlp": SAMLP, "saml": SAML})
    req.set("ID", rid)
    req.set("Version", "2.0")
    req.set("IssueInstant", instant(now))
    req.set("Destination", idp_sso_url)
    req.set("AssertionConsumerServiceURL", acs_url)
    req.set("ProtocolBinding", BINDING_POST)
    etree.SubElement(req, q(SAML, "Issuer")).text = sp_entity_id
    policy = etree.SubElement(req, q(SAMLP, "NameIDPolicy"))
    policy.set("AllowCreate", "true")
    xml = etree.tostring(req, encoding="UTF-8", xml_declaration=False)
    params = {"SAMLRequest": deflate_encode(xml)}
    if relay_state is not None:
        params["RelayState"] = relay_state
    parts = urlsplit(idp_sso_url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    return AuthnRequest(id=rid, xml=xml, redirect_url=url)


def deflate_encode(xml: bytes) -> str:
    """Raw DEFLATE (RFC 1951, no zlib header) then base64, as the HTTP-Redirect binding wants."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    return base64.b64encode(comp.compress(xml) + comp.flush()).decode("ascii")


def inflate_bounded(encoded: str, *, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """Undo ``deflate_encode``, refusing (``malformed``) anything that would inflate beyond ``limit`` bytes."""
    if len(encoded) > MAX_ENCODED_CHARS:
        raise SsoError("malformed", "the redirect-binding message is too long")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise SsoError("malformed", "the redirect-binding message is not base64") from None
    inflater = zlib.decompressobj(-15)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error:
        raise SsoError("malformed", "the redirect-binding message is not raw DEFLATE data") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise SsoError("malformed", f"the redirect-binding message inflates beyond {limit // 1024} KiB")
    if not inflater.eof:
        raise SsoError("malformed", "the redirect-binding message is truncated DEFLATE data")
    return out
