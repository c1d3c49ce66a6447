"""The browser an authorization request belongs to, and the forms it may post.

``/auth/oauth/authorize`` sets a cookie holding a random binding secret (HttpOnly, ``SameSite=Lax``, path
``/auth/oauth``, ``Secure`` on an https origin, one name per request so several requests may be open at once);
the request keeps only the secret's SHA-256. Every later step (sign-in, the SSO return, consent, the
decision) must come from a browser holding it, so whoever signs in is bound to the browser that started the
request, and a sign-in finished elsewhere cannot be used here.

Each form carries an anti-forgery token derived from the binding secret (HMAC-SHA256 keyed by it, over the
request id): another site can neither read the cookie nor compute the token, so it cannot post a sign-in or a
decision in the person's name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from hangar.core.ids import token_hash
from hangar.oauth.requests import REQUEST_TTL, AuthRequest

COOKIE_PATH = "/auth/oauth"


class NotThisBrowser(Exception):
    """The request was not started in this browser, or a form lacks its anti-forgery token."""


def cookie_name(request_id: str) -> str:
    return "hangar_oauth_" + hashlib.sha256(request_id.encode()).hexdigest()[:16]


def bind(response: Response, auth: AuthRequest, binding: str, *, secure: bool) -> None:
    response.set_cookie(
        cookie_name(auth.id),
        binding,
        max_age=int(REQUEST_TTL.total_seconds()),
        path=COOKIE_PATH,
        httponly=True,
        secure=secure,
        samesite="lax",  # sent on the top-level return from an identity provider, never on a cross-site post
    )


def forget(response: Response, auth: AuthRequest) -> None:
    response.delete_cookie(cookie_name(auth.id), path=COOKIE_PATH)


def binding_of(request: Request, auth: AuthRequest) -> str:
    """The binding secret this browser holds for ``auth``; ``NotThisBrowser`` when it holds none."""
    held = request.cookies.get(cookie_name(auth.id), "")
    if not held or not secrets.compare_digest(token_hash(held), auth.binding_hash):
        raise NotThisBrowser("this sign-in was started in another browser (or its cookie is gone)")
    return held


def csrf_token(binding: str, auth: AuthRequest) -> str:
    mac = hmac.new(binding.encode(), f"oauth-form:{auth.id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def check_form(request: Request, auth: AuthRequest, presented: str | None) -> str:
    """A form post from the browser that holds ``auth``, carrying its anti-forgery token; answers the binding."""
    binding = binding_of(request, auth)
    if not presented or not secrets.compare_digest(presented, csrf_token(binding, auth)):
        raise NotThisBrowser("the form's anti-forgery token is missing or wrong")
    return binding
