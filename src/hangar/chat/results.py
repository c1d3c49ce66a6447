"""What the chat ops answer. No result carries a token: credentials travel in only."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from pydantic import Field

from hangar.chat.descriptor import ProviderDescriptor
from hangar.chat.links import UserLink
from hangar.chat.profile import BotProfile
from hangar.chat.service import ConnectionStatus
from hangar.core.types import Timestamp
from hangar.rpc.registry import Result, omitted_when_none

State = Literal["disconnected", "connecting", "connected", "error"]


class CredentialFieldView(Result):
    id: str
    label: str
    required: bool
    prefix: str
    purpose: str
    refusal: str = Field(description="The sentence a value with the wrong prefix is refused with, client and server")


class CapabilitiesView(Result):
    streaming: bool
    streaming_requires_thread: bool
    ephemeral_messages: bool
    thread_status: bool
    thread_title: bool
    slash_commands: bool
    task_cards: bool
    max_message_length: int
    max_stream_chunk_length: int


class ChatFailure(Result):
    """A failed attempt to reach the provider: what the network or the provider said (never a token), and when."""

    message: str
    at: Timestamp


class ChatOwner(Result):
    """The server process holding the connection (its claim in the database)."""

    host: str
    pid: int


class ChatStatus(Result):
    provider: str
    state: State
    error: str | None = omitted_when_none()
    streaming_available: bool
    last_error: ChatFailure | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The last failure since the connection was last up (kept across a restart until the new "
        "process's first attempt answers); absent while it is up or never failed",
    )
    next_retry_at: Timestamp | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="When the next attempt is due; absent while one is under way, when connected, or in error",
    )
    owner: ChatOwner | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The server process holding the connection, whichever server answers; absent while none "
        "holds it, and to callers other than the workspace's admins and the server owner (a host name and a "
        "process id are the operators' business). Its state is as of the holder's last renewal when another "
        "server answers",
    )

    @classmethod
    def of(cls, status: ConnectionStatus, *, show_owner: bool) -> ChatStatus:
        """``status`` as a caller sees it; ``show_owner``: the caller administers the workspace or the server."""
        failure = status.last_error
        return cls(
            provider=status.provider,
            state=status.state,
            error=status.error,
            streaming_available=status.streaming_available,
            last_error=None if failure is None else ChatFailure(message=failure.message, at=failure.at),
            next_retry_at=status.next_retry_at,
            owner=None
            if status.owner is None or not show_owner
            else ChatOwner(host=status.owner.host, pid=status.owner.pid),
        )


class ProviderEntry(Result):
    provider: str
    label: str
    transport: str
    space_kind: str
    fields: list[CredentialFieldView]
    capabilities: CapabilitiesView
    bot_scopes: list[str]
    bot_events: list[str]
    default_command: str
    status: ChatStatus | None = omitted_when_none()

    @classmethod
    def of(cls, d: ProviderDescriptor, status: ConnectionStatus | None, *, show_owner: bool) -> ProviderEntry:
        return cls(
            provider=d.provider,
            label=d.label,
            transport=d.transport,
            space_kind=d.space_kind,
            fields=[CredentialFieldView(**asdict(f), refusal=f.refusal) for f in d.fields],
            capabilities=CapabilitiesView(**asdict(d.capabilities)),
            bot_scopes=list(d.bot_scopes),
            bot_events=list(d.bot_events),
            default_command=d.default_command,
            status=None if status is None else ChatStatus.of(status, show_owner=show_owner),
        )


class ConnectReply(Result):
    state: State
    error: str | None = omitted_when_none()


class LinkCode(Result):
    code: str
    expires_at: Timestamp


class UserLinkView(Result):
    provider: str
    external_user_id: str
    external_team_id: str
    user_id: str
    method: str
    linked_at: Timestamp

    @classmethod
    def of(cls, link: UserLink) -> UserLinkView:
        return cls(
            provider=link.provider,
            external_user_id=link.external_user_id,
            external_team_id=link.external_team_id,
            user_id=link.user_id,
            method=link.method,
            linked_at=link.linked_at,
        )


class UserLinkRoster(Result):
    """``chat.watchUserLinks``: the roster, first as the reply, then again as each event after a change."""

    links: list[UserLinkView]


class Unlinked(Result):
    unlinked: bool


class BotProfileView(Result):
    app_name: str
    bot_display_name: str
    description: str
    agent_description: str
    command: str
    agent_enabled: bool

    @classmethod
    def of(cls, profile: BotProfile) -> BotProfileView:
        return cls(**asdict(profile))


class SetupLink(Result):
    url: str
    profile: BotProfileView


class CreatedApp(Result):
    app_id: str
    install_url: str | None = Field(description="The provider's page that installs the new app to the team")
    remaining_steps: list[str]
    profile: BotProfileView


class EditedProfile(Result):
    profile: BotProfileView
    remaining_step: str | None = Field(
        default=None, description="Present only when a step is left (``reinstall``); absent: the edit is live"
    )
