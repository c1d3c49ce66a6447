"""The ``openai`` adapter: any OpenAI-compatible chat-completions endpoint (hosted models, vLLM, llama.cpp,
Ollama), streamed over server-sent events, with function tools.

Each turn is one ``POST {baseUrl}/chat/completions`` with ``stream: true``. Text and reasoning deltas are
relayed as they arrive; tool calls are assembled from their deltas (by index), run through the toolbox, and their
results fed back for the next turn. The run ends when the model answers without calling a tool, when
``submit_output`` is accepted, or at the turn limit. A server that is down, slow (no byte within
``timeoutSeconds``) or sends something that is not a chat-completions stream ends the run ``failed`` with a
sentence saying which; the space and the run's history stay as they were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from hangar.agents.adapters.base import Adapter, RunIO, RunRequest, RunResult, ToolResult
from hangar.agents.config import OpenAIAdapter
from hangar.agents.endpoints import EndpointError, ModelEndpoint
from hangar.agents.events import RunOutcome


@dataclass
class _ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _Reply:
    text: str = ""
    reasoning: str = ""
    reasoning_open: bool = False
    calls: dict[int, _ToolCall] = field(default_factory=dict)
    finish_reason: str | None = None
    chunks: int = 0


def _system_prompt(req: RunRequest) -> str:
    parts = [req.agent.system_prompt.strip()] if req.agent.system_prompt.strip() else []
    parts.append(
        f"You are {req.agent.name}, an agent working in a Hangar space: workspace_id {req.workspace_id}, "
        f"space_id {req.space_id} (Hangar's tools take these, and use them when you leave them out)."
    )
    for skill in req.skills:
        parts.append(f"## Skill: {skill.name} ({skill.digest})\n\n{skill.instructions.strip()}")
    if req.output_schema is not None:
        parts.append(
            "When your work is done, call the submit_output tool with the result; it is checked against the "
            "expected schema and you are told what to fix if it does not match."
        )
    return "\n\n".join(parts)


def initial_messages(req: RunRequest) -> list[dict[str, Any]]:
    """System prompt, the space's conversation before this run, then the run's prompt."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": _system_prompt(req)}]
    for m in req.history:
        if m.own:
            msgs.append({"role": "assistant", "content": m.content})
        elif m.author_kind == "agent":
            msgs.append({"role": "user", "content": f"[{m.author_name}] {m.content}"})
        else:
            msgs.append({"role": "user", "content": m.content})
    msgs.append({"role": "user", "content": req.prompt})
    return msgs


