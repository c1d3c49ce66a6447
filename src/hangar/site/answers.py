"""Kept answers of the docs tool server: a repeated ``tools/list`` or ``tools/call`` costs a lookup.

The docs server is stateless (every request stands alone, no session, JSON responses), and handing a request to
the MCP SDK builds a transport, a server session and a task group for it and tears them down again: on this
server that costs as much as the search itself. The site is built once when the process starts and never changes
while it runs, so the answer to one of these two methods depends only on the protocol revision asked for, the
origin links are written for, the method and its parameters. The first request with a given key goes to the SDK,
which shapes the answer for that revision, and its response body is kept; later ones get the same bytes with their
own id.

Only a successful response whose body starts exactly as the SDK writes one for the id it was given is kept (an
error, or a shape this code does not recognise, is simply not kept: the SDK answers every time). Answers are kept
least recently used first out, up to ``CACHE_ENTRIES``, and only for keys up to ``CACHE_KEY_MAX`` bytes.
"""

from __future__ import annotations

import collections
import json
from typing import Any

from pydantic_core import to_json
from starlette.types import Message, Send

CACHE_ENTRIES = 1024
CACHE_KEY_MAX = 4096
KEPT_METHODS = frozenset({"tools/list", "tools/call"})
_HEAD = b'{"jsonrpc":"2.0","id":'


class AnswerCache:
    """Response bodies without their id, by key, at most ``entries`` of them, the least recently used dropped
    first."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self.entries = entries
        self._kept: collections.OrderedDict[str, bytes] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    @staticmethod
    def key_of(msg: dict[str, Any], version: str | None, origin: str) -> str | None:
        """The key of a checked request, or None when it is not one to keep."""
        if msg.get("method") not in KEPT_METHODS or "id" not in msg:
            return None
        key = json.dumps([version or "", origin, msg["method"], msg.get("params") or {}], sort_keys=True)
        return key if len(key) <= CACHE_KEY_MAX else None

    def answer(self, key: str, id_: Any) -> bytes | None:
        """The kept response for ``key`` with ``id_`` as its id, or None."""
        rest = self._kept.get(key)
        if rest is None:
            return None
        self._kept.move_to_end(key)
        return _HEAD + to_json(id_) + rest

    def keeping(self, key: str, id_: Any, send: Send) -> Send:
        """``send``, keeping the response it carries under ``key`` when it is a success for ``id_``."""
        head = _HEAD + to_json(id_) + b","
        status: list[int] = []

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif message["type"] == "http.response.body" and status == [200] and not message.get("more_body"):
                body = message.get("body", b"")
                if body.startswith(head) and body[len(head) :].startswith(b'"result":'):
                    self._put(key, body[len(head) - 1 :])
            await send(message)

        return wrapped

    def _put(self, key: str, rest: bytes) -> None:
        self._kept[key] = rest
        self._kept.move_to_end(key)
        while len(self._kept) > self.entries:
            self._kept.popitem(last=False)
