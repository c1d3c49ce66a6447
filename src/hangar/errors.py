"""The one error tree of Hangar.

Every error a caller can see carries a stable ``code`` (the RPC contract's codes) and a one-sentence message.
Backend errors are translated into this tree in one place with ``raise ... from exc``; only the HTTP and RPC
edges map errors to statuses and frames (``hangar.httpkit.errors`` renders every JSON error body on HTTP,
``hangar.rpc.dispatcher`` the error frames).

    HangarError (internal)
    ├── Unauthenticated (unauthenticated)
    ├── Forbidden (forbidden)
    ├── WorkspaceRequired (workspace_required)
    ├── UnknownOp (unknown_op)
    ├── InvalidArgs (invalid_args; names the field)
    ├── NotFound (not_found)
    ├── Conflict (conflict)
    ├── Refused (refused; says which rule)
    ├── Unavailable (unavailable)
    │   └── Elsewhere (unavailable; what was asked for is held by another server process)
    └── Internal (internal)

Parts subclass the leaf that matches their meaning (a failed SSO sign-in is a ``Refused`` answered 400,
``hangar.sso.errors``; a pipeline template error is ``InvalidArgs``) and may carry a finer ``detail_code``.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar


class HangarError(Exception):
    """Base of every error Hangar reports to a caller."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, detail_code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail_code = detail_code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    def http_headers(self) -> dict[str, str]:
        """Headers the HTTP edge sends with this error (a rate limit's ``Retry-After``)."""
        return {}


class Unauthenticated(HangarError):
    code = "unauthenticated"
    http_status = 401


class Forbidden(HangarError):
    code = "forbidden"
    http_status = 403


class WorkspaceRequired(HangarError):
    code = "workspace_required"
    http_status = 400


class UnknownOp(HangarError):
    code = "unknown_op"
    http_status = 404


class InvalidArgs(HangarError):
    """Bad input. ``field`` names what was wrong (dotted path), when one field is to blame."""

    code = "invalid_args"
    http_status = 400

    def __init__(self, message: str, *, field: str | None = None, detail_code: str | None = None) -> None:
        # The contract says the message names the field: say it once, in front, when the text does not.
        if field and field not in message:
            message = f"{field}: {message}"
        super().__init__(message, detail_code=detail_code)
        self.field = field


class NotFound(HangarError):
    code = "not_found"
    http_status = 404


class Conflict(HangarError):
    code = "conflict"
    http_status = 409


class Refused(HangarError):
    """A rule said no; the message says which rule."""

    code = "refused"
    http_status = 403


class Unavailable(HangarError):
    code = "unavailable"
    http_status = 503


class Elsewhere(Unavailable):
    """What the caller asked for lives in another server process of the same records (a rig that server runs):
    ``origin`` is where the servers reach that process. The RPC layer relays the call there (``hangar.rpc.relay``);
    the message is what the caller hears when it cannot be relayed."""

    def __init__(self, message: str, *, origin: str) -> None:
        super().__init__(message)
        self.origin = origin


class Internal(HangarError):
    code = "internal"
    http_status = 500


ERROR_CODES: tuple[str, ...] = (
    "unauthenticated",
    "forbidden",
    "workspace_required",
    "unknown_op",
    "invalid_args",
    "not_found",
    "conflict",
    "refused",
    "unavailable",
    "internal",
)


def error_from_wire(code: str, message: str) -> HangarError:
    """The error another Hangar process answered, as the class of its code (its words, never re-worded)."""
    classes: list[type[HangarError]] = [HangarError]
    for cls in classes:
        classes.extend(cls.__subclasses__())
    found = next((c for c in classes if c.code == code), HangarError)
    with contextlib.suppress(TypeError):
        return found(message)
    return HangarError(message)
