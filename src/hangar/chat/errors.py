"""What a chat provider call can answer when it does not succeed.

The provider's own error code (``invalid_auth``, ``ratelimited``, ``missing_recipient_user_id``...) is kept in
``provider_code`` because the bridge's fallbacks and the connection's states are decided by it; ``message`` is
what a person reads and never carries a token.
"""

from __future__ import annotations

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
