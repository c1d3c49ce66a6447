"""What a chat provider call can answer when it does not succeed.

The provider's own error code (``invalid_auth``, ``ratelimited``, ``missing_recipient_user_id``...) is kept in
``provider_code`` because the bridge's fallbacks and the connection's states are decided by it; ``message`` is
what a person reads and never carries a token.
"""

from __future__ import annotations

import re

from hangar.errors import Unavailable

# A credential the provider will keep refusing until someone pastes new ones: the connection stops retrying.
TERMINAL_CODES: frozenset[str] = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "account_inactive",
        "token_expired",
        "invalid_app_id",
        "missing_scope",
        "not_allowed_token_type",
    }
)

# The transport could not get an answer at all (connection refused, reset, timed out, a 5xx).
TRANSPORT_CODE = "transport_error"

REASON_MAX = 300  # characters of a network failure's own text kept in a message
# Slack's tokens (xoxb-, xapp-, xoxe-, xoxp-...) and what follows a URL's path (a socket URL carries a one-use
# ticket in its query): neither reaches a message.
_TOKEN = re.compile(r"\bx[a-z]{1,4}-[A-Za-z0-9-]+")
_URL_TAIL = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s?#]*)[?#]\S*", re.IGNORECASE)


def network_reason(error: BaseException) -> str:
    """What a failure to reach the provider says, for a person and the log: the exception's kind and its own
    text ("ClientConnectorError: Cannot connect to host ..."), with any token and any URL's query taken out."""
    text = " ".join(str(error).split())
    text = _URL_TAIL.sub(r"\1", _TOKEN.sub("[redacted]", text))
    kind = type(error).__name__
    return f"{kind}: {text}"[:REASON_MAX] if text else kind


class ChatProviderError(Unavailable):
    """A provider call failed; ``provider_code`` is the provider's code or ``transport_error``."""

    def __init__(
        self,
        provider_code: str,
        message: str | None = None,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message or f"The chat provider answered {provider_code}.", detail_code=provider_code)
        self.provider_code = provider_code
        self.status = status
        self.retry_after = retry_after

    @property
    def terminal(self) -> bool:
        """True when the credentials themselves were refused (no retry helps)."""
        return self.provider_code in TERMINAL_CODES
