"""XML signature checks for SAML: where signatures may be, what they may say, and signxml to verify them.

Before any cryptography the document's layout is checked, which is what defeats signature wrapping: a
``ds:Signature`` may only be a direct child of the ``Response`` root or of an ``Assertion`` that is itself a
direct child of the root; an ``Assertion`` may only be a direct child of the root (never hidden in
``Extensions``, ``Advice``, ``ds:Object`` or another assertion); no two elements share an ``ID``. Each
signature must have exactly one reference, to ``#`` + the ID of the element it sits in, with only the
enveloped-signature and one comment-free canonicalization transform; SHA-1 and other weak algorithms are
refused; a signature carrying ``ds:Object`` or ``ds:Manifest`` is refused (a place to hide content); a
certificate in ``KeyInfo`` must be one of the metadata's (a foreign one is refused, never used), and
``RetrievalMethod`` is refused, never followed.

signxml then verifies against the metadata certificate and returns the canonical bytes it checked, parsed
again without comments. That returned element, and nothing else, is what callers read.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from lxml import etree
from signxml.algorithms import CanonicalizationMethod, DigestAlgorithm, SignatureMethod
from signxml.exceptions import InvalidCertificate, InvalidInput, SignXMLException
from signxml.verifier import SignatureConfiguration, XMLVerifier

from hangar.sso.errors import SsoError
from hangar.sso.saml.metadata import IdpMetadata
from hangar.sso.saml.xml import DS, SAML, q

SIGNATURE_METHODS: frozenset[SignatureMethod] = frozenset(
    {
        SignatureMethod.RSA_SHA256,
        SignatureMethod.RSA_SHA384,
        SignatureMethod.RSA_SHA512,
        SignatureMethod.ECDSA_SHA256,
        SignatureMethod.ECDSA_SHA384,
        SignatureMethod.ECDSA_SHA512,
        SignatureMethod.SHA256_RSA_MGF1,
        SignatureMethod.SHA384_RSA_MGF1,
        SignatureMethod.SHA512_RSA_MGF1,
    }
)
DIGEST_METHODS: frozenset[DigestAlgorithm] = frozenset(
    {DigestAlgorithm.SHA256, DigestAlgorithm.SHA384, DigestAlgorithm.SHA512}
)
C14N_METHODS: frozenset[str] = frozenset(
    {
        CanonicalizationMethod.EXCLUSIVE_XML_CANONICALIZATION_1_0.value,
        CanonicalizationMethod.CANONICAL_XML_1_0.value,
        CanonicalizationMethod.CANONICAL_XML_1_1.value,
    }
)
ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
EXC_C14N_NS = "http://www.w3.org/2001/10/xml-exc-c14n#"

_SIG_URIS = {m.value: m for m in SignatureMethod}
# Any attribute an ID lookup could match, in any namespace (signxml matches on the local name).
_ID_ATTRIBUTES = etree.XPath("//@*[local-name()='ID' or local-name()='Id' or local-name()='id']")
_DIGEST_URIS = {m.value: m for m in DigestAlgorithm}


def _refuse(message: str) -> SsoError:
    return SsoError("signature", message)


def check_layout(root: etree._Element) -> None:
    """Refuse documents whose signatures or assertions sit anywhere but their one allowed place."""
    for sig in root.iter(q(DS, "Signature")):
        parent = sig.getparent()
        ok = parent is root or (
            parent is not None and parent.tag == q(SAML, "Assertion") and parent.getparent() is root
        )
        if not ok:
            where = etree.QName(parent).localname if parent is not None else "the top"
            raise _refuse(f"a signature sits inside {where}, where none is expected (signature wrapping)")
    for assertion in root.iter(q(SAML, "Assertion")):
        if assertion.getparent() is not root:
            parent = assertion.getparent()
            where = etree.QName(parent).localname if parent is not None else "?"
            raise _refuse(f"an assertion is nested inside {where} instead of the response (signature wrapping)")
    ids = _ID_ATTRIBUTES(root)
    assert isinstance(ids, list)
    seen: set[str] = set()
    for value in ids:
        text = str(value)
        if text in seen:
            raise _refuse(f"two elements share the ID {text[:60]!r}; a reference to it is ambiguous")
        seen.add(text)


def signature_of(el: etree._Element) -> etree._Element | None:
    found = el.findall(q(DS, "Signature"))
    if len(found) > 1:
        raise _refuse(f"{etree.QName(el).localname} carries {len(found)} signatures; one is allowed")
    return found[0] if found else None


def _algorithm(el: etree._Element | None, what: str) -> str:
    if el is None:
        raise _refuse(f"the signature has no {what}")
    value = el.get("Algorithm")
    if not value:
        raise _refuse(f"the signature's {what} names no algorithm")
    return value


def check_signature_element(sig: etree._Element, target_id: str, idp: IdpMetadata) -> x509.Certificate | None:
    """Refuse anything but a plain enveloped signature over ``#target_id``; return the KeyInfo certificate
    when it names one of the metadata's (None when KeyInfo names none)."""
    for extra in ("Object", "Manifest"):
        if sig.find(f".//{q(DS, extra)}") is not None:
            raise _refuse(f"the signature carries a ds:{extra}; nothing may hide inside a signature")
    infos = sig.findall(q(DS, "SignedInfo"))
    if len(infos) != 1:
        raise _refuse(f"the signature must have one SignedInfo, found {len(infos)}")
    info = infos[0]
    c14n = _algorithm(info.find(q(DS, "CanonicalizationMethod")), "CanonicalizationMethod")
    if c14n not in C14N_METHODS:
        raise _refuse(f"canonicalization {c14n[:100]!r} is not allowed (comments or unknown methods)")
    sm_uri = _algorithm(info.find(q(DS, "SignatureMethod")), "SignatureMethod")
    method = _SIG_URIS.get(sm_uri)
    if method is None or method not in SIGNATURE_METHODS:
        weak = " (SHA-1 and other weak algorithms are refused)" if "sha1" in sm_uri.lower() else ""
        raise _refuse(f"signature method {sm_uri[:100]!r} is not allowed{weak}")
    refs = info.findall(q(DS, "Reference"))
    if len(refs) != 1:
        raise _refuse(f"the signature must have exactly one Reference, found {len(refs)}")
    ref = refs[0]
    if ref.get("URI") != f"#{target_id}":
        raise _refuse(
            f"the signature's reference {str(ref.get('URI'))[:100]!r} does not point at the element it signs "
            f"({'#' + target_id[:100]!r})"
        )
    transforms_el = ref.find(q(DS, "Transforms"))
    algorithms = [] if transforms_el is None else [t.get("Algorithm") or "" for t in transforms_el]
    if transforms_el is not None and any(t.tag != q(DS, "Transform") for t in transforms_el):
        raise _refuse("the reference's Transforms holds something other than Transform elements")
    c14n_count = sum(1 for a in algorithms if a in C14N_METHODS)
    for algo, transform in zip(algorithms, transforms_el if transforms_el is not None else [], strict=True):
        if algo != ENVELOPED and algo not in C14N_METHODS:
            raise _refuse(f"transform {algo[:100]!r} is not allowed")
        for inner in transform:
            if inner.tag != q(EXC_C14N_NS, "InclusiveNamespaces"):
                raise _refuse("a transform carries unexpected content")
    if algorithms.count(ENVELOPED) > 1 or c14n_count > 1:
        raise _refuse("the reference repeats a transform")
    dm_uri = _algorithm(ref.find(q(DS, "DigestMethod")), "DigestMethod")
    digest = _DIGEST_URIS.get(dm_uri)
    if digest is None or digest not in DIGEST_METHODS:
        weak = " (SHA-1 and other weak algorithms are refused)" if "sha1" in dm_uri.lower() else ""
        raise _refuse(f"digest method {dm_uri[:100]!r} is not allowed{weak}")
    values = ref.findall(q(DS, "DigestValue"))
    if len(values) != 1 or len(values[0]):
        raise _refuse("the reference must have one DigestValue holding text only")
    key_info = sig.find(q(DS, "KeyInfo"))
    if key_info is None:
        return None
    if key_info.find(f".//{q(DS, 'RetrievalMethod')}") is not None:
        raise _refuse("KeyInfo RetrievalMethod is refused; keys come from the identity provider's metadata only")
    chosen: x509.Certificate | None = None
    for cert_el in key_info.iter(q(DS, "X509Certificate")):
        try:
            der = base64.b64decode("".join((cert_el.text or "").split()), validate=True)
        except (binascii.Error, ValueError):
            raise _refuse("KeyInfo carries an unreadable certificate") from None
        trusted = idp.trusts(der)
        if trusted is None:
            raise _refuse("KeyInfo carries a certificate that is not the identity provider's (from its metadata)")
        chosen = trusted
    return chosen


