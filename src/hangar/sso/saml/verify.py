"""Verifying a SAML response posted to our assertion consumer, step by step, each step with its code.

The verifier takes plain inputs (``SpSettings``, a clock, the pending-request store, the seen-assertion
store) so it runs without a server. Order of the checks, which fixes the code a failure reports:

1. base64, size, XML safety (no DOCTYPE, no entities), a SAML 2.0 ``Response`` root     -> ``malformed``
2. layout of signatures and assertions (wrapping), the response signature when present
   or wanted (``wantResponseSigned``)                                                    -> ``signature``
3. response ``Issuer`` when present                                                      -> ``issuer``
4. ``Status`` is Success                                                                  -> ``status``
5. ``Destination`` is our ACS (required when the response is signed)                      -> ``destination``
6. exactly one assertion, plain (not encrypted)                                          -> ``invalid``
7. the assertion's signature, always required; from here on only the signed copy is read -> ``signature``
   and the assertion was not accepted before (replay)                                    -> ``invalid``
8. assertion ``Issuer``                                                                   -> ``issuer``
9. ``IssueInstant``, ``Conditions`` NotBefore/NotOnOrAfter with the skew allowance        -> ``expired``
10. ``AudienceRestriction`` names our entity id                                           -> ``audience``
11. a bearer ``SubjectConfirmation`` whose ``Recipient`` is our ACS                       -> ``recipient``
    and whose ``SubjectConfirmationData`` times hold                                      -> ``expired``
12. ``InResponseTo`` names a pending request (or unsolicited and ``allowIdpInitiated``)   -> ``request_match``
    (the assertion's own InResponseTo; the response's only when the response is signed)
13. the ``NameID`` and the configured attributes (text only, never partial)               -> ``malformed``
14. the pending request is used up (one use)                                              -> ``request_match``

Nothing is recorded unless every step passed. Steps 1 to 13 only read (``check_xml``, a ``CheckedResponse``);
step 14 and the record of the assertion are one write transaction (``use_up``), which makes the replay and
one-use checks again under the write lock, so a caller may queue it behind other writers of its own.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from lxml import etree

from hangar.core.clock import Clock
from hangar.sso.errors import SsoError
from hangar.sso.saml.metadata import IdpMetadata
from hangar.sso.saml.pending import PendingRequest, PendingRequests, SeenAssertions
from hangar.sso.saml.signature import check_layout, signature_of, verify_enveloped
from hangar.sso.saml.xml import MAX_XML_BYTES, SAML, SAMLP, child, parse_instant, parse_untrusted, q, text_of

STATUS_SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
CM_BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
ENTITY_FORMAT = "urn:oasis:names:tc:SAML:2.0:nameid-format:entity"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class SpSettings:
    """What the verifier needs from the connection record and the server's origin."""

    sp_entity_id: str
    acs_url: str
    idp: IdpMetadata
    clock_skew: timedelta = timedelta(seconds=90)
    allow_idp_initiated: bool = False
    want_response_signed: bool = False
    email_attribute: str = "email"
    display_name_attribute: str = "displayName"
    groups_attribute: str = "groups"


@dataclass(frozen=True)
class SamlIdentity:
    """Who signed in, read from the signed assertion only."""

    issuer: str
    subject: str
    name_id_format: str | None
    email: str | None
    display_name: str | None
    groups: tuple[str, ...]
    assertion_id: str
    session_index: str | None
    request: PendingRequest | None
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckedResponse:
    """A response that passed every check that reads (``ResponseVerifier.check_xml``), before it is used up."""

    identity: SamlIdentity  # without its request, which ``use_up`` takes
    request_id: str | None
    replay_key: str
    keep_until: datetime  # how long the assertion is remembered as used


def use_up(checked: CheckedResponse, pending: PendingRequests, seen: SeenAssertions) -> SamlIdentity:
    """Step 14 and the record of the assertion, in one write transaction: the identity with the request it
    answered. ``request_match`` when the request was used meanwhile, ``invalid`` when the assertion was."""
    request, fresh = seen.use_up(pending, checked.request_id, checked.replay_key, checked.keep_until)
    if checked.request_id is not None and request is None:
        raise SsoError("request_match", "the pending request was already used")
    if not fresh:
        raise SsoError("invalid", "this assertion was already used (replay)")
    return replace(checked.identity, request=request)


