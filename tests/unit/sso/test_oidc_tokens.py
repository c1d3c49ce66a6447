"""ID token checks, each failure with its stable code; and discovery's refusal of insecure endpoints."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from joserfc import jws, jwt
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey
from joserfc.util import urlsafe_b64encode

from hangar.sso.errors import SsoError
from hangar.sso.oidc.discovery import ProviderKeys, check_endpoint
from hangar.sso.oidc.tokens import check_claims, verify_id_token

ISSUER = "https://idp.example.com"
CLIENT = "hangar"
NONCE = "n-0S6_WzA2Mj"
RSA = RSAKey.generate_key(2048, parameters={"kid": "rsa1", "alg": "RS256", "use": "sig"})
EC = ECKey.generate_key("P-256", parameters={"kid": "ec1", "alg": "ES256", "use": "sig"})
OTHER = RSAKey.generate_key(2048, parameters={"kid": "rsa1", "alg": "RS256", "use": "sig"})
PUBLIC = KeySet.import_key_set({"keys": [RSA.as_dict(private=False), EC.as_dict(private=False)]})


def claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": CLIENT, "sub": "248289761001", "nonce": NONCE, "iat": now, "exp": now + 600}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def sign(payload: dict[str, Any], key: Any = RSA, alg: str = "RS256", **header: Any) -> str:
    return jwt.encode({"alg": alg, "kid": key.kid, **header}, payload, key)


async def verify(token: str, *, algs: tuple[str, ...] = ("RS256", "ES256")) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        # The keys are given up front: these checks never reach the network.
        keys = ProviderKeys(http, "https://idp.example.com/jwks", keys=PUBLIC)
        now = datetime.now(UTC)
        return await verify_id_token(
            token, keys=keys, issuer=ISSUER, client_id=CLIENT, nonce=NONCE, now=now, allowed_algs=algs
        )


async def code_of(token: str, **kw: Any) -> str:
    with pytest.raises(SsoError) as err:
        await verify(token, **kw)
    return err.value.sso_code


async def test_valid_tokens_verify() -> None:
    assert (await verify(sign(claims())))["sub"] == "248289761001"
    assert (await verify(sign(claims(aud=[CLIENT, "other"], azp=CLIENT))))["azp"] == CLIENT
    assert (await verify(sign(claims(), key=EC, alg="ES256")))["iss"] == ISSUER


async def test_signature_failures() -> None:
    assert await code_of(sign(claims(), key=OTHER)) == "signature"  # same kid, another key
    header = urlsafe_b64encode(json.dumps({"alg": "none", "kid": "rsa1"}).encode()).decode()
    body = urlsafe_b64encode(json.dumps(claims()).encode()).decode()
    assert await code_of(f"{header}.{body}.") == "signature"
    hmac_key = OctKey.import_key(RSA.as_dict(private=False)["n"].encode())
    forged = jws.serialize_compact({"alg": "HS256", "kid": "rsa1"}, json.dumps(claims()), hmac_key)
    assert await code_of(forged) == "signature"  # HMAC keyed with public material
    assert await code_of(sign(claims()), algs=("ES256",)) == "signature"  # not an advertised algorithm
    token = sign(claims())
    head, _, sig = token.split(".")
    crit = urlsafe_b64encode(json.dumps({"alg": "RS256", "kid": "rsa1", "crit": ["x-ext"], "x-ext": 1}).encode())
    assert await code_of(f"{crit.decode()}.{token.split('.')[1]}.{sig}") == "signature"
    tampered = urlsafe_b64encode(json.dumps(claims(sub="admin")).encode()).decode()
    assert await code_of(f"{head}.{tampered}.{sig}") == "signature"
    assert await code_of("not-a-jwt") == "invalid"


@pytest.mark.parametrize(
    ("over", "code"),
    [
        ({"iss": "https://evil.example.com"}, "issuer"),
        ({"iss": None}, "issuer"),
        ({"aud": "someone-else"}, "audience"),
        ({"aud": ["someone-else", "another"]}, "audience"),
        ({"aud": [CLIENT, "another"]}, "audience"),  # several audiences without azp
        ({"azp": "someone-else"}, "audience"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"iat": int(time.time()) + 3600, "exp": int(time.time()) + 7200}, "expired"),
        ({"nbf": int(time.time()) + 3600}, "expired"),
        ({"exp": None}, "invalid"),
        ({"nonce": "another"}, "nonce"),
        ({"nonce": None}, "nonce"),
        ({"sub": None}, "invalid"),
        ({"sub": ""}, "invalid"),
    ],
)
async def test_claim_failures(over: dict[str, Any], code: str) -> None:
    assert await code_of(sign(claims(**over))) == code


def test_leeway_uses_the_given_clock() -> None:
    payload = claims(exp=1_000_000, iat=None)
    check_claims(payload, issuer=ISSUER, client_id=CLIENT, nonce=NONCE, now=datetime.fromtimestamp(1_000_030, UTC))
    with pytest.raises(SsoError) as err:
        check_claims(payload, issuer=ISSUER, client_id=CLIENT, nonce=NONCE, now=datetime.fromtimestamp(1_000_061, UTC))
    assert err.value.sso_code == "expired"


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://idp.example.com/auth", True),
        ("http://127.0.0.1:4000/auth", True),
        ("http://localhost/auth", True),
        ("http://[::1]:9/auth", True),
        ("http://idp.example.com/auth", False),
        ("javascript:alert(1)", False),
        ("", False),
        (None, False),
    ],
)
def test_endpoints_must_be_https_except_on_loopback(url: Any, ok: bool) -> None:
    if ok:
        assert check_endpoint(url, "authorization_endpoint") == url
    else:
        with pytest.raises(SsoError) as err:
            check_endpoint(url, "authorization_endpoint")
        assert err.value.sso_code == "issuer"
