"""W3C WebDriver error codes (shared by BiDi and classic WebDriver) translated into ``hangar.errors``, in one place.

Both protocols name errors with the same strings (https://w3c.github.io/webdriver/#errors); the engine's message
is kept short because it may quote the page (a script's exception), and the code survives as ``detail_code``
(spaces as underscores) for callers that need the finer reason, such as a navigation that ended on the
engine's own error page.
"""

from __future__ import annotations

from hangar.errors import HangarError, InvalidArgs, NotFound, Refused, Unavailable

_MESSAGE_CHARS = 300


class EngineTimeout(Unavailable):
    """The engine did not answer a command in time (the page may still be loading)."""


_NOT_FOUND = {
    "no such element", "no such node", "stale element reference", "detached shadow root", "no such frame",
    "no such history entry", "no such alert", "no such shadow root", "no such request",
}  # fmt: skip
_INVALID = {
    "invalid argument", "invalid selector", "move target out of bounds", "element not interactable",
    "invalid element state", "element click intercepted", "unable to set cookie",
}  # fmt: skip
_GONE = {"invalid session id", "session not created", "no such window", "no such user context"}
_TIMEOUT = {"timeout", "script timeout"}


def w3c_error(code: str, message: str, what: str) -> HangarError:
    """The error for a W3C ``code`` the engine answered to ``what`` (a command name, for the message)."""
    text = " ".join(message.split())[:_MESSAGE_CHARS] or code
    detail = code.replace(" ", "_")
    if code in _NOT_FOUND:
        return NotFound(f"{what}: {text}", detail_code=detail)
    if code in _INVALID:
        return InvalidArgs(f"{what}: {text}", detail_code=detail)
    if code in _TIMEOUT:
        return EngineTimeout(f"{what} timed out: {text}", detail_code=detail)
    if code == "javascript error":
        return Refused(f"{what}: the page's script failed: {text}", detail_code=detail)
    if code == "unexpected alert open":
        return Refused(f"{what}: a dialog is open on the page", detail_code=detail)
    if code in _GONE:
        return Unavailable(f"{what}: the browser session is gone ({text})", detail_code=detail)
    return Unavailable(f"{what}: {text}", detail_code=detail)
