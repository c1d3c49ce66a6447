"""The chat ops: provider descriptors and connection status, connecting and disconnecting, member links and the
roster watch, the guided-setup link. Each call names its workspace (``workspace_id``); audit rows name the
credential fields given, never their values."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import Field

from hangar.chat.apps import INSTALL_STEPS, AppManagement
from hangar.chat.descriptor import CHAT_PROVIDER, DESCRIPTORS, descriptor_for
from hangar.chat.links import RosterFollower
from hangar.chat.results import (
    BotProfileView,
    ChatStatus,
    ConnectReply,
    CreatedApp,
    EditedProfile,
    LinkCode,
    ProviderEntry,
    SetupLink,
    Unlinked,
    UserLinkRoster,
    UserLinkView,
)
from hangar.chat.service import ChatService
from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.errors import Forbidden
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op


def _chat(ctx: OpContext) -> ChatService:
    return ctx.app.service(ChatService)


def _operator(ctx: OpContext) -> bool:
    """Whether the caller may see which server process holds a connection (its host and pid): the workspace's
    admins and the server owner."""
    return ctx.principal.is_server_owner or (ctx.role is not None and ctx.role >= Role.admin)


class ProviderArgs(Args):
    provider: str = CHAT_PROVIDER


class SomeProviderArgs(Args):
    provider: str | None = None  # every provider when absent


@op("chat.providers", kind="read", scope="workspace")
async def chat_providers(ctx: OpContext, args: NoArgs) -> list[ProviderEntry]:
    """The chat providers this server offers, each with its credential fields, capabilities and the
    workspace's connection status: the settings screen renders the connect dialog from it."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    shown = _operator(ctx)
    return [ProviderEntry.of(d, await chat.status(ws, d.provider), show_owner=shown) for d in DESCRIPTORS.values()]


@op("chat.status", kind="read", scope="workspace")
async def chat_status(ctx: OpContext, args: ProviderArgs) -> ChatStatus:
    """The workspace's connection to the provider: ``disconnected``, ``connecting``, ``connected`` or ``error``
    (with the provider's error), and whether replies can stream."""
    chat = _chat(ctx)
    status = await chat.status(await chat.workspace(ctx.ws), descriptor_for(args.provider).provider)
    return ChatStatus.of(status, show_owner=_operator(ctx))


class ConnectArgs(Args):
    provider: str = CHAT_PROVIDER
    credentials: dict[str, Any] = Field(
        description="Values of the descriptor's fields (botToken, appToken, configRefreshToken); an optional "
        "field left empty keeps its stored value"
    )


@op("chat.connect", kind="mutate", scope="workspace", min_role="admin", actions=("secretAccess", "networkEgress"))
async def chat_connect(ctx: OpContext, args: ConnectArgs) -> ConnectReply:
    """Store the provider's credentials for the workspace (write-only) and (re)start its connection."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    status = await chat.connect(ws, descriptor_for(args.provider).provider, args.credentials)
    stored = sorted(chat.credentials(ws, status.provider) or {})
    await ctx.audit("chat.connect", f"chat:{status.provider}", {"fields": stored, "state": status.state})
    return ConnectReply(state=status.state, error=status.error)


@op("chat.disconnect", kind="destructive", scope="workspace", min_role="admin", actions=("secretAccess",))
async def chat_disconnect(ctx: OpContext, args: ProviderArgs) -> ChatStatus:
    """Stop the workspace's connection and delete its stored credentials and unfinished setup."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    provider = descriptor_for(args.provider).provider
    await chat.disconnect(ws, provider)
    await ctx.audit("chat.disconnect", f"chat:{provider}")
    return ChatStatus.of(await chat.status(ws, provider), show_owner=_operator(ctx))


@op("chat.beginUserLink", kind="mutate", scope="workspace", min_role="member", people_only=True)
async def chat_begin_user_link(ctx: OpContext, args: ProviderArgs) -> LinkCode:
    """Mint a one-time code (15 minutes) that links the caller's own chat account: send ``/<command> link <code>``
    from the chat. A new code replaces the caller's previous one. For people only: an agent has no chat account
    to link."""
    provider = descriptor_for(args.provider).provider
    code, expires_at = await _chat(ctx).codes.mint(ctx.ws, provider, ctx.principal.user_id)
    return LinkCode(code=code, expires_at=expires_at)


@op("chat.listUserLinks", kind="read", scope="workspace")
async def chat_list_user_links(ctx: OpContext, args: SomeProviderArgs) -> list[UserLinkView]:
    """The workspace's linked chat members (all providers, or one)."""
    provider = None if args.provider is None else descriptor_for(args.provider).provider
    return [UserLinkView.of(link) for link in await _chat(ctx).user_links.list(ctx.ws, provider)]


class UnlinkArgs(Args):
    provider: str = CHAT_PROVIDER
    user_id: str | None = Field(default=None, description="Whose link to remove; the caller's own when absent")


