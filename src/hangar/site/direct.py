"""A light path for the docs tool server's ``tools/call``: the tool runs and its answer is written without the SDK's
per-request transport (a session, streams and a task group built and torn down for each stateless request), but
only in the exact form the SDK itself writes.

How that form is kept: the first call of a kind (protocol revision asked for, origin links are written for, tool)
goes to the SDK as before, and its response body is compared with what this path would have written for the same
request. Only when the two are byte for byte the same is that kind *proven*, and later calls of it take this path;
when they differ (a revision whose shape this path does not know), the kind stays with the SDK for good. Errors
(an unknown tool, invalid arguments) always go to the SDK, which words them. Kinds are remembered up to
``KINDS_MAX`` (the origin comes from the Host header, which anyone can send); past that a new kind goes to the SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as mt
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from pydantic_core import to_json
from starlette.types import Message, Send

KINDS_MAX = 256
# The revision the SDK answers in when a request names none (a stateless request skips the handshake).
UNNAMED_REVISION = "2025-03-26"
_HEAD = b'{"jsonrpc":"2.0","id":'

# (tool name, arguments, origin) -> the tool's result; raises MCPError for what the SDK must answer.
ToolCall = Callable[[str, dict[str, Any], str], mt.CallToolResult]
Kind = tuple[str, str, str]


def render(result: mt.CallToolResult, id_: Any, revision: str | None) -> bytes:
    """The response body for ``result`` as the SDK shapes a ``tools/call`` result for ``revision``."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    shaped = serialize_server_result("tools/call", revision or UNNAMED_REVISION, dumped)
    return _HEAD + to_json(id_) + b',"result":' + to_json(shaped) + b"}"


class DirectCalls:
    def __init__(self, call: ToolCall) -> None:
        self._call = call
        self._proven: dict[Kind, bool] = {}

    @staticmethod
    def kind_of(msg: dict[str, Any], revision: str | None, origin: str) -> Kind:
        return (revision or "", origin, str(msg["params"]["name"]))

    def answer(self, kind: Kind, msg: dict[str, Any], revision: str | None, origin: str) -> bytes | None:
        """The response body for a proven kind, or None: the SDK answers (not proven, or an error to word)."""
        if self._proven.get(kind) is not True:
            return None
        params = msg["params"]
        try:
            result = self._call(params["name"], params.get("arguments") or {}, origin)
        except MCPError:
            return None
        return render(result, msg["id"], revision)

    def checking(self, kind: Kind, msg: dict[str, Any], revision: str | None, origin: str, send: Send) -> Send:
        """``send``, comparing the SDK's answer it carries with this path's for the same request (first of a kind
        only)."""
        if kind in self._proven or len(self._proven) >= KINDS_MAX:
            return send
        status: list[int] = []

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif message["type"] == "http.response.body" and status == [200] and not message.get("more_body"):
                self._judge(kind, msg, revision, origin, message.get("body", b""))
            await send(message)

        return wrapped

    def _judge(self, kind: Kind, msg: dict[str, Any], revision: str | None, origin: str, sdk_body: bytes) -> None:
        if not sdk_body.startswith(_HEAD) or b'"result":' not in sdk_body:
            return  # an error: judge the kind on a success
        params = msg["params"]
        try:
            ours = render(self._call(params["name"], params.get("arguments") or {}, origin), msg["id"], revision)
        except (MCPError, ValueError, KeyError):
            ours = b""
        self._proven[kind] = ours == sdk_body
