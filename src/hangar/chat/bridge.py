"""The bridge of one workspace to its chat provider: people's messages in, the agents' replies out.

In (``on_event``, called by the provider's connection for every event it did not drop):

- a mention in a channel opens a thread and a ``chatprovider`` space; a reply in a bridged thread continues that
  space without a mention; any other channel message is ignored; a direct message gets one space per DM;
- the sender is resolved to a workspace member on every event (``UserLinks.resolve_member``; a first try links
  by the provider's verified email); anyone else gets the refusal in the thread and nothing reaches an agent;
- what the member's message amounts to is held to the rules of the ops it amounts to, through the dispatcher's
  own checks (``OpCaller.authorize``) before anything is made: a new conversation is ``spaces.create``, the turn
  ``agents.run`` (``messages.post`` without an agent), in that space; a refusal (a guest's role, read-only mode,
  an ask-first rule, which refuses since nobody can be asked mid-turn) is said in the thread;
- the front-door agent is dispatched with the message as its prompt, stamped ``metadata['chat']``; a mention or
  a DM opens its reply card at once (``Working on it...``), and the run's events drive it
  (``hangar.chat.replies.ReplyStream``); a DM shows an is-thinking status and gets its thread title;
- the slash command is answered ephemerally (``hangar.chat.commands``); its ticket is the ``tickets.create`` op
  called as the linked member (door ``chat``).

Out (bus subscriptions of this workspace): the run events of bridged spaces (also runs started in the product:
their recipient is the member whose link made the bridge), the provisioning narration while a chat request is
in flight (``hangar.chat.narration``), and messages people type in the product, mirrored with their name (the
echo guard: a message carrying ``metadata['chat']`` came from the chat and is never sent back).

One conversation's events are handled in order; one bad event is logged (its id, never its text) and the bridge
goes on. Streamed cards not finished yet are recorded (``chat_open_streams``) so a restarted server finishes them
instead of leaving one that says ``Working on it...`` forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from hangar.agents import Agent, AgentRunner, AgentService, Run, stored_run_events
from hangar.chat import commands
from hangar.chat.answers import answer_run
from hangar.chat.card_records import CardRecords, quietly
from hangar.chat.cards import TurnOutcome
from hangar.chat.deeplink import public_open_url
from hangar.chat.errors import ChatProviderError
from hangar.chat.inbound import InboundEvent, InboundMessage, SlashCommand
from hangar.chat.links import CODE_REFUSAL, LinkedMember, LinkRefusal
from hangar.chat.narration import NarrationState, narrate, still_in_flight
from hangar.chat.outbound import ChatOutbound
from hangar.chat.redacting import RedactingApi
from hangar.chat.replies import ConnectionFlags, ReplyStream, ReplyTarget
from hangar.chat.service import ChatService
from hangar.chat.space_links import SpaceLink
from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.errors import Conflict, HangarError
from hangar.httpkit.ratelimit import TooManyAttempts
from hangar.rpc.op_caller import OpCaller
from hangar.workspace import Author, SpaceService

log = logging.getLogger(__name__)

NO_AGENT = "This workspace has no agent to answer yet: add one in Hangar."
EMPTY_MENTION = "Ask me something after the mention, and a workspace agent will answer here."
THINKING = "is thinking..."
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
CHAT_DOOR = "chat"  # the door the bridge's work for a person goes through (audit rows carry it)

RUN_TYPES = (
    "agents.runStarted",
    "agents.reasoningStarted",
    "agents.reasoningFinished",
    "agents.toolCallStarted",
    "agents.toolCallFinished",
    "agents.textDelta",
    "agents.runFinished",
)
MESSAGE_POSTED = "workspace.messagePosted"
PROVISIONING = "workspace.spaceProvisioningChanged"


class BridgeApi(ChatOutbound, Protocol):
    """The provider calls the bridge makes beyond posting and streaming."""

    async def conversations_info(self, channel: str) -> str: ...

    async def users_info(self, user_id: str) -> Any: ...


@dataclass
class _Turn:
    """One reply card: a chat request (or a run started in the product) and the run that answers it."""

    stream: ReplyStream
    target: ReplyTarget
    request: str
    run_id: str | None = None
    in_flight: bool = True  # a chat request waiting for its turn (narration speaks only then)
    status_set: bool = False
    pending: list[StoredEvent] = field(default_factory=list)
    opening: asyncio.Future[None] | None = None  # the card being opened beside the dispatch
    seen_seq: int = 0  # the last of the run's events the card was driven by (a followed run's are replayed first)

    async def card_open(self) -> None:
        """Wait until the card is open and recorded (finishing it before would leave its record behind)."""
        if self.opening is not None:
            try:
                await self.opening
            except Exception:
                log.exception("chat bridge: opening a reply card failed")
            self.opening = None


def clean_request(text: str) -> str:
    """The message without the bot's mention and surrounding space."""
    return " ".join(_MENTION.sub(" ", text).split())


