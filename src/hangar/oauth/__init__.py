"""The OAuth 2.1 authorization server of the product MCP endpoint (CONTRACTS section 8).

MCP clients (Claude Code, Cursor, the MCP Inspector, any SDK) find it from ``/mcp``'s protected-resource
metadata, read its RFC 8414 metadata, register themselves (RFC 7591), send the person to its sign-in page
(a pairing code or the SSO login, then consent: all their workspaces or one, read-only or not) and redeem
the authorization code with PKCE S256. The access token is a device credential of the person, narrowed to
what they chose and named after the client; refresh tokens rotate, and one used twice revokes the grant.

Inside: ``metadata`` (endpoints and the metadata document), ``clients`` (registration), ``requests`` (pending
authorization requests), ``browser`` (binding a request to its browser, anti-forgery tokens), ``pages`` (the
HTML), ``authorize`` (the authorization endpoint and its pages), ``grants`` (codes, grants, refresh tokens,
audit), ``endpoints`` (the JSON endpoints). Other parts need nothing from it; the server composes
``hangar.oauth.part.OAUTH_PART``.
"""
