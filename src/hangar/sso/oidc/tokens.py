"""ID token verification (OpenID Connect Core 1.0 §3.1.3.7), each failure mapped to a stable code.

The signature is checked with joserfc against the provider's published keys, with only the asymmetric
algorithms the provider advertises (never ``none``, never an HMAC keyed with a public value). Then the claims:
``iss`` is the discovered issuer (``issuer``), ``aud`` names our client and a token for several audiences carries
``azp`` naming us (``audience``), ``exp`` is in the future and ``iat`` not in it, with a small leeway from the
injectable clock (``expired``), and ``nonce`` is the one this login sent (``nonce``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from joserfc import jws
from joserfc.errors import BadSignatureError, JoseError
from joserfc.util import urlsafe_b64decode

from hangar.sso.errors import SsoError
from hangar.sso.oidc.discovery import ProviderKeys

ASYMMETRIC_ALGS: frozenset[str] = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"}
)
LEEWAY_SECONDS = 60
MAX_TOKEN_BYTES = 64 * 1024


def _header(token: str) -> dict[str, Any]:
    if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
        raise SsoError("invalid", "the ID token is not a compact JWS")
    try:
        header = json.loads(urlsafe_b64decode(token.split(".", 1)[0].encode()))
    except (ValueError, UnicodeDecodeError):
        raise SsoError("invalid", "the ID token header cannot be read") from None
    if not isinstance(header, dict):
        raise SsoError("invalid", "the ID token header is not an object")
    return header


async def verify_id_token(
    token: str,
    *,
    keys: ProviderKeys,
    issuer: str,
    client_id: str,
    nonce: str,
    now: datetime,
    allowed_algs: tuple[str, ...],
) -> dict[str, Any]:
    """The verified claims of ``token``; raises ``SsoError`` with the code of the first failed check."""
    header = _header(token)
    alg = header.get("alg")
    algs = [a for a in allowed_algs if a in ASYMMETRIC_ALGS] or ["RS256"]
    if not isinstance(alg, str) or alg not in algs:
        raise SsoError("signature", f"the ID token's algorithm {alg!r} is not accepted")
    if header.get("crit"):
        raise SsoError("signature", "the ID token has critical header parameters we do not process")
    kid = header.get("kid")
    key_set = await keys.for_kid(kid if isinstance(kid, str) else None)
    try:
        verified = jws.deserialize_compact(token, key_set, algorithms=algs)
    except BadSignatureError:
        raise SsoError("signature", "the ID token's signature does not verify") from None
    except JoseError as exc:
        raise SsoError("signature", f"the ID token's signature cannot be checked: {exc.error}") from None
    try:
        claims = json.loads(verified.payload)
    except ValueError:
        raise SsoError("invalid", "the ID token's claims are not JSON") from None
    if not isinstance(claims, dict):
        raise SsoError("invalid", "the ID token's claims are not an object")
    check_claims(claims, issuer=issuer, client_id=client_id, nonce=nonce, now=now)
    return claims


def check_claims(claims: dict[str, Any], *, issuer: str, client_id: str, nonce: str, now: datetime) -> None:
    if claims.get("iss") != issuer:
        raise SsoError("issuer", f"the ID token was issued by {claims.get('iss')!r}, not {issuer!r}")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if client_id not in audiences:
        raise SsoError("audience", "the ID token is not meant for this server's client id")
    azp = claims.get("azp")
    if len(audiences) > 1 and azp is None:
        raise SsoError("audience", "the ID token has several audiences but no authorized party (azp)")
    if azp is not None and azp != client_id:
        raise SsoError("audience", "the ID token's authorized party (azp) is not this server's client id")
    stamp = now.timestamp()
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise SsoError("invalid", "the ID token has no expiry (exp)")
    if stamp > exp + LEEWAY_SECONDS:
        raise SsoError("expired", "the ID token has expired")
    iat = claims.get("iat")
    if isinstance(iat, int | float) and not isinstance(iat, bool) and iat > stamp + LEEWAY_SECONDS:
        raise SsoError("expired", "the ID token was issued in the future (check the clocks)")
    nbf = claims.get("nbf")
    if isinstance(nbf, int | float) and not isinstance(nbf, bool) and nbf > stamp + LEEWAY_SECONDS:
        raise SsoError("expired", "the ID token is not valid yet")
    if claims.get("nonce") != nonce:
        raise SsoError("nonce", "the ID token's nonce is not the one this sign-in sent")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise SsoError("invalid", "the ID token names no subject (sub)")
