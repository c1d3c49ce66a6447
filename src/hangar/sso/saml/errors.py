"""The SAML verification failure: one ``SamlError`` per refused response, carrying one of the spec's codes.

It is a ``Refused`` (a rule said no) answered with status 400, as CONTRACTS section 4 fixes for failed logins.
``saml_code`` (also ``detail_code``) is the stable code a failure page and the JSON body show:

    signature      missing, untrusted or tampered signature; a disallowed algorithm or transform; wrapping
    expired        outside NotBefore/NotOnOrAfter beyond the skew allowance
    audience       the audience restriction does not name us
    destination    the response destination is not our assertion consumer
    request_match  InResponseTo matches no pending request, or an unsolicited response while that is disallowed
    issuer         the issuer is not the configured identity provider
    recipient      the subject-confirmation recipient is not our assertion consumer
    malformed      XML or schema-level failure (DTDs, entities, bad base64, missing required parts)
    status         the identity provider's status was not Success
    invalid        anything else (several assertions, a replayed assertion, no bearer confirmation...)
    internal       failure of an internal seam
"""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

from hangar.errors import Refused

SamlCode = Literal[
    "signature",
    "expired",
    "audience",
    "destination",
    "request_match",
    "issuer",
    "recipient",
    "malformed",
    "status",
    "invalid",
    "internal",
]
SAML_CODES: tuple[str, ...] = get_args(SamlCode)


class SamlError(Refused):
    """A SAML response (or request) was refused; ``saml_code`` says why in one of the spec's codes."""

    http_status: ClassVar[int] = 400

    def __init__(self, saml_code: SamlCode, message: str) -> None:
        if saml_code not in SAML_CODES:
            raise ValueError(f"unknown SAML failure code {saml_code!r}")
        super().__init__(message, detail_code=saml_code)
        self.saml_code: SamlCode = saml_code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.saml_code, "message": self.message}
