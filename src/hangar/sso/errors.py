"""The SSO sign-in failure: one ``SsoError`` per refused SAML or OIDC sign-in, carrying one of the stable codes of
CONTRACTS section 4, the only place those codes are listed.

It is a ``Refused`` (a rule said no) answered with status 400, as the contract fixes for failed logins; ``sso_code``
(also ``detail_code``) is the code the failure page and the JSON body show. SAML codes:

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

OIDC codes: ``state`` (unknown, used, stale or foreign sign-in), ``issuer``, ``audience``, ``nonce``, ``signature``,
``expired``, ``invalid`` and ``internal``, meaning what they mean for SAML.
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
OidcCode = Literal["state", "issuer", "audience", "nonce", "signature", "expired", "invalid", "internal"]
SsoCode = Literal[SamlCode, OidcCode]

SAML_CODES: tuple[str, ...] = get_args(SamlCode)
OIDC_CODES: tuple[str, ...] = get_args(OidcCode)
SSO_CODES: frozenset[str] = frozenset(SAML_CODES) | frozenset(OIDC_CODES)


class SsoError(Refused):
    """A SAML or OIDC sign-in (or a connection test) was refused; ``sso_code`` says why."""

    http_status: ClassVar[int] = 400

    def __init__(self, sso_code: SsoCode, message: str) -> None:
        if sso_code not in SSO_CODES:
            raise ValueError(f"unknown SSO failure code {sso_code!r}")
        super().__init__(message, detail_code=sso_code)
        self.sso_code: SsoCode = sso_code

    def to_dict(self) -> dict[str, str]:
        # The sign-in contract shows the SSO code where other errors show the RPC code.
        return {"code": self.sso_code, "message": self.message}
