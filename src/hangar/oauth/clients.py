"""Clients registered dynamically (RFC 7591): what a registration may say, and the registered records.

Accepted metadata:

- ``redirect_uris`` (required, 1 to 10): each an ``https`` URL with a host, an ``http`` URL on a loopback host
  (``localhost``, ``127.0.0.1``, ``[::1]``: native apps, RFC 8252 section 7.3), or a private-use scheme
  (``com.example.app:/callback``, ``cursor://...``: RFC 8252 section 7.1), never a scheme a browser runs or
  reads locally (``javascript:``, ``data:``, ``file:``, ...); no fragment, no user info, at most 2000
  characters. An authorization request must name one of them exactly.
- ``client_name``: at most 100 characters, no control characters (default "MCP client"). It is shown on the
  consent page as the application's own claim, and names the device credential a grant becomes.
- ``token_endpoint_auth_method``: ``none`` (a public client, the usual MCP client), ``client_secret_basic``
  (the RFC's default when the field is absent) or ``client_secret_post``; a confidential client gets a secret,
  shown once and stored hashed.
- ``grant_types``: ``authorization_code`` with or without ``refresh_token`` (default both);
  ``response_types``: ``code``.

Anything else in the request (``scope``, URLs of logos and policies, ...) is ignored and not echoed. A client
that no person has authorized within a day of registering is forgotten, so anonymous registrations cannot
pile up (they are rate-limited per address as well).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.ids import new_token, token_hash
from hangar.oauth import tables as t
from hangar.oauth.errors import OAuthError

MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 2000
MAX_NAME = 100
DEFAULT_NAME = "MCP client"
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
UNAUTHORIZED_CLIENT_LIFE = timedelta(days=1)

HOST = re.compile(r"[A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]{2,45}")  # a DNS name, an IPv4 or an IPv6 literal
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Schemes that are not an application's own: a browser would run them, read local data, or hand them to
# another program. A private-use scheme is any other.
NOT_PRIVATE_USE = frozenset(
    {"javascript", "vbscript", "data", "file", "about", "blob", "filesystem", "ftp", "ws", "wss", "mailto", "tel"}
)


@dataclass(frozen=True)
class ClientMetadata:
    client_name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]
    auth_method: str


@dataclass(frozen=True)
class Client:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]
    auth_method: str
    secret_hash: str | None
    created_at: datetime
    authorized_at: datetime | None = None  # the last time a person approved it; None: never

    @property
    def public(self) -> bool:
        return self.auth_method == "none"

    def wire(self) -> dict[str, Any]:
        """The client information response of RFC 7591 section 3.2.1 (without the secret)."""
        return {
            "client_id": self.client_id,
            "client_id_issued_at": int(self.created_at.timestamp()),
            "client_name": self.client_name,
            "redirect_uris": list(self.redirect_uris),
            "grant_types": list(self.grant_types),
            "response_types": ["code"],
            "token_endpoint_auth_method": self.auth_method,
        }


def _bad_uri(field: str, why: str) -> OAuthError:
    return OAuthError("invalid_redirect_uri", f"{field}: {why}")


def _bad(field: str, why: str) -> OAuthError:
    return OAuthError("invalid_client_metadata", f"{field}: {why}")


def check_redirect_uri(uri: Any, field: str) -> str:
    """``uri`` when it may be a redirect URI, else ``invalid_redirect_uri`` naming ``field``."""
    if not isinstance(uri, str) or not uri:
        raise _bad_uri(field, "must be a non-empty string")
    if len(uri) > MAX_URI_LENGTH:
        raise _bad_uri(field, f"is longer than {MAX_URI_LENGTH} characters")
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in uri):
        raise _bad_uri(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise _bad_uri(field, "is not a valid URI") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise _bad_uri(field, "must be an absolute URI")
    if "#" in uri:
        raise _bad_uri(field, "must not contain a fragment")
    if parts.username is not None or parts.password is not None:
        raise _bad_uri(field, "must not contain user information")
    if parts.hostname and not HOST.fullmatch(parts.hostname):
        raise _bad_uri(field, "the host is not a valid host name or address")
    if scheme == "https":
        if not parts.hostname:
            raise _bad_uri(field, "an https redirect URI needs a host")
    elif scheme == "http":
        if (parts.hostname or "").lower() not in LOOPBACK_HOSTS:
            raise _bad_uri(field, "plain http is allowed only on a loopback host (localhost, 127.0.0.1, [::1])")
    elif scheme in NOT_PRIVATE_USE:
        raise _bad_uri(field, f"the {scheme}: scheme cannot receive an authorization response")
    return uri


def _name(value: Any) -> str:
    if value is None:
        return DEFAULT_NAME
    if not isinstance(value, str) or not value.strip():
        raise _bad("client_name", "must be a non-empty string")
    name = value.strip()
    if len(name) > MAX_NAME:
        raise _bad("client_name", f"is longer than {MAX_NAME} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise _bad("client_name", "must not contain control or formatting characters")
    return name


def _string_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(field, "must be a list of strings")
    return list(value)


def read_metadata(data: Any) -> ClientMetadata:
    """The metadata of a registration request, checked; ``OAuthError`` naming the first field at fault."""
    if not isinstance(data, dict):
        raise OAuthError("invalid_client_metadata", "body: the registration must be a JSON object")
    data = {k: v for k, v in data.items() if v is not None}  # a member sent as null is a member left out
    uris = data.get("redirect_uris")
    if uris is None:
        raise _bad_uri("redirect_uris", "is required")
    if not isinstance(uris, list) or not uris:
        raise _bad_uri("redirect_uris", "must be a non-empty list")
    if len(uris) > MAX_REDIRECT_URIS:
        raise _bad_uri("redirect_uris", f"at most {MAX_REDIRECT_URIS} are accepted")
    checked = tuple(check_redirect_uri(u, f"redirect_uris[{i}]") for i, u in enumerate(uris))
    grants = _string_list(data.get("grant_types", list(GRANT_TYPES)), "grant_types")
    unknown = [g for g in grants if g not in GRANT_TYPES]
    if unknown:
        raise _bad("grant_types", f"{unknown[0]!r} is not supported (authorization_code, refresh_token)")
    if "authorization_code" not in grants:
        raise _bad("grant_types", "must include authorization_code")
    responses = _string_list(data.get("response_types", ["code"]), "response_types")
    if set(responses) != {"code"}:
        raise _bad("response_types", "only code is supported")
    method = data.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise _bad("token_endpoint_auth_method", f"must be one of {', '.join(AUTH_METHODS)}")
    ordered = tuple(g for g in GRANT_TYPES if g in grants)
    return ClientMetadata(_name(data.get("client_name")), checked, ordered, str(method))


def _client(row: Any) -> Client:
    return Client(
        row.client_id,
        row.client_name,
        tuple(row.redirect_uris),
        tuple(row.grant_types),
        row.auth_method,
        row.secret_hash,
        row.created_at,
        row.authorized_at,
    )


class Clients:
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock

    async def register(self, meta: ClientMetadata) -> tuple[Client, str | None]:
        """Store a new client; answers it and its secret (None for a public client), shown this once."""
        now = self._clock.now()
        secret = None if meta.auth_method == "none" else new_token("hocs_")
        client = Client(
            "hoc_" + secrets.token_urlsafe(24),
            meta.client_name,
            meta.redirect_uris,
            meta.grant_types,
            meta.auth_method,
            token_hash(secret) if secret else None,
            now,
        )
        async with self._db.begin() as conn:
            forgotten = sa.and_(
                t.clients.c.authorized_at.is_(None), t.clients.c.created_at <= now - UNAUTHORIZED_CLIENT_LIFE
            )
            await conn.execute(sa.delete(t.clients).where(forgotten))
            await conn.execute(
                sa.insert(t.clients).values(
                    client_id=client.client_id,
                    secret_hash=client.secret_hash,
                    auth_method=client.auth_method,
                    client_name=client.client_name,
                    redirect_uris=list(client.redirect_uris),
                    grant_types=list(client.grant_types),
                    created_at=now,
                )
            )
        return client, secret

    async def get(self, client_id: str | None) -> Client | None:
        if not client_id or len(client_id) > 64:
            return None
        async with self._db.connect() as conn:
            row = (await conn.execute(sa.select(t.clients).where(t.clients.c.client_id == client_id))).first()
        return _client(row) if row is not None else None

    async def authorized(self, client_id: str) -> None:
        """A person approved the client: it is kept from now on."""
        async with self._db.begin() as conn:
            await conn.execute(
                sa.update(t.clients).where(t.clients.c.client_id == client_id).values(authorized_at=self._clock.now())
            )
