"""Where an identity provider reaches this server: the one origin every SSO value is built from.

The SAML entity id and assertion consumer, the metadata URL, the OIDC redirect URI and the SCIM base URL are all
built from ``sso_origin``: the public URL when one is set (``--public-url``), else the listener's own host and port.
The sign-in routes use it and the ``sso.endpoints`` op shows it, so the values the settings page gives an identity
provider's administrator are the ones the sign-ins send. The browser's address is never the source: behind a
reverse proxy it differs from what the identity provider must be given, and a ``Host`` header is the client's to
choose.

Only a server that names no reachable origin of its own (it listens on a wildcard address, or on an ephemeral port,
and has no public URL) falls back to the origin a request arrived on, since that is the only address it has; the
op then says so (``originSource: "request"``) and shows the values for this machine's loopback address, and the
settings page asks for ``--public-url``.
"""

from __future__ import annotations

from typing import Literal

from starlette.requests import Request

from hangar.config import Settings
from hangar.sso.handoff import request_origin

OriginSource = Literal["publicUrl", "listener", "request"]

ACS_PATH = "/saml/acs"
LOGIN_PATH = "/saml/login"
METADATA_PATH = "/saml/metadata"
OIDC_CALLBACK_PATH = "/oidc/callback"
SCIM_BASE_PATH = "/scim/v2"

_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
_LOOPBACK_FOR = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "[::1]"}


def _listener_origin(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def configured_origin(settings: Settings) -> tuple[str | None, OriginSource]:
    """The origin the configuration names, and where it comes from; ``(None, "request")`` when it names none."""
    if settings.public_url:
        return settings.public_url.rstrip("/"), "publicUrl"
    if settings.port and settings.host not in _WILDCARD_HOSTS:
        return _listener_origin(settings.host, settings.port), "listener"
    return None, "request"


def sso_origin(settings: Settings, request: Request) -> str:
    """The origin SSO values are built from for this request (the request's own only when nothing else is named)."""
    origin, _ = configured_origin(settings)
    return origin or request_origin(request)


def shown_origin(settings: Settings) -> tuple[str, OriginSource]:
    """The origin the settings page shows: the configured one, else this machine's loopback address on the port."""
    origin, source = configured_origin(settings)
    if origin is not None:
        return origin, source
    return _listener_origin(_LOOPBACK_FOR.get(settings.host, settings.host), settings.port), source


def acs_url(origin: str) -> str:
    return origin.rstrip("/") + ACS_PATH


def metadata_url(origin: str) -> str:
    return origin.rstrip("/") + METADATA_PATH


def oidc_redirect_uri(origin: str) -> str:
    return origin.rstrip("/") + OIDC_CALLBACK_PATH


def scim_base_url(origin: str) -> str:
    return origin.rstrip("/") + SCIM_BASE_PATH
