"""The server's log: what ``hangar serve`` writes to stderr besides its own start lines.

Hangar's parts log through the standard ``logging`` module under ``hangar.*``: a wait for a pack build or a rig's
boot (one line per step), each failed attempt of a chat connection, a refused egress request. Without a handler
Python prints only warnings and up, so ``hangar serve`` gives the ``hangar`` logger one: a line per record, with
its time (UTC), level and logger, from ``$HANGAR_LOG_LEVEL`` up (``debug``, ``info``, ``warning`` or ``error``;
``info`` when unset). Other libraries' loggers keep Python's default (warnings and up).
"""

from __future__ import annotations

import logging
import os
import sys
import time

LEVEL_VARIABLE = "HANGAR_LOG_LEVEL"
DEFAULT_LEVEL = "info"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _UtcFormatter(logging.Formatter):
    """Times as the wire writes them: RFC 3339 in UTC with ``Z``, to the millisecond."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def log_level(value: str | None) -> int:
    """The level ``$HANGAR_LOG_LEVEL`` names; a value it does not know is refused, naming the ones it does."""
    word = (value or DEFAULT_LEVEL).strip().lower()
    if word not in LEVELS:
        raise ValueError(f"{LEVEL_VARIABLE} must be one of {', '.join(LEVELS)}, not {value!r}")
    return LEVELS[word]


def configure_server_log() -> None:
    """Give the ``hangar`` logger its stderr handler at ``$HANGAR_LOG_LEVEL`` (once: a second call changes only
    the level)."""
    logger = logging.getLogger("hangar")
    logger.setLevel(log_level(os.environ.get(LEVEL_VARIABLE)))
    if any(getattr(h, "hangar_server_log", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_UtcFormatter(FORMAT))
    handler.hangar_server_log = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