def verify_enveloped(el: etree._Element, target_id: str, idp: IdpMetadata, now: datetime) -> etree._Element:
    """Verify the signature enveloped in ``el`` over ``el`` and return the signed element as signxml saw it."""
    sig = signature_of(el)
    if sig is None:
        raise _refuse(f"the {etree.QName(el).localname} is not signed")
    named = check_signature_element(sig, target_id, idp)
    candidates = (named,) if named is not None else idp.certificates
    config = SignatureConfiguration(
        require_x509=True,
        location="./",
        expect_references=1,
        signature_methods=SIGNATURE_METHODS,
        digest_algorithms=DIGEST_METHODS,
        verification_time=now,
    )
    data = etree.tostring(el, with_tail=False)
    failure: Exception | None = None
    for cert in candidates:
        try:
            result = XMLVerifier().verify(data, x509_cert=cert, id_attribute="ID", expect_config=config)
        except (SignXMLException, etree.LxmlError, ValueError, TypeError) as exc:
            failure = exc
            continue
        signed = result.signed_xml  # type: ignore[union-attr]
        if signed is None or signed.tag != el.tag or signed.get("ID") != target_id:
            raise _refuse("the signed content is not the element being read (signature wrapping)")
        return signed
    what = etree.QName(el).localname
    if isinstance(failure, InvalidCertificate):
        raise _refuse(f"the identity provider's certificate is not valid now, so the {what} cannot be trusted")
    if isinstance(failure, InvalidInput):
        raise _refuse(f"the {what} signature cannot be checked: {str(failure)[:160]}")
    raise _refuse(f"the {what} signature does not verify against the identity provider's certificate")


def cert_der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(Encoding.DER)
