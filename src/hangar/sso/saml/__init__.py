"""SAML 2.0 service provider: metadata, SP-initiated requests, response verification and the HTTP routes.

``ResponseVerifier`` (in ``verify``) checks a posted response and returns a ``SamlIdentity`` or raises an
``SsoError`` (``hangar.sso.errors``) carrying one of the spec's codes; ``routes.SAML_ROUTES`` are ``/saml/login``,
``/saml/acs`` and ``/saml/metadata``.
"""

from hangar.sso.saml.metadata import IdpMetadata, parse_idp_metadata, sp_metadata_xml
from hangar.sso.saml.pending import PendingRequest, PendingRequests, SeenAssertions
from hangar.sso.saml.request import AuthnRequest, build_authn_request, inflate_bounded
from hangar.sso.saml.verify import ResponseVerifier, SamlIdentity, SpSettings

__all__ = [
    "AuthnRequest",
    "IdpMetadata",
    "PendingRequest",
    "PendingRequests",
    "ResponseVerifier",
    "SamlIdentity",
    "SeenAssertions",
    "SpSettings",
    "build_authn_request",
    "inflate_bounded",
    "parse_idp_metadata",
    "sp_metadata_xml",
]
