"""SCIM errors: leaves of the Hangar error tree that also carry the SCIM status and ``scimType`` (RFC 7644 §3.12).

Only the SCIM edge (``routes``) turns them into ``urn:ietf:params:scim:api:messages:2.0:Error`` bodies.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import Conflict, HangarError, InvalidArgs, NotFound, Refused, Unauthenticated

ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimBadRequest(InvalidArgs):
    """400 with a ``scimType``: invalidFilter, invalidPath, invalidSyntax, invalidValue, mutability, noTarget,
    tooMany, invalidVers."""

    def __init__(self, scim_type: str, message: str) -> None:
        super().__init__(message, detail_code=scim_type)
        self.scim_type = scim_type


class ScimUniqueness(Conflict):
    scim_type = "uniqueness"


class ScimNotFound(NotFound):
    pass


class ScimUnauthorized(Unauthenticated):
    pass


class ScimMethodNotAllowed(Refused):
    http_status = 405


class ScimNotImplemented(Refused):
    """501: a capability left out by design (group push)."""

    http_status = 501


def error_body(exc: HangarError) -> tuple[int, dict[str, Any]]:
    """The status and SCIM error body for ``exc``."""
    status = exc.http_status
    body: dict[str, Any] = {"schemas": [ERROR_URN], "status": str(status), "detail": exc.message}
    scim_type = getattr(exc, "scim_type", None)
    if scim_type:
        body["scimType"] = scim_type
    return status, body
