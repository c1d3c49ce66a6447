"""A connection a test's factory hands the chat part's registry: it dials nothing and remembers what it got."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from hangar.chat.connections import ConnectionState, Failure
from hangar.identity import Workspace


class Recorded:
    def __init__(self, workspace: Workspace, credentials: Mapping[str, str]) -> None:
        self.workspace = workspace
        self.credentials = dict(credentials)
        self.stopped = False
        self.last_error: Failure | None = None
        self.next_retry_at: datetime | None = None

    @property
    def state(self) -> ConnectionState:
        return "connecting"

    @property
    def error(self) -> str | None:
        return None

    @property
    def streaming_available(self) -> bool:
        return True

    async def stop(self) -> None:
        self.stopped = True
