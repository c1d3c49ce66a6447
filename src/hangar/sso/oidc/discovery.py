"""OpenID Provider discovery and its signing keys.

``discover`` reads ``<issuer>/.well-known/openid-configuration`` (OpenID Connect Discovery 1.0 §4) and checks
what we rely on: the document names the configured issuer exactly (§4.3), offers the code flow and S256 PKCE
when it says what it offers, and every endpoint is https except on the loopback hosts; it also notes whether the
provider says it sends ``iss`` in authorization responses (RFC 9207). ``ProviderKeys`` caches
the JWKS and fetches it again, once, when a token names a key it does not hold (providers rotate keys).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from hangar.sso.config import LOOPBACK_HOSTS
from hangar.sso.errors import OidcCode, SsoError

HTTP_TIMEOUT = 10.0
MAX_DOCUMENT_BYTES = 512 * 1024


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    id_token_algs: tuple[str, ...]
    token_auth_methods: tuple[str, ...]
    # RFC 9207: the provider names itself (``iss``) in every authorization response, so one without it is not
    # the provider's.
    sends_iss: bool = False


def check_endpoint(url: Any, name: str) -> str:
    """An endpoint URL must be absolute https (http only on loopback hosts)."""
    if not isinstance(url, str) or not url:
        raise SsoError("issuer", f"the provider's discovery document has no {name}")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return url
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return url
    raise SsoError("issuer", f"the provider's {name} must use https")


async def fetch_json(http: httpx.AsyncClient, url: str, what: str, code: OidcCode) -> dict[str, Any]:
    try:
        resp = await http.get(url, headers={"accept": "application/json"}, timeout=HTTP_TIMEOUT)
    except httpx.HTTPError as exc:
        raise SsoError(code, f"the {what} could not be fetched: {type(exc).__name__}") from None
    if resp.status_code != 200:
        raise SsoError(code, f"the {what} answered HTTP {resp.status_code}")
    if len(resp.content) > MAX_DOCUMENT_BYTES:
        raise SsoError(code, f"the {what} is too large")
    try:
        data = json.loads(resp.content)
    except ValueError:
        raise SsoError(code, f"the {what} is not JSON") from None
    if not isinstance(data, dict):
        raise SsoError(code, f"the {what} is not a JSON object")
    return data


async def discover(http: httpx.AsyncClient, issuer: str) -> ProviderMetadata:
    """The provider's metadata; raises ``SsoError("issuer", ...)`` when it cannot be used."""
    check_endpoint(issuer, "issuer")
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    doc = await fetch_json(http, url, "discovery document", "issuer")
    if doc.get("issuer") != issuer:
        raise SsoError("issuer", f"the discovery document names issuer {doc.get('issuer')!r}, not {issuer!r}")
    response_types = doc.get("response_types_supported")
    if isinstance(response_types, list) and "code" not in response_types:
        raise SsoError("issuer", "the provider does not offer the authorization code flow")
    pkce = doc.get("code_challenge_methods_supported")
    if isinstance(pkce, list) and "S256" not in pkce:
        raise SsoError("issuer", "the provider does not offer S256 PKCE")
    algs = doc.get("id_token_signing_alg_values_supported")
    methods = doc.get("token_endpoint_auth_methods_supported")
    userinfo = doc.get("userinfo_endpoint")
    return ProviderMetadata(
        issuer=issuer,
        authorization_endpoint=check_endpoint(doc.get("authorization_endpoint"), "authorization_endpoint"),
        token_endpoint=check_endpoint(doc.get("token_endpoint"), "token_endpoint"),
        jwks_uri=check_endpoint(doc.get("jwks_uri"), "jwks_uri"),
        userinfo_endpoint=check_endpoint(userinfo, "userinfo_endpoint") if userinfo else None,
        id_token_algs=tuple(a for a in algs if isinstance(a, str)) if isinstance(algs, list) else ("RS256",),
        token_auth_methods=(
            tuple(m for m in methods if isinstance(m, str)) if isinstance(methods, list) else ("client_secret_basic",)
        ),
        sends_iss=doc.get("authorization_response_iss_parameter_supported") is True,
    )


class ProviderKeys:
    """The provider's JWKS, fetched on first use and again (once per token) for an unknown ``kid``."""

    def __init__(self, http: httpx.AsyncClient, jwks_uri: str, keys: KeySet | None = None) -> None:
        self._http = http
        self._uri = jwks_uri
        self._keys: KeySet | None = keys
        self.fetches = 0

    async def _fetch(self) -> KeySet:
        doc = await fetch_json(self._http, self._uri, "provider's key set", "signature")
        self.fetches += 1
        try:
            keys = KeySet.import_key_set(doc)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise SsoError("signature", f"the provider's key set cannot be read: {exc}") from None
        self._keys = keys
        return keys

    def _holds(self, keys: KeySet, kid: str | None) -> bool:
        if kid is None:
            return bool(keys.keys)
        return any(k.kid == kid for k in keys.keys)

    async def for_kid(self, kid: str | None) -> KeySet:
        """A key set holding ``kid``; refetched once when the cached one does not."""
        keys = self._keys
        if keys is not None and self._holds(keys, kid):
            return keys
        keys = await self._fetch()
        if not self._holds(keys, kid):
            raise SsoError("signature", f"the ID token is signed with a key the provider does not publish ({kid})")
        return keys
