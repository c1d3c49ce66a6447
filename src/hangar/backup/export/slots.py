"""The cap on workspace transfers (imports and exports) under way at once in this process.

Each holds a scratch folder or a snapshot of a workspace's database and a thread reading or writing it, for as
long as its client takes: past ``workspaceTransfer.maxConcurrent`` (read on every request: an admin may change it
while the server runs) one more is refused at once with 429 and ``Retry-After``, never queued, so no client holds
the server's capacity by opening many."""

from __future__ import annotations

from collections.abc import Callable

from hangar.errors import Refused

RETRY_AFTER_S = 30


class TooManyTransfers(Refused):
    http_status = 429

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this server runs {limit} workspace import(s) or export(s) at once already "
            f"(workspaceTransfer.maxConcurrent); retry in {RETRY_AFTER_S} s",
            detail_code="too_many_transfers",
        )

    def http_headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_S)}


class TransferSlots:
    def __init__(self) -> None:
        self.active = 0

    def take(self, limit: int) -> Callable[[], None]:
        """A slot, or ``TooManyTransfers``; answers its release (safe to call twice)."""
        if self.active >= limit:
            raise TooManyTransfers(limit)
        self.active += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.active -= 1

        return release