@op("chat.unlinkUser", kind="mutate", scope="workspace", min_role="member")
async def chat_unlink_user(ctx: OpContext, args: UnlinkArgs) -> Unlinked:
    """Remove a member's chat link: a member their own, an admin anyone's."""
    user_id = args.user_id or ctx.principal.user_id
    if user_id != ctx.principal.user_id and (ctx.role is None or ctx.role < Role.admin):
        raise Forbidden("removing another member's chat link needs the admin role")
    provider = descriptor_for(args.provider).provider
    removed = await _chat(ctx).user_links.unlink(ctx.ws, provider, user_id)
    if removed is not None:
        await ctx.audit("chat.unlinkUser", f"user:{user_id}", {"provider": provider})
    return Unlinked(unlinked=removed is not None)


@op("chat.watchUserLinks", kind="watch", scope="workspace", result=UserLinkRoster, events=UserLinkRoster)
async def chat_watch_user_links(ctx: OpContext, args: SomeProviderArgs) -> AsyncIterator[UserLinkRoster]:
    """The roster of linked chat members, then the whole roster again whenever a link is made or removed (in
    this server or another process sharing its data)."""
    provider = None if args.provider is None else descriptor_for(args.provider).provider
    links = _chat(ctx).user_links
    follower = RosterFollower(ctx.app, ctx.ws)  # before the first answer: no change after it is missed
    try:

        async def roster() -> UserLinkRoster:
            return UserLinkRoster(links=[UserLinkView.of(k) for k in await links.list(ctx.ws, provider)])

        yield await roster()
        async for _ in follower.changes():
            yield await roster()
    finally:
        await follower.aclose()


class SetupLinkArgs(Args):
    provider: str = CHAT_PROVIDER
    app_name: str | None = None
    bot_display_name: str | None = None
    description: str | None = None
    agent_description: str | None = None
    command: str | None = None
    agent_enabled: bool | None = None


@op("chat.setupLink", kind="read", scope="workspace", min_role="admin")
async def chat_setup_link(ctx: OpContext, args: SetupLinkArgs) -> SetupLink:
    """The provider's address that creates the workspace's app from the bot profile (the given fields over the
    defaults; an empty one leaves its value). Reads no secret and contacts nobody."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    edits = args.model_dump(by_alias=True, exclude={"provider"})
    url, profile = chat.setup_link(ws, descriptor_for(args.provider).provider, edits)
    return SetupLink(url=url, profile=BotProfileView.of(profile))


class CreateAppArgs(SetupLinkArgs):
    config_refresh_token: str | None = Field(
        default=None,
        description="The app configuration refresh token (xoxe...), when none is stored yet; write-only",
    )


@op(
    "chat.createApp",
    kind="mutate",
    scope="workspace",
    min_role="admin",
    actions=("secretAccess", "networkEgress"),
)
async def chat_create_app(ctx: OpContext, args: CreateAppArgs) -> CreatedApp:
    """Create the workspace's app from the bot profile through the provider's manifest API; answers the steps
    left (install it, make an app-level token, connect)."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    provider = descriptor_for(args.provider).provider
    edits = args.model_dump(by_alias=True, exclude={"provider", "config_refresh_token"})
    created = await AppManagement(ctx.app).create(ws, provider, edits, args.config_refresh_token)
    await ctx.audit("chat.createApp", f"chat:{provider}", {"appId": created.app_id})
    return CreatedApp(
        app_id=created.app_id,
        install_url=created.install_url,
        remaining_steps=list(INSTALL_STEPS),
        profile=BotProfileView.of(created.profile),
    )


@op("chat.botProfile", kind="read", scope="workspace", min_role="admin", actions=("networkEgress",))
async def chat_bot_profile(ctx: OpContext, args: ProviderArgs) -> BotProfileView:
    """The app's bot profile as the provider has it now (its exported manifest)."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    return BotProfileView.of(await AppManagement(ctx.app).profile(ws, descriptor_for(args.provider).provider))


@op("chat.updateBotProfile", kind="mutate", scope="workspace", min_role="admin", actions=("networkEgress",))
async def chat_update_bot_profile(ctx: OpContext, args: SetupLinkArgs) -> EditedProfile:
    """Edit the app's bot profile (an empty field leaves its value); scopes and events are merged, never
    removed. ``remainingStep`` is present only when the provider wants a reinstall."""
    chat = _chat(ctx)
    ws = await chat.workspace(ctx.ws)
    provider = descriptor_for(args.provider).provider
    edits = args.model_dump(by_alias=True, exclude={"provider"})
    edited = await AppManagement(ctx.app).edit(ws, provider, edits)
    await ctx.audit("chat.updateBotProfile", f"chat:{provider}", {"remainingStep": edited.remaining_step})
    return EditedProfile(profile=BotProfileView.of(edited.profile), remaining_step=edited.remaining_step)


CHAT_OPS: list[OpFunction] = [
    chat_providers,
    chat_status,
    chat_connect,
    chat_disconnect,
    chat_begin_user_link,
    chat_list_user_links,
    chat_unlink_user,
    chat_watch_user_links,
    chat_setup_link,
    chat_create_app,
    chat_bot_profile,
    chat_update_bot_profile,
]
