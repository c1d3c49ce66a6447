"""Single sign-on: SAML 2.0 service provider, OIDC relying party, SCIM 2.0 provisioning and the ``sso.*`` ops.

Public pieces: ``config`` (connection records), ``handoff`` (credential hand-off and failure pages), ``login``
(the login outcome both protocols share); ``part.SSO_PART`` composes them for the server.
"""