def chat_stamp(provider: str, ev: InboundMessage, thread_id: str | None, label: str) -> dict[str, str]:
    return {
        "provider": provider,
        "teamId": ev.team_id,
        "channelId": ev.channel_id,
        "threadId": thread_id or "",
        "messageId": ev.ts,
        "userId": ev.user_id,
        "userLabel": label,
    }


class Bridge:
    def __init__(
        self,
        app: AppContext,
        chat: ChatService,
        workspace_id: str,
        provider: str,
        api: BridgeApi,
        flags: ConnectionFlags,
        *,
        renders_cards: bool = True,
        command: str = "hangar",
    ) -> None:
        self._app = app
        self._chat = chat
        self.workspace_id = workspace_id
        self.provider = provider
        # Every text sent out has the workspace's secrets blanked (``hangar.chat.redacting``).
        self._api = cast("BridgeApi", RedactingApi(api, app, workspace_id, provider))
        self.flags = flags
        self._renders_cards = renders_cards
        self._cards = CardRecords(app, chat, workspace_id, provider)
        self._turns: dict[str, _Turn] = {}  # space id -> the latest reply card in progress there
        # run id -> its reply card: a thread may have several turns running at once (a reply sent while the
        # agent still answers the previous one), and each run's events must reach its own card.
        self._runs: dict[str, _Turn] = {}
        # Run events are handled one at a time: the bus delivers them in order, and the events of a run that
        # came before its dispatch answered are replayed under the same lock so nothing overtakes them.
        self._run_lock = asyncio.Lock()
        self._locks: dict[tuple[str, str | None], asyncio.Lock] = {}
        self._subs: list[Subscription] = []
        self._finishing: set[asyncio.Future[None]] = set()
        # The word the app was last invoked with; until then, the bot profile's.
        self._last_command = f"/{command}"

    # -- life --------------------------------------------------------------------------------------------------

    async def start(self) -> None:
        bus = self._app.bus
        name = f"chat:{self.workspace_id}:{self.provider}"
        self._subs = [
            bus.subscribe(self._on_run, name=f"{name}:runs", types=RUN_TYPES, workspace_id=self.workspace_id),
            bus.subscribe(
                self._on_posted, name=f"{name}:mirror", types=[MESSAGE_POSTED], workspace_id=self.workspace_id
            ),
            bus.subscribe(
                self._on_provisioning, name=f"{name}:setup", types=[PROVISIONING], workspace_id=self.workspace_id
            ),
        ]
        await self._cards.finish_left(self._api)

    async def stop(self) -> None:
        for sub in self._subs:
            await self._app.bus.unsubscribe(sub)
        self._subs = []
        # Replies being finished get their last calls; a card still open when the process ends is finished by
        # the next start (its record stays).
        if self._finishing:
            await asyncio.wait(set(self._finishing), timeout=5)

    # -- in ----------------------------------------------------------------------------------------------------

    async def on_event(self, event: InboundEvent) -> str | None:
        self._app.metrics.chat_event(self.provider, "command" if isinstance(event, SlashCommand) else "message")
        try:
            if isinstance(event, SlashCommand):
                return await self._command(event)
            await self._message(event)
        except Exception:
            event_id = event.envelope_id if isinstance(event, SlashCommand) else event.event_id
            log.exception("chat bridge: event %s of workspace %s failed", event_id, self.workspace_id)
        return None

    async def _message(self, ev: InboundMessage) -> None:
        links = self._chat.space_links
        is_dm = ev.kind == "dm"
        anchor = None if is_dm else (ev.thread_ts or ev.ts)
        reply_thread = ev.thread_ts or ev.ts
        # Only a reply in a thread the bot was brought into continues; the rest of a channel is not ours.
        if ev.kind == "message" and ev.thread_ts is None:
            return
        known = await links.find(self.workspace_id, self.provider, ev.channel_id, anchor)
        if ev.kind == "message" and known is None:
            return
        lock = self._locks.setdefault((ev.channel_id, anchor), asyncio.Lock())
        async with lock:
            who = await self._member(ev)
            if isinstance(who, LinkRefusal):
                await self._say(ev.channel_id, reply_thread, self._refusal(who))
                return
            request = clean_request(ev.text)
            if not request:
                await self._say(ev.channel_id, reply_thread, EMPTY_MENTION)
                return
            agent = await self._app.service(AgentService).front_door(self.workspace_id)
            # What the message amounts to is held to the rules of the ops it amounts to, before anything is
            # made: a new conversation opens a space, then the agent runs in it (or the request is posted).
            turn_op = "agents.run" if agent is not None else "messages.post"
            checks: list[tuple[str, str | None]] = (
                [("spaces.create", None), (turn_op, None)] if known is None else [(turn_op, known.cc_space_id)]
            )
            if await self._refused(who, checks, ev.channel_id, reply_thread):
                return
            # The channel's name only titles a new space: a known conversation costs no paced look-up
            # (conversations.info is allowed 50 calls a minute; a busy thread would queue behind it).
            channel_name = None if is_dm or known is not None else await self._channel_name(ev.channel_id)
            link, created = await links.find_or_create(
                self.workspace_id,
                self.provider,
                team_id=ev.team_id,
                channel_id=ev.channel_id,
                thread_id=anchor,
                request=request,
                channel_name=channel_name,
                created_by_user_id=who.user.id,
                created_by=f"user:{who.user.id}",
            )
            # Another process bridged the conversation meanwhile: its space has its own rules.
            if (
                known is None
                and not created
                and await self._refused(who, [(turn_op, link.cc_space_id)], ev.channel_id, reply_thread)
            ):
                return
            await self._ask(ev, who, agent, link, request, anchor, reply_thread, created=created)

    async def _refused(
        self, who: LinkedMember, checks: list[tuple[str, str | None]], channel: str, thread: str
    ) -> bool:
        """Whether one of the ops (name, space) would be refused to the linked person, by the dispatcher's own
        checks (role, read-only mode, ask-first, which refuses: nobody can be asked in the middle of a chat
        turn); the refusal is said in the thread."""
        caller = self._app.service(OpCaller)
        try:
            for op_name, space_id in checks:
                await caller.authorize(who.principal, op_name, self.workspace_id, space_id=space_id, door=CHAT_DOOR)
        except HangarError as exc:
            await self._say(channel, thread, exc.message)
            return True
        return False

    async def _ask(
        self,
        ev: InboundMessage,
        who: LinkedMember,
        agent: Agent | None,
        link: SpaceLink,
        request: str,
        anchor: str | None,
        reply_thread: str,
        *,
        created: bool,
    ) -> None:
        space_id = link.cc_space_id
        author = Author("user", who.user.id, who.user.display_name)
        stamp = {"chat": chat_stamp(self.provider, ev, anchor, who.user.display_name)}
        if agent is None:
            await self._app.service(SpaceService).post(self.workspace_id, space_id, author, request, metadata=stamp)
            await self._say(ev.channel_id, reply_thread, NO_AGENT)
            return
        is_dm = ev.kind == "dm"
        target = ReplyTarget(ev.channel_id, reply_thread, ev.user_id, ev.team_id, is_dm=is_dm)
        turn = _Turn(self._stream(target, request, space_id), target, request)
        self._turns[space_id] = turn
        # The card (and a DM's title and status) opens beside the dispatch, not before it: these calls are paced
        # per method (chat.startStream 100 a minute), and a busy workspace's prompts must not queue behind them.
        turn.opening = asyncio.ensure_future(self._acknowledge(ev, turn, reply_thread, created=created))
        spaces = self._app.service(SpaceService)
        runner = self._app.service(AgentRunner)
        run_id = await answer_run(runner, self.workspace_id, self.provider, ev.event_id)
        if created:  # the conversation's space is new: its setup is the agent joining it
            await spaces.set_provisioning(self.workspace_id, space_id, "provisioning", step="agent", detail=agent.name)
        try:
            run = await runner.dispatch(
                self.workspace_id,
                agent_id=agent.id,
                space_id=space_id,
                prompt=request,
                dispatched_by=f"user:{who.user.id}",
                prompt_author=author,
                prompt_metadata=stamp,
                run_ids=[run_id] if run_id else None,
            )
        except HangarError as exc:
            # An earlier handling of the message dispatched its run (and died, or is slow): answer with that run.
            found = await runner.store.find(self.workspace_id, run_id) if isinstance(exc, Conflict) and run_id else None
            if found is not None:
                await self._follow(turn, found)
                return
            self._turns.pop(space_id, None)
            if created:
                await spaces.set_provisioning(self.workspace_id, space_id, "failed", error=exc.message)
            await turn.card_open()
            await turn.stream.finish(TurnOutcome.failed)
            await self._cards.forget(space_id, turn.stream.opened)
            await self._say(ev.channel_id, reply_thread, exc.message)
            return
        if created:
            await spaces.set_provisioning(self.workspace_id, space_id, "ready")
        async with self._run_lock:
            turn.run_id = run.id
            self._runs[run.id] = turn
            # Events that arrived before the dispatch answered: this run's, or another run's in the same space.
            pending, turn.pending = turn.pending, []
            for stored in pending:
                await self._run_event(stored)

    async def _follow(self, turn: _Turn, run: Run) -> None:
        """Answer with a run an earlier handling of the same message dispatched: its stored events drive the card
        from the start, then its live ones (each once: by its sequence number)."""
        async with self._run_lock:
            turn.run_id = run.id
            self._runs[run.id] = turn
            store = self._app.service(AgentRunner).store
            for stored in await stored_run_events(self._app, store, self.workspace_id, run.id):
                await self._drive(turn, stored)
            pending, turn.pending = turn.pending, []
            for stored in pending:
                await self._run_event(stored)

    async def _acknowledge(self, ev: InboundMessage, turn: _Turn, reply_thread: str, *, created: bool) -> None:
        """The request is accepted: a DM gets its title and the is-thinking status, the card opens."""
        if ev.kind == "dm":
            if created:
                await self._quietly(self._api.set_thread_title(channel=ev.channel_id, thread_ts=reply_thread,
                                                               title=turn.request[:255]))  # fmt: skip
            await self._quietly(
                self._api.set_thread_status(channel=ev.channel_id, thread_ts=reply_thread, status=THINKING)
            )
            turn.status_set = True
        await turn.stream.open()  # the opened message is recorded by the stream's on_open

    async def _member(self, ev: InboundMessage) -> LinkedMember | LinkRefusal:
        links = self._chat.user_links
        found = await links.resolve_member(self.workspace_id, self.provider, ev.team_id, ev.user_id)
        if isinstance(found, LinkRefusal) and found.reason == "notLinked":
            # A first message from someone unknown: the provider's verified email may name a member.
            with contextlib.suppress(ChatProviderError):
                profile = await self._api.users_info(ev.user_id)
                email = getattr(profile, "email", None)
                if email and await links.link_by_email(self.workspace_id, self.provider, ev.team_id, ev.user_id, email):
                    found = await links.resolve_member(self.workspace_id, self.provider, ev.team_id, ev.user_id)
        return found

    def _refusal(self, refusal: LinkRefusal) -> str:
        if refusal.reason == "notLinked":
            return (
                f"{refusal.message} Get a link code in Hangar (workspace settings, Chat bridge) and send "
                f"`{self._last_command} link <code>`."
            )
        return refusal.message

    async def _channel_name(self, channel: str) -> str | None:
        try:
            return await self._api.conversations_info(channel)
        except ChatProviderError:
            return channel

    # -- the slash command -------------------------------------------------------------------------------------

    async def _command(self, cmd: SlashCommand) -> str | None:
        self._last_command = cmd.command or self._last_command
        parsed = commands.parse(cmd.text)
        if parsed.verb == "help":
            return commands.help_text(self._last_command)
        if parsed.verb == "unknown":
            return commands.unknown_text(self._last_command, parsed.word)
        if parsed.verb == "link":
            try:
                linked = await self._chat.user_links.link_by_code(
                    self.workspace_id, self.provider, cmd.team_id, cmd.user_id, parsed.argument
                )
            except TooManyAttempts as exc:
                return f"Too many wrong link codes from your chat account: try again in {exc.retry} seconds."
            return CODE_REFUSAL if linked is None else "Linked: your chat account now acts as you in Hangar."
        who = await self._chat.user_links.resolve_member(self.workspace_id, self.provider, cmd.team_id, cmd.user_id)
        if isinstance(who, LinkRefusal):
            # Refusals are posted where the person can see them, not only ephemerally.
            await self._say(cmd.channel_id, None, self._refusal(who))
            return None
        title, description = commands.ticket_parts(parsed.argument)
        if not title:
            return f"Give the ticket a title: `{self._last_command} ticket <title> | <description>`."
        args = {"workspace_id": self.workspace_id, "title": title, "description": description}
        try:  # the op itself, as the linked person: its role, the guardrails, its audit row (door ``chat``)
            ticket = await self._app.service(OpCaller).call(who.principal, "tickets.create", args, door=CHAT_DOOR)
        except HangarError as exc:
            return exc.message
        link = public_open_url(self._app.settings, self.workspace_id, "tickets", str(ticket["id"]))
        return f"Filed ticket {ticket['title']!r}" + (f": {link}" if link else ".")

    # -- out: run events ---------------------------------------------------------------------------------------

    async def _on_run(self, stored: StoredEvent) -> None:
        try:
            async with self._run_lock:
                await self._run_event(stored)
        except Exception:
            log.exception("chat bridge: run event %s of workspace %s failed", stored.seq, self.workspace_id)

    async def _run_event(self, stored: StoredEvent) -> None:
        p = stored.payload
        space_id, run_id = str(p.get("spaceId", "")), str(p.get("runId", ""))
        turn = self._runs.get(run_id)
        if turn is None:
            waiting = self._turns.get(space_id)
            if waiting is not None and waiting.run_id is None:
                # A chat request is being dispatched here: whose run this is, its answer will tell.
                if stored.type == "agents.runStarted" or waiting.pending:
                    waiting.pending.append(stored)
                return
            if stored.type != "agents.runStarted":
                return
            turn = await self._product_turn(space_id)
            if turn is None:
                return
            turn.run_id = run_id
            self._runs[run_id] = turn
        await self._drive(turn, stored)

    async def _drive(self, turn: _Turn, stored: StoredEvent) -> None:
        p = stored.payload
        if str(p.get("runId")) != turn.run_id or stored.seq <= turn.seen_seq:
            return
        turn.seen_seq = stored.seq
        stream = turn.stream
        kind = stored.type
        if kind == "agents.runStarted":
            turn.in_flight = False
        elif kind == "agents.reasoningStarted":
            turn.in_flight = False
            stream.on_reasoning_started()
        elif kind == "agents.reasoningFinished":
            stream.on_reasoning_finished(str(p.get("text", "")))
        elif kind == "agents.toolCallStarted":
            stream.on_tool_started(str(p["callId"]), str(p["name"]), dict(p.get("arguments") or {}))
        elif kind == "agents.toolCallFinished":
            stream.on_tool_finished(str(p["callId"]), ok=bool(p.get("ok")))
        elif kind == "agents.textDelta":
            stream.on_text(str(p.get("text", "")))
        elif kind == "agents.runFinished":
            space_id = str(p["spaceId"])
            self._runs.pop(str(p["runId"]), None)
            if self._turns.get(space_id) is turn:
                del self._turns[space_id]
            # Finished beside the run events, not under their lock: the card's last calls are paced by the
            # provider, and every other conversation's events would queue behind them.
            finishing = asyncio.ensure_future(
                self._finish_turn(turn, space_id, TurnOutcome(str(p.get("outcome", "failed"))))
            )
            self._finishing.add(finishing)
            finishing.add_done_callback(self._finishing.discard)

    async def _finish_turn(self, turn: _Turn, space_id: str, outcome: TurnOutcome) -> None:
        try:
            await turn.card_open()
            await turn.stream.finish(outcome)
            await self._cards.forget(space_id, turn.stream.opened)
            if turn.status_set:
                await self._quietly(
                    self._api.set_thread_status(
                        channel=turn.target.channel, thread_ts=turn.target.thread_ts or "", status=""
                    )
                )
        except Exception:
            log.exception("chat bridge: finishing the reply in space %s failed", space_id)

    async def _product_turn(self, space_id: str) -> _Turn | None:
        """A run started in the product on a bridged space: its reply goes to the conversation, streamed to the
        member whose link made the bridge (posted whole when they have unlinked since)."""
        link = await self._chat.space_links.for_space(self.workspace_id, space_id)
        if link is None or link.provider != self.provider:
            return None
        recipient = None
        if link.created_by_user_id is not None:
            recipient = await self._chat.user_links.find_by_user(
                self.workspace_id, self.provider, link.created_by_user_id
            )
        is_dm = link.external_thread_id is None
        thread = link.external_thread_id
        target = ReplyTarget(
            link.external_channel_id,
            thread,
            recipient.external_user_id if recipient else None,
            recipient.external_team_id if recipient else None,
            is_dm=is_dm,
        )
        space = await self._app.service(SpaceService).get(self.workspace_id, space_id)
        turn = _Turn(self._stream(target, space.title, space_id), target, space.title, in_flight=False)
        self._turns[space_id] = turn
        return turn

    def _stream(self, target: ReplyTarget, request: str, space_id: str) -> ReplyStream:
        return ReplyStream(
            self._api,
            target,
            request=request,
            flags=self.flags,
            clock=self._app.clock,
            renders_cards=self._renders_cards,
            link=public_open_url(self._app.settings, self.workspace_id, "spaces", space_id),
            on_open=lambda ts: self._cards.remember(space_id, target.channel, ts, request),
        )

    # -- out: narration ----------------------------------------------------------------------------------------

    async def _on_provisioning(self, stored: StoredEvent) -> None:
        p = stored.payload
        turn = self._turns.get(str(p.get("spaceId", "")))
        if turn is None:
            return
        state = str(p.get("state", ""))
        situation = NarrationState(
            renders_cards=self._renders_cards and self.flags.cards_available,
            streaming_available=self.flags.streaming_available,
            request_in_flight=turn.in_flight,
            turn_card_open=not turn.in_flight,
            card_open=not turn.stream.card.finished,
        )
        text = narrate(
            situation,
            state,
            step=p.get("step"),
            detail=p.get("detail"),
            link=public_open_url(self._app.settings, self.workspace_id, "spaces", str(p["spaceId"])),
        )
        if text is not None:
            turn.stream.set_setup(text)
        turn.in_flight = still_in_flight(turn.in_flight, provisioning_state=state)

    # -- out: mirroring ----------------------------------------------------------------------------------------

    async def _on_posted(self, stored: StoredEvent) -> None:
        try:
            await self._mirror(stored.payload)
        except Exception:
            log.exception("chat bridge: mirroring event %s of workspace %s failed", stored.seq, self.workspace_id)

    async def _mirror(self, payload: Mapping[str, Any]) -> None:
        message = payload.get("message") or {}
        metadata = message.get("metadata") or {}
        author = message.get("author") or {}
        # Echo guard: what came from the chat is not sent back; agents' words travel in their reply cards.
        if "chat" in metadata or author.get("kind") != "user":
            return
        link = await self._chat.space_links.for_space(self.workspace_id, str(payload.get("spaceId", "")))
        if link is None or link.provider != self.provider:
            return
        text = f"*{author.get('name') or 'Someone'}*: {message.get('content', '')}"
        await self._say(link.external_channel_id, link.external_thread_id, text)

    # -- helpers -----------------------------------------------------------------------------------------------

    async def _say(self, channel: str, thread_ts: str | None, text: str) -> None:
        await self._quietly(self._api.post_message(channel=channel, text=text, thread_ts=thread_ts))

    async def _quietly(self, call: Any) -> Any:
        return await quietly(self._app, self.provider, call)
