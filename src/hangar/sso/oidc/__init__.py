"""OIDC relying party: discovery, code flow with PKCE, ID token verification, the ``/oidc`` routes."""
