"""The chat provider's descriptor: what the connect dialog asks for, what the provider can do, what its app needs.

The web client renders the connect dialog from the descriptor (``chat.providers``) and checks prefixes with the
sentence the descriptor ships, so a refused prefix reads the same in the browser and in the server's error. The
server checks every submission again (``validate_credentials``): the client's check is a courtesy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hangar.errors import InvalidArgs

CHAT_PROVIDER = "chatprovider"
PRODUCT_NAME = "Hangar"
DEFAULT_COMMAND = "hangar"


@dataclass(frozen=True)
class CredentialField:
    id: str
    label: str
    required: bool
    prefix: str
    purpose: str

    @property
    def refusal(self) -> str:
        """The one sentence a value with the wrong prefix is refused with, on the client and on the server."""
        return f"{self.label} must start with {self.prefix}"


@dataclass(frozen=True)
class Capabilities:
    streaming: bool
    streaming_requires_thread: bool
    ephemeral_messages: bool
    thread_status: bool
    thread_title: bool
    slash_commands: bool
    task_cards: bool
    max_message_length: int
    max_stream_chunk_length: int


@dataclass(frozen=True)
class ProviderDescriptor:
    provider: str  # the wire value
    label: str  # how people name it ("Slack")
    transport: str
    space_kind: str
    fields: tuple[CredentialField, ...]
    capabilities: Capabilities
    bot_scopes: tuple[str, ...]
    bot_events: tuple[str, ...]
    default_command: str

    def field(self, field_id: str) -> CredentialField | None:
        return next((f for f in self.fields if f.id == field_id), None)


SLACK = ProviderDescriptor(
    provider=CHAT_PROVIDER,
    label="Slack",
    transport="socketMode",
    space_kind=CHAT_PROVIDER,
    fields=(
        CredentialField("botToken", "Bot user OAuth token", True, "xoxb-", "Bot API access"),
        CredentialField(
            "appToken",
            "App-level token",
            True,
            "xapp-",
            "Socket transport; needs the scope connections:write",
        ),
        CredentialField(
            "configRefreshToken",
            "App configuration refresh token",
            False,
            "xoxe",
            "App management: without it the connection works but the bot cannot be created or edited from "
            "Hangar; it rotates on every use and the new value is stored at once",
        ),
    ),
    capabilities=Capabilities(
        streaming=True,
        streaming_requires_thread=True,
        ephemeral_messages=True,
        thread_status=True,
        thread_title=True,
        slash_commands=True,
        task_cards=True,
        max_message_length=39_000,
        max_stream_chunk_length=3_800,
    ),
    bot_scopes=(
        "app_mentions:read",
        "assistant:write",
        "channels:history",
        "chat:write",
        "commands",
        "groups:history",
        "im:history",
        "users:read",
        "users:read.email",
    ),
    bot_events=("app_home_opened", "app_mention", "message.channels", "message.groups", "message.im"),
    default_command=DEFAULT_COMMAND,
)

# One provider today; schemas, lookups and files are keyed by the wire value so a second one is an entry here.
DESCRIPTORS: dict[str, ProviderDescriptor] = {SLACK.provider: SLACK}


def descriptor_for(provider: str, field: str = "provider") -> ProviderDescriptor:
    found = DESCRIPTORS.get(provider)
    if found is None:
        raise InvalidArgs(f"{field} must be one of {', '.join(DESCRIPTORS)}, not {provider!r}", field=field)
    return found


def validate_credentials(
    descriptor: ProviderDescriptor, raw: Mapping[str, Any], stored: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The credentials to store from a submission: values trimmed, undeclared keys dropped, prefixes checked,
    required fields present; an optional field left empty keeps its stored value. Error messages name the field
    and never echo a value."""
    stored = stored or {}
    result: dict[str, str] = {}
    for f in descriptor.fields:
        value = raw.get(f.id)
        if value is not None and not isinstance(value, str):
            raise InvalidArgs(f"{f.label} must be text", field=f"credentials.{f.id}")
        text = (value or "").strip()
        if not text:
            if f.required:
                raise InvalidArgs(f"{f.label} is required", field=f"credentials.{f.id}")
            if stored.get(f.id):
                result[f.id] = stored[f.id]
            continue
        if not text.startswith(f.prefix):
            raise InvalidArgs(f.refusal, field=f"credentials.{f.id}")
        result[f.id] = text
    return result
