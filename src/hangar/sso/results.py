"""What the ``sso.*`` ops answer.

A connection record is answered as the record model itself (``SamlConnection``, ``OidcView``): its field
names are the spec's camelCase names already.
"""

from __future__ import annotations

from typing import Literal

from pydantic import RootModel

from hangar.rpc.registry import Result
from hangar.sso.config import OidcView, SamlConnection


class ConnectionView(RootModel[SamlConnection | OidcView]):
    """The saved connection of one kind."""


class KindStatus(Result):
    enabled: bool
    configured: bool


class SsoStatus(Result):
    saml: KindStatus
    oidc: KindStatus
    scim_token_present: bool
    origin: str
    pairing_enabled: bool


class SsoEndpoints(Result):
    """The values an identity provider's administrator registers, built from the one origin the sign-ins use.

    ``originSource`` says where that origin comes from: ``publicUrl`` (``--public-url``), ``listener`` (the
    server's own host and port), or ``request`` (neither names one: the sign-ins follow the address each browser
    uses, and these values are this machine's loopback address)."""

    origin: str
    origin_source: Literal["publicUrl", "listener", "request"]
    saml_entity_id: str
    saml_acs_url: str
    saml_metadata_url: str
    oidc_redirect_uri: str
    scim_base_url: str


class SamlConnectionOk(Result):
    """The IdP metadata parses and an authentication request can be built from it."""

    ok: Literal[True] = True
    kind: Literal["saml"] = "saml"
    idp_entity_id: str
    sso_url: str
    certificates: int
    sp_entity_id: str
    request_id: str
    redirect_url: str


class OidcConnectionOk(Result):
    """The issuer's discovery document and signing keys were fetched."""

    ok: Literal[True] = True
    kind: Literal["oidc"] = "oidc"
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    signing_keys: int


class FailureReason(Result):
    code: str
    message: str


class ConnectionFailed(Result):
    ok: Literal[False] = False
    kind: str
    error: FailureReason


ConnectionOutcome = SamlConnectionOk | OidcConnectionOk | ConnectionFailed


class ConnectionTest(RootModel[ConnectionOutcome]):
    """What ``sso.testConnection`` found: ``ok`` with what was checked, or the failure's code and message."""


class SpMetadata(Result):
    origin: str
    entity_id: str
    acs_url: str
    xml: str


class PairingState(Result):
    pairing_enabled: bool


class SessionPolicyView(Result):
    """Bounds on a device credential in minutes; 0 means unset."""

    max_age_minutes: int
    idle_timeout_minutes: int


class ScimToken(Result):
    token: str