def decode_post_value(value: str | bytes) -> bytes:
    """The XML inside an HTTP-POST ``SAMLResponse`` (plain base64; deflated data is not accepted here)."""
    raw = value.encode("ascii", "replace") if isinstance(value, str) else value
    compact = b"".join(raw.split())
    if not compact:
        raise SsoError("malformed", "SAMLResponse is empty")
    if len(compact) > (MAX_XML_BYTES * 4) // 3 + 4:
        raise SsoError("malformed", f"SAMLResponse is larger than {MAX_XML_BYTES // 1024} KiB")
    try:
        xml = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise SsoError("malformed", "SAMLResponse is not base64") from None
    head = xml.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head != b"<":
        raise SsoError("malformed", "SAMLResponse is not XML (compressed responses are not accepted by POST)")
    return xml


class ResponseVerifier:
    def __init__(self, settings: SpSettings, clock: Clock, pending: PendingRequests, seen: SeenAssertions) -> None:
        self.settings = settings
        self._clock = clock
        self._pending = pending
        self._seen = seen

    def verify_post(self, saml_response: str | bytes) -> SamlIdentity:
        return self.verify_xml(decode_post_value(saml_response))

    def verify_xml(self, data: bytes) -> SamlIdentity:
        return use_up(self.check_xml(data), self._pending, self._seen)

    def check_post(self, saml_response: str | bytes) -> CheckedResponse:
        return self.check_xml(decode_post_value(saml_response))

    def check_xml(self, data: bytes) -> CheckedResponse:
        """Steps 1 to 13; nothing is written."""
        s = self.settings
        now = self._clock.now()
        skew = s.clock_skew
        root = parse_untrusted(data, what="SAML response")
        if root.tag != q(SAMLP, "Response"):
            raise SsoError("malformed", f"expected a samlp:Response, found {etree.QName(root).localname}")
        if root.get("Version") != "2.0":
            raise SsoError("malformed", "the response is not SAML 2.0 (Version must be 2.0)")
        response_id = root.get("ID")
        if not response_id:
            raise SsoError("malformed", "the response has no ID")

        # 2. wrapping and the response signature.
        check_layout(root)
        for candidate in root.findall(q(SAML, "Assertion")):
            if signature_of(candidate) is None:
                raise SsoError("signature", "an assertion is not signed (assertion signatures are always required)")
        response_signed = signature_of(root) is not None
        if s.want_response_signed and not response_signed:
            raise SsoError("signature", "the response is not signed and wantResponseSigned is on")
        view = verify_enveloped(root, response_id, s.idp, now) if response_signed else root

        # 3-5. issuer, status, destination (read from the signed response when there is one).
        issuer_el = child(view, SAML, "Issuer")
        if issuer_el is not None:
            self._check_issuer(issuer_el, "response")
        self._check_status(view)
        destination = view.get("Destination")
        if destination is None:
            if response_signed:
                raise SsoError("destination", "the signed response names no Destination")
        elif destination != s.acs_url:
            raise SsoError("destination", f"the response is addressed to {destination[:120]!r}, not our ACS")
        response_irt = view.get("InResponseTo")
        issue = parse_instant(view.get("IssueInstant"), "Response IssueInstant")
        if issue is None:
            raise SsoError("malformed", "the response has no IssueInstant")
        if issue > now + skew:
            raise SsoError("expired", "the response was issued in the future (beyond the clock skew allowance)")

        # 6. exactly one assertion.
        if root.find(f".//{q(SAML, 'EncryptedAssertion')}") is not None:
            raise SsoError("invalid", "encrypted assertions are not supported; ask the IdP to sign, not encrypt")
        assertions = root.findall(q(SAML, "Assertion"))
        if len(assertions) != 1:
            raise SsoError("invalid", f"a response must carry exactly one assertion, found {len(assertions)}")
        raw_assertion = assertions[0]
        assertion_id = raw_assertion.get("ID")
        if not assertion_id:
            raise SsoError("malformed", "the assertion has no ID")

        # 7. the assertion signature; everything below reads the signed copy only.
        assertion = verify_enveloped(raw_assertion, assertion_id, s.idp, now)
        replay_key = f"{s.idp.entity_id}\n{assertion_id}"
        if self._seen.seen(replay_key):
            raise SsoError("invalid", "this assertion was already used (replay)")
        if assertion.get("Version") != "2.0":
            raise SsoError("malformed", "the assertion is not SAML 2.0")
        a_issuer = child(assertion, SAML, "Issuer")
        if a_issuer is None:
            raise SsoError("malformed", "the assertion has no Issuer")
        self._check_issuer(a_issuer, "assertion")

        # 9-10. times and audience.
        a_issue = parse_instant(assertion.get("IssueInstant"), "Assertion IssueInstant")
        if a_issue is None:
            raise SsoError("malformed", "the assertion has no IssueInstant")
        if a_issue > now + skew:
            raise SsoError("expired", "the assertion was issued in the future (beyond the clock skew allowance)")
        conditions = child(assertion, SAML, "Conditions")
        expiries: list[datetime] = []
        if conditions is not None:
            self._check_window(conditions, "Conditions", now, expiries)
        self._check_audience(conditions)

        # 11. subject and its bearer confirmation.
        subject = child(assertion, SAML, "Subject")
        if subject is None:
            raise SsoError("invalid", "the assertion has no Subject")
        scd_irt = self._check_confirmation(subject, now, expiries)

        # 12. request matching (the pending request is only used up at the very end).
        if response_irt and response_irt != scd_irt and (scd_irt or not response_signed):
            # An unsigned response's InResponseTo is anyone's to write: alone it never makes an unsolicited
            # assertion solicited.
            raise SsoError("request_match", "the response and its assertion answer different requests")
        request_id = scd_irt or (response_irt if response_signed else None)
        if request_id:
            if self._pending.peek(request_id) is None:
                raise SsoError("request_match", "InResponseTo matches no pending request (unknown, used or expired)")
        elif not s.allow_idp_initiated:
            raise SsoError("request_match", "unsolicited responses are not accepted (allowIdpInitiated is off)")

        # 13. identity.
        name_id_el = child(subject, SAML, "NameID")
        if name_id_el is None:
            raise SsoError("invalid", "the assertion's subject has no NameID")
        name_id = text_of(name_id_el, "NameID")
        if not name_id:
            raise SsoError("malformed", "the NameID is empty")
        attributes = self._attributes(assertion)
        email = self._first(attributes, s.email_attribute)
        if email is None and _EMAIL.match(name_id):
            email = name_id
        if email is not None and not _EMAIL.match(email):
            raise SsoError("invalid", f"the {s.email_attribute} attribute is not an email address")
        display_name = self._first(attributes, s.display_name_attribute)
        groups = tuple(v for v in attributes.get(s.groups_attribute, ()) if v)
        authn = child(assertion, SAML, "AuthnStatement")
        session_index = authn.get("SessionIndex") if authn is not None else None
        if authn is not None:
            session_end = parse_instant(authn.get("SessionNotOnOrAfter"), "SessionNotOnOrAfter")
            if session_end is not None and now - skew >= session_end:
                raise SsoError("expired", "the identity provider's session has already ended")

        keep_until = (max(expiries) if expiries else now + timedelta(minutes=10)) + skew
        identity = SamlIdentity(
            issuer=s.idp.entity_id,
            subject=name_id,
            name_id_format=name_id_el.get("Format"),
            email=email,
            display_name=display_name,
            groups=groups,
            assertion_id=assertion_id,
            session_index=session_index,
            request=None,
            attributes=attributes,
        )
        return CheckedResponse(identity, request_id or None, replay_key, keep_until)

    # --- steps ------------------------------------------------------------------------------------------

    def _check_issuer(self, el: etree._Element, where: str) -> None:
        fmt = el.get("Format")
        if fmt is not None and fmt != ENTITY_FORMAT:
            raise SsoError("issuer", f"the {where} issuer has format {fmt[:80]!r}, not an entity id")
        value = text_of(el, f"the {where} Issuer")
        if value != self.settings.idp.entity_id:
            raise SsoError("issuer", f"the {where} was issued by {value[:120]!r}, not the configured IdP")

    def _check_status(self, response: etree._Element) -> None:
        status = child(response, SAMLP, "Status")
        code_el = child(status, SAMLP, "StatusCode") if status is not None else None
        if code_el is None:
            raise SsoError("malformed", "the response has no Status/StatusCode")
        value = code_el.get("Value") or ""
        if value != STATUS_SUCCESS:
            sub = child(code_el, SAMLP, "StatusCode")
            detail = f" ({sub.get('Value')})" if sub is not None and sub.get("Value") else ""
            raise SsoError("status", f"the identity provider answered {value or 'no status'}{detail}")

    def _check_window(self, el: etree._Element, what: str, now: datetime, expiries: list[datetime]) -> None:
        skew = self.settings.clock_skew
        not_before = parse_instant(el.get("NotBefore"), f"{what} NotBefore")
        not_after = parse_instant(el.get("NotOnOrAfter"), f"{what} NotOnOrAfter")
        if not_before is not None and now + skew < not_before:
            raise SsoError("expired", f"{what} is not valid yet (NotBefore is beyond the clock skew allowance)")
        if not_after is not None:
            if now - skew >= not_after:
                raise SsoError("expired", f"{what} has expired (NotOnOrAfter has passed)")
            expiries.append(not_after)

    def _check_audience(self, conditions: etree._Element | None) -> None:
        if conditions is None:
            raise SsoError("audience", "the assertion has no Conditions and so no audience restriction")
        if conditions.find(q(SAML, "Condition")) is not None:
            raise SsoError("invalid", "the assertion carries a condition we do not understand")
        restrictions = conditions.findall(q(SAML, "AudienceRestriction"))
        if not restrictions:
            raise SsoError("audience", "the assertion has no AudienceRestriction")
        for restriction in restrictions:
            audiences = [text_of(a, "Audience") for a in restriction.findall(q(SAML, "Audience"))]
            if self.settings.sp_entity_id not in audiences:
                shown = ", ".join(repr(a[:80]) for a in audiences[:3]) or "nobody"
                raise SsoError("audience", f"the assertion is meant for {shown}, not {self.settings.sp_entity_id}")

    def _check_confirmation(self, subject: etree._Element, now: datetime, expiries: list[datetime]) -> str | None:
        """The matching bearer confirmation's InResponseTo (None when unsolicited)."""
        bearers = [sc for sc in subject.findall(q(SAML, "SubjectConfirmation")) if sc.get("Method") == CM_BEARER]
        if not bearers:
            raise SsoError("invalid", "the assertion has no bearer SubjectConfirmation")
        datas = [child(sc, SAML, "SubjectConfirmationData") for sc in bearers]
        matching = [d for d in datas if d is not None and d.get("Recipient") == self.settings.acs_url]
        if not matching:
            named = next((d.get("Recipient") for d in datas if d is not None and d.get("Recipient")), None)
            shown = repr(named[:120]) if named else "no recipient"
            raise SsoError("recipient", f"the subject confirmation names {shown}, not our ACS")
        scd = matching[0]
        if scd.get("NotOnOrAfter") is None:
            raise SsoError("invalid", "the bearer SubjectConfirmationData has no NotOnOrAfter")
        self._check_window(scd, "SubjectConfirmationData", now, expiries)
        return scd.get("InResponseTo")

    def _attributes(self, assertion: etree._Element) -> dict[str, tuple[str, ...]]:
        """Every attribute by Name (and FriendlyName); the configured ones must hold text only."""
        s = self.settings
        wanted = {s.email_attribute, s.display_name_attribute, s.groups_attribute}
        out: dict[str, tuple[str, ...]] = {}
        for statement in assertion.findall(q(SAML, "AttributeStatement")):
            for attr in statement.findall(q(SAML, "Attribute")):
                names = [n for n in (attr.get("Name"), attr.get("FriendlyName")) if n]
                strict = any(n in wanted for n in names)
                values: list[str] = []
                for v in attr.findall(q(SAML, "AttributeValue")):
                    if len(v) and not strict:
                        continue
                    values.append(text_of(v, f"the {names[0] if names else ''} attribute value"))
                for n in names:
                    out.setdefault(n, tuple(values))
        return out

    @staticmethod
    def _first(attributes: dict[str, tuple[str, ...]], name: str) -> str | None:
        values = [v for v in attributes.get(name, ()) if v]
        return values[0] if values else None
