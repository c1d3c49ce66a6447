"""The docs tool server: the official MCP SDK (stateless Streamable HTTP, JSON responses) behind a thin gate.

The SDK speaks the protocol (initialize, ping, tools/list, tools/call, notifications). The gate in front gives
the exact answers the site promises before a body reaches the SDK: 406 without an acceptable ``Accept``, 415
for a body that is not JSON, 413 above 1 MiB, 408 for a body not whole within the house's deadline
(``BODY_TIMEOUT_S``, 30 s), 400 with a JSON-RPC error for unparsable bodies (-32700) and malformed envelopes
(-32600), -32601 for methods this server does not offer, and 202 with an empty body for every notification.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

import hangar
from hangar.httpkit.requests import BodyTooLarge, BodyTooSlow, read_body, replaying
from hangar.site import jsontext
from hangar.site.answers import AnswerCache
from hangar.site.build import SiteBuild
from hangar.site.direct import DirectCalls
from hangar.site.discovery import MCP_SERVER_NAME
from hangar.site.negotiate import choose
from hangar.site.tools import (
    TOOL_SPECS,
    DocsTools,
    GetPageMarkdownArgs,
    ListPagesArgs,
    SearchPagesArgs,
    ToolNotFound,
    describe_error,
    tool_descriptions,
)

MAX_BODY = 1024 * 1024
METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call"})
# The revisions reached through the initialize handshake are the ones served, tested and advertised (the server
# card lists them); a request naming another revision in MCP-Protocol-Version is refused with the list.
PROTOCOL_VERSIONS: list[str] = [*HANDSHAKE_PROTOCOL_VERSIONS]
_ALL_VERSIONS = frozenset(PROTOCOL_VERSIONS)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INSTRUCTIONS = (
    "Read-only access to the Hangar manual. Use search_pages to find pages by words, get_page_markdown to read "
    "one page (slug such as manual/install), list_pages to see every page."
)
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def origin_of(scope: Scope, base_url: str | None) -> str:
    """The origin links are written for: the configured base URL, else the request's own scheme and host."""
    if base_url:
        return base_url
    host = ""
    for k, v in scope.get("headers", ()):
        if k == b"host":
            host = v.decode("latin-1")
            break
    if not _HOST.match(host):
        server = scope.get("server") or ("localhost", None)
        host = server[0] if server[1] in (None, 80, 443) else f"{server[0]}:{server[1]}"
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return f"{scheme}://{host}"


@dataclass(frozen=True)
class Checked:
    """A request the gate let through; ``stand_in`` when the SDK takes it only with a stand-in id."""

    msg: dict[str, Any]
    stand_in: bool


def _rpc_error(code: int, message: str, id_: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}).encode()


