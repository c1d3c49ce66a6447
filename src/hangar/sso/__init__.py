"""Single sign-on: SAML 2.0 service provider, OIDC relying party, SCIM 2.0 provisioning and the ``sso.*`` ops.

The server composes ``hangar.sso.part.SSO_PART``, and sign-ins end in the identity part's users and device
credentials. Inside, ``config`` holds the connection records, ``handoff`` the credential hand-off and failure
pages, ``login`` the login outcome both protocols share, ``continuation`` the sign-ins that continue a flow of
this server.

What it offers the other parts: ``sign_in_providers`` (the enabled connections, each with the path that starts
it) and, for a flow of this server that signs people in through SSO (the OAuth authorization server), the
``relay=oauth`` continuation: start the login with ``OAUTH_RELAY`` and ``continuation=<your request id>``, and
take the hand-off that arrives at ``RETURN_PATH`` with ``app.service(SignInHandoffs).take``.
"""

from __future__ import annotations

from hangar.sso.continuation import RETURN_PATH, Handoff, SignInHandoffs
from hangar.sso.handoff import OAUTH_RELAY
from hangar.sso.ops import Provider, sign_in_providers

__all__ = ["OAUTH_RELAY", "RETURN_PATH", "Handoff", "Provider", "SignInHandoffs", "sign_in_providers"]