class OpenAIChatAdapter(Adapter):
    def __init__(self, config: OpenAIAdapter, endpoint: ModelEndpoint) -> None:
        self._cfg = config
        self._endpoint = endpoint

    async def run(self, request: RunRequest, io: RunIO) -> RunResult:
        try:
            return await self._run(request, io)
        finally:
            await self._endpoint.aclose()

    async def _run(self, request: RunRequest, io: RunIO) -> RunResult:
        messages = initial_messages(request)
        tools = io.toolbox.specs()
        limit = request.max_turns
        for turn in range(1, limit + 1):
            await io.turn_started(turn)
            try:
                reply = await self._stream_turn(request, messages, tools, turn, io)
            except EndpointError as exc:
                await io.turn_finished(turn, RunOutcome.failed, str(exc))
                return RunResult(RunOutcome.failed, str(exc))
            if reply.text.strip():
                await io.reply(turn, reply.text.strip())
            calls = [reply.calls[i] for i in sorted(reply.calls)]
            if not calls:
                await io.turn_finished(turn, RunOutcome.ok)
                return RunResult(RunOutcome.ok)
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in calls
                    ],
                }
            )
            done = False
            for c in calls:
                result = await self._call_tool(turn, c, io)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result.content})
                done = done or result.ends_run
            if done:
                await io.turn_finished(turn, RunOutcome.ok)
                return RunResult(RunOutcome.ok)
            if turn == limit:
                error = f"the agent was still calling tools after {limit} turn(s), the turn limit"
                await io.turn_finished(turn, RunOutcome.turn_limit, error)
                return RunResult(RunOutcome.turn_limit, error)
            await io.turn_finished(turn, RunOutcome.ok)
        raise AssertionError("unreachable: the loop returns at the turn limit")

    async def _call_tool(self, turn: int, call: _ToolCall, io: RunIO) -> ToolResult:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError as exc:
            args, bad = {}, f"the arguments are not valid JSON ({exc}); call the tool again with a JSON object"
        else:
            bad = "" if isinstance(args, dict) else "the arguments must be a JSON object"
            if bad:
                args = {}
        await io.tool_started(turn, call.id, call.name, args)
        result = ToolResult(False, bad) if bad else await io.toolbox.call(call.name, args)
        await io.tool_finished(turn, call.id, call.name, result)
        return result

    async def _stream_turn(
        self, req: RunRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int, io: RunIO
    ) -> _Reply:
        body: dict[str, Any] = {"model": self._cfg.model, "messages": messages, "stream": True}
        if tools:
            body["tools"] = tools
        if self._cfg.temperature is not None:
            body["temperature"] = self._cfg.temperature
        headers = {"Accept": "text/event-stream"}
        if req.api_key:
            headers["Authorization"] = f"Bearer {req.api_key}"
        timeout = httpx.Timeout(self._cfg.timeout_seconds, connect=min(10.0, self._cfg.timeout_seconds))
        reply = _Reply()
        try:
            async with self._endpoint.post("/chat/completions", json=body, headers=headers, limits=timeout) as resp:
                if resp.is_redirect:
                    raise EndpointError(
                        f"the model endpoint answered HTTP {resp.status_code}, a redirect to "
                        f"{resp.headers.get('location', '(nowhere)')[:300]}, which is not followed: set "
                        "adapter.baseUrl to the address it leads to"
                    )
                if resp.status_code >= 400:
                    excerpt = (await resp.aread()).decode(errors="replace").strip()[:300]
                    raise EndpointError(f"the model endpoint answered HTTP {resp.status_code}: {excerpt or '(empty)'}")
                ctype = resp.headers.get("content-type", "")
                if ctype.startswith("application/json"):
                    # Some servers ignore `stream`; a whole completion is accepted as one chunk.
                    await self._absorb(self._parse(await resp.aread()), reply, turn, io, whole=True)
                else:
                    async for line in resp.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        data = line[5:].strip()
                        if data == "[DONE]":
                            break
                        await self._absorb(self._parse(data.encode()), reply, turn, io, whole=False)
        except httpx.ConnectError as exc:
            raise EndpointError(f"the model endpoint {self._cfg.base_url} is unreachable ({exc})") from exc
        except httpx.TimeoutException as exc:
            raise EndpointError(
                f"the model endpoint {self._cfg.base_url} did not answer within {self._cfg.timeout_seconds:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise EndpointError(f"the model endpoint {self._cfg.base_url} broke the connection ({exc})") from exc
        if reply.reasoning_open:
            reply.reasoning_open = False
            await io.reasoning_finished(turn, reply.reasoning)
        if reply.chunks == 0:
            raise EndpointError("the model endpoint sent no chat-completion chunks (is it OpenAI-compatible?)")
        for c in reply.calls.values():
            if not c.name:
                raise EndpointError("the model endpoint sent a tool call without a function name")
            c.id = c.id or f"call_{turn}_{id(c)}"
        return reply

    @staticmethod
    def _parse(raw: bytes) -> dict[str, Any]:
        try:
            chunk = json.loads(raw)
        except ValueError:
            text = raw.decode(errors="replace")[:80]
            raise EndpointError(f"the model endpoint sent something that is not JSON: {text!r}") from None
        if not isinstance(chunk, dict):
            raise EndpointError("the model endpoint sent a chunk that is not a JSON object")
        if "error" in chunk:
            err = chunk["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise EndpointError(f"the model endpoint reported an error: {str(msg)[:300]}")
        return chunk

    async def _absorb(self, chunk: dict[str, Any], reply: _Reply, turn: int, io: RunIO, *, whole: bool) -> None:
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise EndpointError("the model endpoint sent a chunk without a `choices` list")
        reply.chunks += 1
        if not choices:
            return  # usage-only chunks carry no choice
        choice = choices[0]
        if not isinstance(choice, dict):
            raise EndpointError("the model endpoint sent a malformed choice")
        delta = choice.get("message" if whole else "delta") or {}
        if not isinstance(delta, dict):
            raise EndpointError("the model endpoint sent a malformed delta")
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thought, str) and thought:
            if not reply.reasoning_open and not reply.reasoning:
                reply.reasoning_open = True
                await io.reasoning_started(turn)
            reply.reasoning += thought
        content = delta.get("content")
        calls = delta.get("tool_calls")
        if (content or calls) and reply.reasoning_open:
            reply.reasoning_open = False
            await io.reasoning_finished(turn, reply.reasoning)
        if isinstance(content, str) and content:
            reply.text += content
            await io.text_delta(turn, content)
        if isinstance(calls, list):
            for pos, part in enumerate(calls):
                if not isinstance(part, dict):
                    raise EndpointError("the model endpoint sent a malformed tool call")
                index = part.get("index", pos)
                call = reply.calls.setdefault(index if isinstance(index, int) else pos, _ToolCall())
                call.id = part.get("id") or call.id
                fn = part.get("function") or {}
                if isinstance(fn, dict):
                    call.name = fn.get("name") or call.name
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        call.arguments += args
                    elif isinstance(args, dict):
                        call.arguments += json.dumps(args)
        if choice.get("finish_reason"):
            reply.finish_reason = choice["finish_reason"]
