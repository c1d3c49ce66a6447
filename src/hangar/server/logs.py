"""The server's log: what ``hangar serve`` writes to stderr besides its own start lines.

Hangar's parts log through the standard ``logging`` module under ``hangar.*``: a wait for a pack build or a rig's
boot (one line per step), each failed attempt of a chat connection, a refused egress request. Without a handler
Python prints only warnings and up, so ``hangar serve`` gives the ``hangar`` logger one: a line per record, with
its time (UTC), level and logger, from ``$HANGAR_LOG_LEVEL`` up (``debug``, ``info``, ``warning`` or ``error``;
``info`` when unset). Other libraries' loggers keep Python's default (warnings and up).

``--log-format json`` (``$HANGAR_LOG_FORMAT``) writes one JSON object a line instead: ``time``, ``level``,
``logger``, ``message``, ``requestId`` (the request the line was written for, ``hangar.core.requestids``; absent
outside any request), any context fields the call passed (``extra=``) and ``exception`` (its traceback) when there
is one. The text format is the default and does not change.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from hangar.core.requestids import RequestIdFilter

LEVEL_VARIABLE = "HANGAR_LOG_LEVEL"
DEFAULT_LEVEL = "info"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _UtcFormatter(logging.Formatter):
    """Times as the wire writes them: RFC 3339 in UTC with ``Z``, to the millisecond."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


# What every record carries; anything else on a record is a context field its call passed with ``extra=``.
_RECORD_FIELDS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "request_id"}


class JsonFormatter(_UtcFormatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None)
        if rid is not None:
            line["requestId"] = rid
        for key, value in record.__dict__.items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def log_level(value: str | None) -> int:
    """The level ``$HANGAR_LOG_LEVEL`` names; a value it does not know is refused, naming the ones it does."""
    word = (value or DEFAULT_LEVEL).strip().lower()
    if word not in LEVELS:
        raise ValueError(f"{LEVEL_VARIABLE} must be one of {', '.join(LEVELS)}, not {value!r}")
    return LEVELS[word]


def log_formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``--log-format``: ``text`` (the default) or ``json``."""
    return JsonFormatter() if log_format == "json" else _UtcFormatter(FORMAT)


def configure_server_log(log_format: str = "text") -> None:
    """Give the ``hangar`` logger its stderr handler at ``$HANGAR_LOG_LEVEL`` in ``log_format`` (once: a second
    call changes only the level and the format)."""
    logger = logging.getLogger("hangar")
    logger.setLevel(log_level(os.environ.get(LEVEL_VARIABLE)))
    for existing in logger.handlers:
        if getattr(existing, "hangar_server_log", False):
            existing.setFormatter(log_formatter(log_format))
            return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(log_formatter(log_format))
    handler.addFilter(RequestIdFilter())
    handler.hangar_server_log = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
