"""A scripted OpenAI-compatible chat-completions server for tests and the benchmark, on loopback.

It really speaks the protocol: ``POST /v1/chat/completions`` answers with server-sent events
(``data: {chunk}`` lines and ``data: [DONE]``). Replies are scripted per model name as a queue of ``Reply``
values (text, reasoning, tool calls), or misbehaviours: an HTTP error, a stall (to trigger client timeouts), a
body that is not a stream, a non-streamed JSON completion, a redirect. Every request is recorded for assertions.
It listens on ``127.0.0.1`` or on an address and port given, over TLS when given a certificate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.serving import serving


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str
    id: str = ""


@dataclass(frozen=True)
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    chunk_size: int = 4
    status: int = 200
    stall_seconds: float = 0.0
    garbage: str | None = None
    whole_json: bool = False
    delay_between_chunks: float = 0.0
    redirect: str | None = None  # answer 307 to this URL


def text(t: str, **kw: Any) -> Reply:
    return Reply(text=t, **kw)


def call(name: str, arguments: dict[str, Any] | str, **kw: Any) -> Reply:
    return Reply(tool_calls=(ToolCall(name, arguments),), **kw)


@dataclass
class FakeOpenAI:
    scripts: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: Reply(text="done"))
    url: str = ""

    def script(self, model: str, *replies: Reply) -> None:
        self.scripts[model].extend(replies)

    def bodies_for(self, model: str) -> list[dict[str, Any]]:
        return [b for b in self.requests if b.get("model") == model]

    def _chunks(self, reply: Reply, model: str) -> Iterator[dict[str, Any]]:
        base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant"})
        for i in range(0, len(reply.reasoning), reply.chunk_size):
            yield chunk({"reasoning_content": reply.reasoning[i : i + reply.chunk_size]})
        for i in range(0, len(reply.text), reply.chunk_size):
            yield chunk({"content": reply.text[i : i + reply.chunk_size]})
        for n, tc in enumerate(reply.tool_calls):
            args = tc.arguments if isinstance(tc.arguments, str) else json.dumps(tc.arguments)
            first = {"index": n, "id": tc.id or f"call_{n}", "type": "function", "function": {"name": tc.name}}
            yield chunk({"tool_calls": [{**first, "function": {"name": tc.name, "arguments": ""}}]})
            for i in range(0, len(args), 8):
                yield chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i : i + 8]}}]})
        yield chunk({}, "tool_calls" if reply.tool_calls else "stop")

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        model = str(body.get("model"))
        queue = self.scripts.get(model)
        reply = queue.popleft() if queue else self.default
        if reply.stall_seconds:
            await asyncio.sleep(reply.stall_seconds)
        if reply.redirect is not None:
            return RedirectResponse(reply.redirect, status_code=307)
        if reply.status != 200:
            return JSONResponse({"error": {"message": f"scripted failure {reply.status}"}}, status_code=reply.status)
        if reply.garbage is not None:
            return PlainTextResponse(reply.garbage, media_type="text/event-stream")
        if reply.whole_json:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            return JSONResponse({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]})

        async def stream() -> AsyncIterator[bytes]:
            for c in self._chunks(reply, model):
                if reply.delay_between_chunks:
                    await asyncio.sleep(reply.delay_between_chunks)
                yield f"data: {json.dumps(c)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])


@contextlib.asynccontextmanager
async def running_fake_openai(
    fake: FakeOpenAI | None = None, *, host: str = "127.0.0.1", port: int = 0, tls: Path | None = None
) -> AsyncIterator[FakeOpenAI]:
    """Serve a ``FakeOpenAI`` (``fake``, else a new one) on ``host`` at ``port`` (0: an ephemeral one), over TLS
    with the ``cert.pem`` and ``key.pem`` of the folder ``tls`` when given; ``fake.url`` is its ``…/v1`` base URL."""
    fake = fake or FakeOpenAI()
    certs = {"ssl_certfile": str(tls / "cert.pem"), "ssl_keyfile": str(tls / "key.pem")} if tls else {}
    config = uvicorn.Config(fake.app(), host=host, port=port, log_level="warning", lifespan="off", **certs)
    async with serving(config) as bound:
        fake.url = f"{'https' if tls else 'http'}://{host}:{bound}/v1"
        yield fake
