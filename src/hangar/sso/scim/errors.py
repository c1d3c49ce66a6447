"""SCIM errors: the leaves of the Hangar error tree that SCIM needs beyond the tree's own (a ``scimType``, or a
status of its own; RFC 7644 §3.12), and ``error_body``, the one renderer of the SCIM error body
(``urn:ietf:params:scim:api:messages:2.0:Error``) that RFC 7644 fixes where the rest of Hangar answers with the
shared JSON error body. The SCIM routes raise any error of the tree (``NotFound``, ``Unauthenticated``...) and the
edge (``routes.scim``) renders it here.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import Conflict, HangarError, InvalidArgs, Refused

ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimBadRequest(InvalidArgs):
    """400 with a ``scimType``: invalidFilter, invalidPath, invalidSyntax, invalidValue, mutability, noTarget,
    tooMany, invalidVers."""

    def __init__(self, scim_type: str, message: str) -> None:
        super().__init__(message, detail_code=scim_type)
        self.scim_type = scim_type


class ScimUniqueness(Conflict):
    scim_type = "uniqueness"


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
