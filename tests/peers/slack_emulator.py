"""A small, real fake of Slack for the chat bridge's tests: its Web API and its Socket Mode WebSocket, on loopback.

Why it exists: the bridge talks to Slack through slack_sdk's real clients, and what must be proven (states,
backoff, rotation, acks and redelivery, rate limits, stream refusals) is the conversation on the wire. There is
no public Slack sandbox that can revoke a token, answer 429 or rotate a socket on cue, so this peer speaks the
same wire: ``/api/<method>`` (GET or POST; arguments merged from the query, a form body and a JSON body; the
token from ``Authorization: Bearer``; errors as HTTP 200 ``{"ok": false, "error": ...}``, rate limits as 429 with
``Retry-After``) and the socket at ``/link?ticket=...`` (a one-use URL from ``apps.connections.open``, ``hello`` on
accept, envelopes out, acks in).

What it covers: ``auth.test``, ``apps.connections.open``, ``users.info``, ``conversations.info``,
``chat.postMessage``/``update``/``postEphemeral``, ``chat.startStream``/``appendStream``/``stopStream`` (per-ts
state, recipient rules for channels, the 12,000-character append limit, refusals on demand),
``assistant.threads.setStatus``/``setTitle``, ``tooling.tokens.rotate`` (one-use refresh tokens),
``apps.manifest.create``/``update``/``export``/``validate``. Test drivers send mentions (with the twin ``message``
event Slack sends too), channel messages, DMs and slash commands, redeliver envelopes, rotate or drop the socket
and refuse dials. Every Web API call is recorded with its arguments (and the test clock's time when one is given).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core.clock import Clock
from tests.support.serving import serving

TEAM_ID = "T0TEAM"
APP_ID = "A0APP"
BOT_USER_ID = "U0BOT"
BOT_ID = "B0BOT"
BOT_TOKEN = "xoxb-test-bot-token"
APP_TOKEN = "xapp-1-test-app-token"
MAX_APPEND = 12_000
CARD_CHUNKS = frozenset({"task_update", "plan_update"})


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str | None
    at: float | None  # the test clock's monotonic time, when the emulator was given one


@dataclass
class Stream:
    channel: str
    thread_ts: str
    ts: str
    state: str = "streaming"  # streaming | stopped | ended (by the provider)
    text: str = ""
    chunks: list[dict[str, Any]] = field(default_factory=list)
    appends: int = 0
    recipient_user_id: str | None = None
    recipient_team_id: str | None = None
    task_display_mode: str | None = None


@dataclass
class Envelope:
    envelope_id: str
    body: dict[str, Any]
    acked: asyncio.Event = field(default_factory=asyncio.Event)
    ack_payload: dict[str, Any] | None = None


@dataclass
class Sent:
    """What a driver sent: the message ts and the envelope ids (a mention's twin second)."""

    ts: str
    envelope_ids: list[str]


class _Failure(Exception):
    def __init__(self, error: str, status: int = 200, **extra: Any) -> None:
        super().__init__(error)
        self.error, self.status, self.extra = error, status, extra


class SlackEmulator:
    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        self.url = ""  # http://127.0.0.1:<port>
        self.calls: list[Call] = []
        self.valid_tokens: set[str] = {BOT_TOKEN, APP_TOKEN}
        self.token_errors: dict[str, dict[str, Any]] = {}
        self.rate_limits: dict[str, list[float]] = {}  # method -> Retry-After values still to answer
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.messages: list[dict[str, Any]] = []
        self.ephemerals: list[dict[str, Any]] = []
        self.streams: dict[str, Stream] = {}
        self.refresh_tokens: set[str] = set()
        self.manifest: dict[str, Any] | None = None
        self.manifest_errors: list[dict[str, str]] | None = None
        # Stream refusals on demand.
        self.refuse_chunks_with: str | None = None  # a call carrying card chunks is refused with this code
        self.refuse_prose_with: str | None = None  # a call carrying markdown text is refused with this code
        self.refuse_streaming_with: str | None = None  # chat.startStream refused (streaming_not_supported...)
        self.end_streams_after_chars: int | None = None  # the provider ends a stream past this much text
        self.end_streams_after_appends: int | None = None
        self.break_stream_calls = 0  # the next N stream calls answer HTTP 500
        # Socket.
        self._tickets: set[str] = set()
        self._refuse_dials = 0
        self.links: list[WebSocket] = []
        self.hellos = 0
        self.envelopes: dict[str, Envelope] = {}
        self._closers: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self.add_user("U0ALICE", "alice", "alice@example.com")
        self.add_channel("C0GENERAL", "general")

    # --- setup helpers ---

    def add_user(self, user_id: str, name: str, email: str | None = None, *, confirmed: bool = True) -> None:
        profile = {"display_name": name, "real_name": name.title(), "email": email}
        self.users[user_id] = {"id": user_id, "name": name, "profile": profile, "is_email_confirmed": confirmed}

    def add_channel(self, channel_id: str, name: str) -> None:
        self.channels[channel_id] = {"id": channel_id, "name": name, "is_im": channel_id.startswith("D")}

    def refuse_token(self, token: str, error: str, **extra: Any) -> None:
        """Every call with ``token`` answers ``error`` (``missing_scope`` takes ``needed=``, ``provided=``)."""
        self.token_errors[token] = {"error": error, **extra}

    def ratelimit(self, method: str, times: int = 1, retry_after: float = 1) -> None:
        self.rate_limits.setdefault(method, []).extend([retry_after] * times)

    def issue_refresh_token(self) -> str:
        token = f"xoxe-1-{secrets.token_hex(8)}"
        self.refresh_tokens.add(token)
        return token

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def _next(self) -> int:
        return next(self._ids)

    def _ts(self) -> str:
        return f"{1_700_000_000 + self._next()}.000100"

    # --- Web API ---

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        args: dict[str, Any] = dict(request.query_params)
        body = await request.body()
        if body:
            if request.headers.get("content-type", "").startswith("application/json"):
                args.update(json.loads(body))
            else:
                args.update(dict(await request.form()))
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ").strip() or str(args.pop("token", "") or "") or None
        self.calls.append(Call(method, args, token, self.clock.monotonic() if self.clock else None))
        waits = self.rate_limits.get(method)
        if waits:
            wait = waits.pop(0)
            headers = {"Retry-After": str(int(wait) if float(wait).is_integer() else wait)}
            return JSONResponse({"ok": False, "error": "ratelimited"}, status_code=429, headers=headers)
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        try:
            if handler is None:
                raise _Failure("unknown_method")
            if method != "tooling.tokens.rotate":
                self._check_token(method, token)
            result: dict[str, Any] = handler(args, token) or {}
        except _Failure as f:
            return JSONResponse({"ok": False, "error": f.error, **f.extra}, status_code=f.status)
        return JSONResponse({"ok": True, **result})

    def _check_token(self, method: str, token: str | None) -> None:
        if not token:
            raise _Failure("not_authed")
        if token in self.token_errors:
            refusal = dict(self.token_errors[token])
            raise _Failure(refusal.pop("error"), **refusal)
        if token not in self.valid_tokens:
            raise _Failure("invalid_auth")
        is_app, is_config = token.startswith("xapp-"), token.startswith("xoxe.")
        if (method == "apps.connections.open") != is_app or method.startswith("apps.manifest.") != is_config:
            raise _Failure("not_allowed_token_type")

    @staticmethod
    def _need(args: dict[str, Any], *names: str) -> None:
        for name in names:
            if not args.get(name):
                raise _Failure("invalid_arguments", response_metadata={"messages": [f"missing {name}"]})

    @staticmethod
    def _json_arg(args: dict[str, Any], name: str) -> Any:
        value = args.get(name)
        return json.loads(value) if isinstance(value, str) else value

    def _m_auth_test(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        return {"team_id": TEAM_ID, "team": "Test", "user_id": BOT_USER_ID, "bot_id": BOT_ID, "app_id": APP_ID}

    def _m_apps_connections_open(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        ticket = secrets.token_urlsafe(12)
        self._tickets.add(ticket)
        return {"url": f"{self.url.replace('http://', 'ws://')}/link?ticket={ticket}"}

    def _m_users_info(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        user = self.users.get(str(args.get("user")))
        if user is None:
            raise _Failure("user_not_found")
        return {"user": user}

    def _m_conversations_info(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        channel = self.channels.get(str(args.get("channel")))
        if channel is None:
            raise _Failure("channel_not_found")
        return {"channel": channel}

    def _m_chat_postMessage(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel")
        if not args.get("text") and not args.get("blocks"):
            raise _Failure("no_text")
        ts = self._ts()
        self.messages.append({**args, "ts": ts, "blocks": self._json_arg(args, "blocks")})
        return {"channel": args["channel"], "ts": ts}

    def _m_chat_update(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel", "ts")
        found = [m for m in self.messages if m["channel"] == args["channel"] and m["ts"] == args["ts"]]
        if not found and args["ts"] not in self.streams:
            raise _Failure("message_not_found")
        for m in found:
            m.update({**args, "blocks": self._json_arg(args, "blocks")})
        if args["ts"] in self.streams:
            self.streams[args["ts"]].text = str(args.get("text") or "")
        return {"channel": args["channel"], "ts": args["ts"]}

    def _m_chat_postEphemeral(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel", "user")
        if args["channel"] not in self.channels:
            raise _Failure("channel_not_found")
        self.ephemerals.append(args)
        return {"message_ts": self._ts()}

    def _stream_gate(self, args: dict[str, Any]) -> None:
        if self.break_stream_calls:
            self.break_stream_calls -= 1
            raise _Failure("internal_error", status=500)
        chunks = self._json_arg(args, "chunks") or []
        if self.refuse_chunks_with and any(c.get("type") in CARD_CHUNKS for c in chunks):
            raise _Failure(self.refuse_chunks_with)
        prose = args.get("markdown_text") or any(c.get("type") == "markdown_text" for c in chunks)
        if self.refuse_prose_with and prose:
            raise _Failure(self.refuse_prose_with)
        if len(str(args.get("markdown_text") or "")) > MAX_APPEND:
            raise _Failure("msg_too_long")

    def _stream_take(self, stream: Stream, args: dict[str, Any]) -> None:
        chunks = self._json_arg(args, "chunks") or []
        stream.chunks.extend(chunks)
        stream.text += str(args.get("markdown_text") or "")
        stream.text += "".join(str(c.get("text") or "") for c in chunks if c.get("type") == "markdown_text")

    def _live_stream(self, args: dict[str, Any]) -> Stream:
        self._need(args, "channel", "ts")
        stream = self.streams.get(str(args["ts"]))
        if stream is None or stream.channel != args["channel"]:
            raise _Failure("message_not_found")
        if stream.state != "streaming":
            raise _Failure("message_not_in_streaming_state")
        return stream

    def _m_chat_startStream(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel", "thread_ts")
        if self.refuse_streaming_with:
            raise _Failure(self.refuse_streaming_with)
        if not str(args["channel"]).startswith("D"):
            if not args.get("recipient_user_id"):
                raise _Failure("missing_recipient_user_id")
            if not args.get("recipient_team_id"):
                raise _Failure("missing_recipient_team_id")
        self._stream_gate(args)
        ts = self._ts()
        stream = Stream(
            channel=str(args["channel"]),
            thread_ts=str(args["thread_ts"]),
            ts=ts,
            recipient_user_id=args.get("recipient_user_id"),
            recipient_team_id=args.get("recipient_team_id"),
            task_display_mode=args.get("task_display_mode"),
        )
        self._stream_take(stream, args)
        self.streams[ts] = stream
        return {"channel": stream.channel, "ts": ts}

    def _m_chat_appendStream(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        stream = self._live_stream(args)
        self._stream_gate(args)
        over_chars = self.end_streams_after_chars is not None and len(stream.text) >= self.end_streams_after_chars
        over_appends = self.end_streams_after_appends is not None and stream.appends >= self.end_streams_after_appends
        if over_chars or over_appends:
            stream.state = "ended"
            raise _Failure("message_not_in_streaming_state")
        stream.appends += 1
        self._stream_take(stream, args)
        return {"channel": stream.channel, "ts": stream.ts}

    def _m_chat_stopStream(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        stream = self._live_stream(args)
        self._stream_gate(args)
        self._stream_take(stream, args)
        stream.state = "stopped"
        return {"channel": stream.channel, "ts": stream.ts}

    def _m_assistant_threads_setStatus(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel_id", "thread_ts")
        return {}

    def _m_assistant_threads_setTitle(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._need(args, "channel_id", "thread_ts", "title")
        return {}

    def _m_tooling_tokens_rotate(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        old = str(args.get("refresh_token") or "")
        if old not in self.refresh_tokens:
            raise _Failure("invalid_refresh_token")
        self.refresh_tokens.discard(old)
        access = f"xoxe.xoxp-1-{secrets.token_hex(8)}"
        self.valid_tokens.add(access)
        return {"token": access, "refresh_token": self.issue_refresh_token(), "team_id": TEAM_ID, "exp": 43200}

    def _checked_manifest(self, args: dict[str, Any]) -> dict[str, Any]:
        self._need(args, "manifest")
        if self.manifest_errors:
            raise _Failure("invalid_manifest", errors=self.manifest_errors)
        manifest = self._json_arg(args, "manifest")
        if not isinstance(manifest, dict):
            raise _Failure("invalid_manifest", errors=[{"message": "not an object", "pointer": "/"}])
        return manifest

    def _m_apps_manifest_create(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self.manifest = self._checked_manifest(args)
        credentials = {"client_id": "1.2", "client_secret": "s", "verification_token": "v", "signing_secret": "g"}
        url = f"https://slack.com/oauth/v2/authorize?client_id=1.2&app_id={APP_ID}"
        return {"app_id": APP_ID, "credentials": credentials, "oauth_authorize_url": url}

    @staticmethod
    def _grants(manifest: dict[str, Any]) -> set[str]:
        scopes = manifest.get("oauth_config", {}).get("scopes", {}).get("bot", [])
        events = manifest.get("settings", {}).get("event_subscriptions", {}).get("bot_events", [])
        return set(scopes) | {f"event:{e}" for e in events}

    def _m_apps_manifest_update(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        if args.get("app_id") != APP_ID or self.manifest is None:
            raise _Failure("invalid_app_id")
        manifest = self._checked_manifest(args)
        grew = not self._grants(manifest) <= self._grants(self.manifest)
        self.manifest = manifest
        return {"app_id": APP_ID, "permissions_updated": grew}

    def _m_apps_manifest_export(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        if args.get("app_id") != APP_ID or self.manifest is None:
            raise _Failure("invalid_app_id")
        return {"manifest": self.manifest}

    def _m_apps_manifest_validate(self, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        self._checked_manifest(args)
        return {}

    # --- Socket Mode ---

    def refuse_connections(self, n: int) -> None:
        """The next ``n`` socket handshakes are refused (HTTP 403)."""
        self._refuse_dials += n

    async def _link(self, ws: WebSocket) -> None:
        ticket = ws.query_params.get("ticket", "")
        if ticket not in self._tickets or self._refuse_dials:
            self._refuse_dials = max(0, self._refuse_dials - 1)
            await ws.close(code=1008)
            return
        self._tickets.discard(ticket)
        await ws.accept()
        self.links.append(ws)
        hello = {
            "type": "hello",
            "num_connections": len(self.links),
            "debug_info": {"host": "emulator", "approximate_connection_time": 18060},
            "connection_info": {"app_id": APP_ID},
        }
        await ws.send_text(json.dumps(hello))
        self.hellos += 1
        try:
            while True:
                ack = json.loads(await ws.receive_text())
                envelope = self.envelopes.get(str(ack.get("envelope_id")))
                if envelope is not None:
                    envelope.ack_payload = ack.get("payload")
                    envelope.acked.set()
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            if ws in self.links:
                self.links.remove(ws)

    async def wait_hellos(self, n: int, timeout: float = 10) -> None:
        """Until ``n`` sockets in all have been greeted (the test's own safety bound, not an assertion)."""
        async with asyncio.timeout(timeout):
            while self.hellos < n:
                await asyncio.sleep(0.01)

    async def _send(self, envelope: Envelope) -> None:
        if not self.links:
            raise AssertionError("no socket is connected")
        await self.links[-1].send_text(json.dumps(envelope.body))

    async def _envelope(self, kind: str, payload: dict[str, Any], *, accepts_payload: bool = False) -> str:
        envelope_id = f"env-{self._next()}"
        body = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": accepts_payload,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        envelope = Envelope(envelope_id, body)
        self.envelopes[envelope_id] = envelope
        await self._send(envelope)
        return envelope_id

    async def _event(self, event: dict[str, Any]) -> str:
        payload = {
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{self._next():08d}",
            "event_time": 1_700_000_000,
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        }
        return await self._envelope("events_api", payload)

    @staticmethod
    def _message_event(channel: str, user: str, text: str, ts: str, thread_ts: str | None) -> dict[str, Any]:
        channel_type = {"D": "im", "G": "group"}.get(channel[:1], "channel")
        event = {"type": "message", "channel": channel, "channel_type": channel_type, "user": user, "text": text}
        event |= {"ts": ts, "event_ts": ts, "team": TEAM_ID}
        return event | ({"thread_ts": thread_ts} if thread_ts else {})

    async def mention(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> Sent:
        """``<@BOT> text`` in a channel: an ``app_mention`` and its twin ``message``, as Slack sends both."""
        ts, full = self._ts(), f"<@{BOT_USER_ID}> {text}"
        message = self._message_event(channel, user, full, ts, thread_ts)
        mention = {k: v for k, v in message.items() if k != "channel_type"} | {"type": "app_mention"}
        return Sent(ts, [await self._event(mention), await self._event(message)])

    async def message(self, channel: str, user: str, text: str, thread_ts: str | None = None, **extra: Any) -> Sent:
        """A channel message (``extra`` adds fields such as ``subtype`` or ``bot_id``)."""
        ts = self._ts()
        return Sent(ts, [await self._event(self._message_event(channel, user, text, ts, thread_ts) | extra)])

    async def dm(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> Sent:
        return await self.message(channel, user, text, thread_ts)

    async def slash(self, command: str, text: str, user: str, channel: str) -> str:
        payload = {
            "command": command,
            "text": text,
            "user_id": user,
            "team_id": TEAM_ID,
            "channel_id": channel,
            "response_url": "https://hooks.slack.com/commands/never-dialled",
            "trigger_id": "1.2.3",
        }
        return await self._envelope("slash_commands", payload, accepts_payload=True)

    async def acked(self, envelope_id: str, timeout: float = 10) -> dict[str, Any] | None:
        """Wait for the ack of ``envelope_id``; its payload (None for an empty ack)."""
        envelope = self.envelopes[envelope_id]
        await asyncio.wait_for(envelope.acked.wait(), timeout)
        return envelope.ack_payload

    async def redeliver(self, envelope_id: str, reason: str = "timeout") -> None:
        """Send an envelope again, as Slack does when it saw no ack in time."""
        envelope = self.envelopes[envelope_id]
        envelope.body["retry_attempt"] = int(envelope.body["retry_attempt"]) + 1
        envelope.body["retry_reason"] = reason
        envelope.acked.clear()
        await self._send(envelope)

    async def redeliver_unacked(self) -> list[str]:
        pending = [e.envelope_id for e in self.envelopes.values() if not e.acked.is_set()]
        for envelope_id in pending:
            await self.redeliver(envelope_id)
        return pending

    async def rotate(self, reason: str = "refresh_requested", grace: float = 0.5) -> None:
        """``disconnect`` with ``reason`` on every socket, each closed after ``grace`` seconds unless gone sooner."""
        links = list(self.links)
        for ws in links:
            message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "emulator"}}
            with contextlib.suppress(Exception):
                await ws.send_text(json.dumps(message))

        async def close_later() -> None:
            await asyncio.sleep(grace)
            for ws in links:
                with contextlib.suppress(Exception):
                    await ws.close()

        task = asyncio.create_task(close_later())
        self._closers.add(task)
        task.add_done_callback(self._closers.discard)

    async def drop(self) -> None:
        """Close every socket without a word (code 1011, no ``disconnect`` first)."""
        for ws in list(self.links):
            with contextlib.suppress(Exception):
                await ws.close(code=1011)

    def app(self) -> Starlette:
        routes = [
            Route("/api/{method}", self._api, methods=["GET", "POST"]),
            WebSocketRoute("/link", self._link),
        ]
        return Starlette(routes=routes)

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"


@contextlib.asynccontextmanager
async def running_slack(
    clock: Clock | None = None, emulator: SlackEmulator | None = None, *, port: int = 0
) -> AsyncIterator[SlackEmulator]:
    """Serve a ``SlackEmulator`` (``emulator``, else a new one on ``clock``) on a loopback port (``port``, else an
    ephemeral one: a test that brings the provider back where a server was told it is passes the port);
    ``api_url`` is its Web API base."""
    fake = emulator or SlackEmulator(clock)
    config = uvicorn.Config(
        fake.app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="websockets-sansio"
    )
    async with serving(config) as bound:
        fake.url = f"http://127.0.0.1:{bound}"
        try:
            yield fake
        finally:
            await fake.drop()
