"""Relaying a call to the server process that holds what it asks for.

Several servers serve one set of records (one PostgreSQL database, or one data directory), but some things live in
one process: a rig runs in the server that opened it, with its live state (its control holder, its kept
terminals, its lanes, its forwards). A call reaching another server for such a thing raises ``Elsewhere`` naming
the holder's origin (``Settings.serving_origin``, recorded on the thing's row); the dispatcher then relays the
call there (``relay_op``): one HTTP request to the holder's ``RELAY_PATH`` carrying the caller's own credential,
the op, its arguments as the caller sent them and the door they came through. The holder checks everything again
as for a call of its own (the credential, the role, the arguments, the guardrails), runs it, writes its audit
rows, and answers the reply or the error, which the first server hands on unchanged. A caller therefore gets the
same answer whichever server its socket reached.

Only servers relay: each request carries a relay token (``RelayTokens``) signed with the installation's relay key,
kept with the other secrets (sealed in the database on PostgreSQL, so every server has it), short-lived and bound
to the op. A relayed call is never relayed again, so a row that names the wrong server (it moved, it is stale)
ends in an error, not a loop.

A call made inside a server for a caller it vouches for (an agent it drives, a person the chat bridge acts for:
doors ``agent`` and ``chat``) has no credential to carry: the relaying server vouches for it instead, sending the
caller's ``Principal`` in the body with a relay token bound to the op and to that principal (its digest), so a
token seen on the servers' network cannot be replayed as anyone else. The holder takes the principal as its own
server would from its driver and runs every check on it again (reach, membership, role, guardrails, against its
own reading of the records). Only servers hold the relay key, and any of them could act as anyone through the
records they share, so this grants a server nothing it did not have.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.cookiejar
import json
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pydantic
import websockets

from hangar.core.clock import Clock
from hangar.core.principal import Principal
from hangar.core.secrets import Secrets
from hangar.core.signed_tokens import SignedTokens
from hangar.errors import Elsewhere, Forbidden, HangarError, InvalidArgs, Unavailable, error_from_wire
from hangar.httpkit.tls import client_tls

log = logging.getLogger(__name__)

RELAY_PATH = "/internal/relay/op"
RELAY_HEADER = "x-hangar-relay"
RELAY_KEY = "servers.relayKey"
RELAY_TTL_S = 60
# A relayed call may run as long as the op does (a rig's exec waits for its command); connecting may not.
RELAY_TIMEOUT = httpx.Timeout(None, connect=5.0)
# A relayed watch's frames from the holder: a snapshot or an event, never near this.
MAX_WATCH_FRAME = 16 * 1024 * 1024


# The doors of callers a server vouches for (no credential of their own): relayed with their principal.
VOUCHED_DOORS = frozenset({"agent", "chat"})


@dataclass(frozen=True)
class Relayable:
    """What a call needs to be relayed: the caller's credential, or the principal the server vouches for, and its
    arguments as sent. Kept out of reprs."""

    credential: str = field(repr=False)
    raw_args: dict[str, Any] = field(repr=False)
    relayed: bool = False  # this call was relayed here: it is not relayed again
    # The caller approved this call's ask-first guardrail where it was asked (the approval's audit row is there).
    approved: bool = False
    vouched: Principal | None = field(default=None, repr=False)  # a caller without a credential (``VOUCHED_DOORS``)


_PRINCIPALS = pydantic.TypeAdapter(Principal)


def principal_to_wire(principal: Principal) -> dict[str, Any]:
    wire = dataclasses.asdict(principal)
    wire["tools"] = sorted(principal.tools) if principal.tools is not None else None
    return wire


def principal_of_wire(raw: Any) -> Principal:
    """The principal a relaying server vouched for, read back (its token checked first)."""
    try:
        return _PRINCIPALS.validate_python(raw, strict=False)
    except pydantic.ValidationError:
        raise InvalidArgs("principal: not a principal this server can read", field="principal") from None


def vouched_target(op: str, principal_wire: Any) -> str:
    """What a relay token for a vouched call is bound to: the op and the principal, by digest."""
    canonical = json.dumps(principal_wire, sort_keys=True, separators=(",", ":"), default=str)
    return f"op:{op}:as:{hashlib.sha256(canonical.encode()).hexdigest()}"


class RelayTokens:
    """Tokens one server gives another with a relayed call or lane: ``relay:<what>`` (``op:<name>``,
    ``lane:<rigId>``), valid ``RELAY_TTL_S``."""

    def __init__(self, secrets_file: Secrets, clock: Clock) -> None:
        self._tokens = SignedTokens(
            secrets_file, RELAY_KEY, clock, what="the relay token", expired="the relay token has expired"
        )

    def mint(self, what: str) -> str:
        return self._tokens.mint({"t": f"relay:{what}"}, RELAY_TTL_S)[0]

    def verify(self, token: str | None, what: str) -> None:
        if not token:
            raise Forbidden("this route answers the servers of this installation only")
        fields, _exp = self._tokens.open(token, ("t",))
        if fields["t"] != f"relay:{what}":
            raise Forbidden("this relay token is for something else")


def unreachable(moved: Elsewhere, exc: BaseException) -> Unavailable:
    """What the caller hears when the holder does not answer (its address goes to the log, not the caller)."""
    log.warning("relay: the server at %s does not answer (%s: %s)", moved.origin, type(exc).__name__, exc)
    return Unavailable(
        f"{moved.message}, and that server does not answer ({type(exc).__name__}); if it stopped, "
        "what it ran is closed once its claims lapse"
    )


class OpRelay:
    """The relaying side of calls, one per dispatcher: the relay tokens, and one HTTP client kept for every holder
    (a connection kept alive per holder, instead of one opened per call). ``aclose`` when the server stops."""

    def __init__(self, tokens: RelayTokens) -> None:
        self.tokens = tokens
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # Shared by every caller's calls: it keeps no cookie a holder might set, so nothing of one call rides
            # along with another's.
            jar = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
            self._client = httpx.AsyncClient(verify=client_tls(), timeout=RELAY_TIMEOUT, cookies=jar)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def call(self, moved: Elsewhere, op: str, relayable: Relayable, door: str) -> Any:
        """Run ``op`` on the server ``moved`` names, as the caller: its result in wire form, or its error raised."""
        body: dict[str, Any] = {"op": op, "args": relayable.raw_args, "door": door, "approved": relayable.approved}
        if relayable.vouched is not None:
            body["principal"] = principal_to_wire(relayable.vouched)
            headers = {RELAY_HEADER: self.tokens.mint(vouched_target(op, body["principal"]))}
        else:
            headers = {"authorization": f"Bearer {relayable.credential}", RELAY_HEADER: self.tokens.mint(f"op:{op}")}
        try:
            reply = await self._http().post(moved.origin + RELAY_PATH, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise unreachable(moved, exc) from None
        try:
            answer = reply.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or "ok" not in answer:
            raise Unavailable(f"the server running it answered {op} with HTTP {reply.status_code} and no reply")
        if answer["ok"]:
            return answer.get("result")
        raise _wire_error(answer.get("error"))


async def open_socket(moved: Elsewhere, path: str, headers: Any, max_size: int) -> websockets.ClientConnection:
    """A WebSocket to ``path`` on the server ``moved`` names (``wss`` for an ``https`` origin, its certificate
    checked); ``unreachable`` when it cannot be had."""
    url = "ws" + moved.origin.removeprefix("http") + path
    try:
        return await websockets.connect(
            url,
            additional_headers=headers,
            max_size=max_size,
            open_timeout=RELAY_TIMEOUT.connect,
            ssl=client_tls() if url.startswith("wss:") else None,
        )
    except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
        raise unreachable(moved, exc) from None


async def relay_watch(moved: Elsewhere, op: str, relayable: Relayable) -> AsyncGenerator[Any, None]:
    """Follow the watch ``op`` on the server ``moved`` names, as the caller, over its RPC socket: its first reply,
    then its events, in wire form; its error raised. The socket says it was relayed (``RELAY_HEADER``), so the
    holder never relays it again; the holder checks the caller at every event, as for its own sockets."""
    headers = {"authorization": f"Bearer {relayable.credential}", RELAY_HEADER: "watch"}
    conn = await open_socket(moved, "/rpc", headers, MAX_WATCH_FRAME)
    async with conn:
        await conn.send(json.dumps({"id": 1, "op": op, "args": relayable.raw_args}))
        try:
            async for raw in conn:
                frame = json.loads(raw)
                if not isinstance(frame, dict) or frame.get("id") != 1:
                    continue
                if "event" in frame:
                    event = frame["event"]
                    if isinstance(event, dict) and event.get("type") == "error" and "error" in event:
                        raise _wire_error(event["error"])
                    yield event
                elif frame.get("ok"):
                    yield frame.get("result")
                else:
                    raise _wire_error(frame.get("error"))
        except websockets.ConnectionClosed as exc:
            raise unreachable(moved, exc) from None
    raise unreachable(moved, ConnectionError("the socket closed"))


def _wire_error(error: Any) -> HangarError:
    error = error if isinstance(error, dict) else {}
    return error_from_wire(str(error.get("code", "internal")), str(error.get("message", "")))