async def _send(send: Send, status: int, body: bytes, content_type: bytes | None = b"application/json") -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type:
        headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _restoring_id(send: Send, original: Any) -> Send:
    """Wrap ``send`` so the JSON-RPC response carries ``original`` as its id."""
    start: list[Message] = []

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.append(message)
            return
        if message["type"] == "http.response.body" and start:
            body = message.get("body", b"")
            try:
                doc = json.loads(body) if body else None
            except ValueError:
                doc = None
            if isinstance(doc, dict) and "id" in doc:
                doc["id"] = original
                body = json.dumps(doc).encode()
            head = start.pop()
            headers = [(k, v) for k, v in head.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**head, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped


class DocsToolServer:
    """Owns the SDK server and its session manager; ``asgi`` is mounted at both MCP paths."""

    def __init__(self, site: SiteBuild) -> None:
        self.site = site
        self.tools = DocsTools(site)
        self.descriptions = tool_descriptions()
        self.server: Server[Any] = Server(
            MCP_SERVER_NAME,
            version=hangar.__version__,
            title="Hangar docs",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.answers = AnswerCache()
        self.direct = DirectCalls(self.call_tool)
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            # The site is public and read-only, served under any host name; no session exists to protect.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=MAX_BODY,
        )

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    # -- SDK handlers ------------------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[mt.Tool.model_validate(d) for d in self.descriptions])

    def _origin_of(self, scope: Scope) -> str:
        return origin_of(scope, self.site.base_url)

    def _origin(self, ctx: Any) -> str:
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict):
            return origin_of(scope, self.site.base_url)
        return self.site.base_url or "http://localhost"

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return self.call_tool(params.name, params.arguments or {}, self._origin(ctx))

    def call_tool(self, name: str, arguments: dict[str, Any], origin: str) -> mt.CallToolResult:
        """A tool's result (the SDK's handler and the light path, ``hangar.site.direct``, both call this)."""
        models = {name: model for name, _t, _d, model in TOOL_SPECS}
        model = models.get(name)
        if model is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}; tools: {', '.join(models)}")
        try:
            args = model.model_validate(arguments)
        except ValidationError as exc:
            raise MCPError(INVALID_PARAMS, f"invalid arguments for {name}: {describe_error(exc)}") from exc
        try:
            if isinstance(args, ListPagesArgs):
                result = self.tools.list_pages(args, origin)
            elif isinstance(args, SearchPagesArgs):
                result = self.tools.search_pages(args, origin)
            else:
                assert isinstance(args, GetPageMarkdownArgs)
                text, result = self.tools.get_page_markdown(args, origin)
                return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=result)
        except ToolNotFound as exc:
            return mt.CallToolResult(content=[mt.TextContent(text=str(exc))], is_error=True)
        return mt.CallToolResult(
            content=[mt.TextContent(text=jsontext.dumps(result))],
            structured_content=result,
        )

    # -- the gate ----------------------------------------------------------------------------------------------

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k: v.decode("latin-1") for k, v in scope.get("headers", ())}
        accept = headers.get(b"accept")
        if accept is None or choose(accept, ("application/json", "text/x-unacceptable")) != "application/json":
            await _send(send, 406, _rpc_error(INVALID_REQUEST, "Not Acceptable: Accept must include application/json"))
            return
        ctype = headers.get(b"content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            await _send(send, 415, _rpc_error(INVALID_REQUEST, "Unsupported Media Type: send application/json"))
            return
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version not in _ALL_VERSIONS:
            supported = ", ".join(sorted(_ALL_VERSIONS))
            await _send(send, 400, _rpc_error(INVALID_REQUEST, f"unsupported MCP-Protocol-Version; use {supported}"))
            return
        try:
            body = await read_body(Request(scope, receive), MAX_BODY)  # the house's deadline: 408 when it stalls
        except BodyTooLarge:
            await _send(send, 413, _rpc_error(INVALID_REQUEST, f"request body exceeds {MAX_BODY} bytes"))
            return
        except BodyTooSlow as err:
            await _send(send, 408, _rpc_error(INVALID_REQUEST, err.message))
            return
        except ClientDisconnect:
            return  # nobody left to answer
        verdict = self._check_envelope(body)
        if isinstance(verdict, tuple):
            status, payload = verdict
            await _send(send, status, payload, b"application/json" if payload else None)
            return
        if isinstance(verdict, Checked):
            msg = verdict.msg
            key = self.answers.key_of(msg, version, self._origin_of(scope))
            if key is not None:
                kept = self.answers.answer(key, msg["id"])
                if kept is not None:
                    await _send(send, 200, kept)
                    return
                if not verdict.stand_in:  # with a stand-in the SDK's bytes are rewritten below: not kept
                    send = self.answers.keeping(key, msg["id"], send)
            if msg["method"] == "tools/call" and not verdict.stand_in:
                origin = self._origin_of(scope)
                kind = self.direct.kind_of(msg, version, origin)
                direct = self.direct.answer(kind, msg, version, origin)
                if direct is not None:
                    await _send(send, 200, direct)
                    return
                send = self.direct.checking(kind, msg, version, origin, send)
            if verdict.stand_in:
                # The SDK takes only string or integer ids; a null or fractional id (allowed by the site's
                # contract) travels as a stand-in and is restored in the response.
                original = msg["id"]
                body = json.dumps({**msg, "id": f"hangar-id-{id(msg)}"}).encode()
                send = _restoring_id(send, original)

        await self.manager.handle_request(scope, replaying(body, receive), send)

    def _check_envelope(self, body: bytes) -> tuple[int, bytes] | Checked | None:
        """The status and body to answer; or None for a notification the SDK takes as it is; or the request."""
        try:
            msg = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return 400, _rpc_error(PARSE_ERROR, f"Parse error: body is not JSON ({exc})")
        if isinstance(msg, list):
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: batches are not supported; send one object")
        if not isinstance(msg, dict):
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: the body must be a JSON-RPC object")
        id_ = msg.get("id")
        echo = id_ if _valid_id(id_) else None
        if msg.get("jsonrpc") != "2.0":
            return 400, _rpc_error(INVALID_REQUEST, 'Invalid Request: `jsonrpc` must be "2.0"', echo)
        if "id" in msg and not _valid_id(id_):
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: `id` must be a string, number or null")
        if "method" not in msg:
            if "result" in msg or "error" in msg:
                return 202, b""  # a response to a server request: nothing to answer
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: `method` is required", echo)
        method = msg["method"]
        if not isinstance(method, str) or not method:
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: `method` must be a non-empty string", echo)
        if "params" in msg and not isinstance(msg["params"], dict):
            return 400, _rpc_error(INVALID_REQUEST, "Invalid Request: `params` must be an object", echo)
        if "id" not in msg:
            # A notification never gets a response; only the ones the SDK knows are handed to it.
            return None if method.startswith("notifications/") else (202, b"")
        if method not in METHODS:
            offered = ", ".join(sorted(METHODS))
            return 200, _rpc_error(METHOD_NOT_FOUND, f"Method not found: {method!r}; offered: {offered}", id_)
        params = msg.get("params")
        if method == "tools/call":
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                return 200, _rpc_error(INVALID_PARAMS, "Invalid params: tools/call needs a string `name`", id_)
            if "arguments" in params and not isinstance(params["arguments"], dict):
                return 200, _rpc_error(INVALID_PARAMS, "Invalid params: `arguments` must be an object", id_)
        if method == "initialize" and not isinstance(params, dict):
            return 200, _rpc_error(INVALID_PARAMS, "Invalid params: initialize needs `params`", id_)
        return Checked(msg, stand_in=id_ is None or isinstance(id_, float))
