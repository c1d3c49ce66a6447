"""Single sign-on: SAML 2.0 service provider, OIDC relying party, SCIM 2.0 provisioning and the ``sso.*`` ops.

Other parts need nothing from it: the server composes ``hangar.sso.part.SSO_PART``, and sign-ins end in the
identity part's users and device credentials. Inside, ``config`` holds the connection records, ``handoff`` the
credential hand-off and failure pages, ``login`` the login outcome both protocols share.
"""
