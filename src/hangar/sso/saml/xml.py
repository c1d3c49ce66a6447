"""Parsing untrusted SAML XML safely, and reading values from it without being fooled.

The parser resolves no entities, loads no DTD, touches no network and keeps ``huge_tree`` off; on top of
that any DOCTYPE is refused outright before parsing, so entity expansion (billion laughs) and external
entities never get a chance. Comments are dropped while parsing, which also joins the text around them:
``user@corp.com<!---->.evil.com`` reads as the whole string, never as its first half. Values are read
only from elements holding nothing but text; anything else is refused rather than partly read.
"""

from __future__ import annotations

from datetime import UTC, datetime

from lxml import etree

from hangar.sso.errors import SamlCode, SsoError

SAMLP = "urn:oasis:names:tc:SAML:2.0:protocol"
SAML = "urn:oasis:names:tc:SAML:2.0:assertion"
MD = "urn:oasis:names:tc:SAML:2.0:metadata"
DS = "http://www.w3.org/2000/09/xmldsig#"
NS = {"samlp": SAMLP, "saml": SAML, "md": MD, "ds": DS}

MAX_XML_BYTES = 512 * 1024


def q(ns: str, local: str) -> str:
    """Clark notation ``{ns}local``."""
    return f"{{{ns}}}{local}"


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        load_dtd=False,
        dtd_validation=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_blank_text=False,
    )


def parse_untrusted(data: bytes, *, what: str = "document", code: SamlCode = "malformed") -> etree._Element:
    """Parse ``data`` (UTF-8 XML) refusing DTDs, entities, NUL bytes and oversized input with ``code``."""
    if len(data) > MAX_XML_BYTES:
        raise SsoError(code, f"the {what} is larger than {MAX_XML_BYTES // 1024} KiB")
    if b"\x00" in data:
        # UTF-16/32 input hides markup from the byte scan below; SAML documents here are UTF-8.
        raise SsoError(code, f"the {what} is not UTF-8 XML")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise SsoError(code, f"the {what} is not UTF-8 XML") from None
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise SsoError(code, f"the {what} carries a DOCTYPE; DTDs and entities are refused")
    try:
        root = etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as exc:
        raise SsoError(code, f"the {what} is not well-formed XML: {exc.msg}") from None
    docinfo = root.getroottree().docinfo
    if getattr(docinfo, "doctype", "") or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise SsoError(code, f"the {what} carries a DOCTYPE; DTDs and entities are refused")
    for _ in root.iter(etree.Entity):
        raise SsoError(code, f"the {what} uses an entity reference; entities are refused")
    return root


def text_of(el: etree._Element, what: str) -> str:
    """The whole text of an element that must hold text only (no child elements or instructions).

    Refusing mixed content, instead of reading ``.text``, is what stops a partial text node from being
    taken for the value.
    """
    if len(el):
        raise SsoError("malformed", f"{what} must hold text only")
    return (el.text or "").strip()


def child(el: etree._Element, ns: str, local: str) -> etree._Element | None:
    """The one direct child ``{ns}local``; two of them are refused as malformed."""
    found = el.findall(q(ns, local))
    if len(found) > 1:
        raise SsoError("malformed", f"{local} appears {len(found)} times inside {etree.QName(el).localname}")
    return found[0] if found else None


def parse_instant(value: str | None, what: str) -> datetime | None:
    """An ``xs:dateTime`` as aware UTC; absent gives None; bad shapes are malformed."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise SsoError("malformed", f"{what} is not a dateTime: {value[:40]!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def instant(dt: datetime) -> str:
    """Our own timestamps: UTC, seconds precision, ``Z``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
