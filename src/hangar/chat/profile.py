"""The bot's profile (name, description, slash command...) and the provider app manifest built from it.

Whenever Hangar creates or edits the app it asserts the manifest the bridge needs, whatever the app had before:
socket mode on and no request URL anywhere (events arrive on the socket Hangar dials out, nothing dials in), the
Messages tab enabled and writable (DMs with the bot), the bot always online, the required scopes and events merged
into the app's own (never subtracted: an admin's additions stay), and exactly one slash command carrying
``COMMAND_DESCRIPTION``, the fixed sentence that marks Hangar's own command in an exported manifest (how the
current command word is read back).

``setup_link`` composes the provider's "create an app from a manifest" address; it dials nothing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from hangar.chat.descriptor import DEFAULT_COMMAND, PRODUCT_NAME, ProviderDescriptor
from hangar.errors import InvalidArgs

APP_NAME_MAX = 35
BOT_DISPLAY_NAME_MAX = 80
DESCRIPTION_MAX = 140
AGENT_DESCRIPTION_MAX = 300
COMMAND_MAX = 32

DEFAULT_BOT_DISPLAY_NAME = f"{PRODUCT_NAME} agents"
DEFAULT_DESCRIPTION = f"Reach your {PRODUCT_NAME} workspace's agents from chat."
DEFAULT_AGENT_DESCRIPTION = f"Ask your {PRODUCT_NAME} workspace's agents for help; they answer here."
COMMAND_DESCRIPTION = f"{PRODUCT_NAME}: help, link a member, file a ticket"
COMMAND_USAGE = "help | link <code> | ticket <title> | <description>"
CREATE_APP_URL = "https://api.slack.com/apps"

_NOT_COMMAND = re.compile(r"[^a-z0-9_-]")


@dataclass(frozen=True)
class BotProfile:
    app_name: str
    bot_display_name: str
    description: str
    agent_description: str
    command: str
    agent_enabled: bool


def normalize_command(value: str) -> str:
    """Leading slashes stripped, lower-cased, characters outside ``[a-z0-9_-]`` removed; empty: the default."""
    word = _NOT_COMMAND.sub("", value.strip().lstrip("/").lower())
    return word or DEFAULT_COMMAND


def default_profile(workspace_name: str) -> BotProfile:
    name = " ".join(f"{PRODUCT_NAME} {workspace_name}".split())
    return BotProfile(
        app_name=name[:APP_NAME_MAX].rstrip(),
        bot_display_name=DEFAULT_BOT_DISPLAY_NAME,
        description=DEFAULT_DESCRIPTION,
        agent_description=DEFAULT_AGENT_DESCRIPTION,
        command=DEFAULT_COMMAND,
        agent_enabled=True,
    )


# field on the wire -> (attribute, at least, at most)
_TEXT_FIELDS: dict[str, tuple[str, int, int]] = {
    "appName": ("app_name", 1, APP_NAME_MAX),
    "botDisplayName": ("bot_display_name", 1, BOT_DISPLAY_NAME_MAX),
    "description": ("description", 0, DESCRIPTION_MAX),
    "agentDescription": ("agent_description", 0, AGENT_DESCRIPTION_MAX),
}


def edit_profile(current: BotProfile, edits: Mapping[str, Any]) -> BotProfile:
    """``current`` with the edits applied. An empty box (absent, ``None`` or blank) leaves the value unchanged;
    a value outside its limit is refused naming the field."""
    changes: dict[str, Any] = {}
    for wire, (attr, _least, most) in _TEXT_FIELDS.items():
        value = edits.get(wire)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidArgs(f"{wire} must be text", field=wire)
        text = " ".join(value.split())
        if not text:
            continue
        if len(text) > most:
            raise InvalidArgs(f"{wire} is {len(text)} characters; the limit is {most}", field=wire)
        changes[attr] = text
    command = edits.get("command")
    if command is not None:
        if not isinstance(command, str):
            raise InvalidArgs("command must be text", field="command")
        if command.strip():
            word = normalize_command(command)
            if len(word) > COMMAND_MAX:
                raise InvalidArgs(f"command is {len(word)} characters; the limit is {COMMAND_MAX}", field="command")
            changes["command"] = word
    enabled = edits.get("agentEnabled")
    if enabled is not None:
        if not isinstance(enabled, bool):
            raise InvalidArgs("agentEnabled must be true or false", field="agentEnabled")
        changes["agent_enabled"] = enabled
    return replace(current, **changes)


def _merged(existing: Any, required: tuple[str, ...]) -> list[str]:
    """The app's own entries first, in their order, then the required ones it lacks: nothing is taken away."""
    have = [x for x in existing if isinstance(x, str)] if isinstance(existing, list) else []
    return have + [x for x in required if x not in have]


def _section(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def build_manifest(
    descriptor: ProviderDescriptor, profile: BotProfile, existing: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest to create the app with, or (``existing``: the app's exported manifest) to update it with."""
    manifest: dict[str, Any] = copy.deepcopy(dict(existing or {}))
    info = _section(manifest, "display_information")
    info["name"] = profile.app_name
    if profile.description:
        info["description"] = profile.description
    else:
        info.pop("description", None)

    features = _section(manifest, "features")
    features["bot_user"] = {"display_name": profile.bot_display_name, "always_online": True}
    home = _section(features, "app_home")
    home.setdefault("home_tab_enabled", False)
    home["messages_tab_enabled"] = True
    home["messages_tab_read_only_enabled"] = False
    if profile.agent_enabled:
        view = _section(features, "assistant_view")
        view["assistant_description"] = profile.agent_description or DEFAULT_AGENT_DESCRIPTION
        view.setdefault("suggested_prompts", [])
    else:
        features.pop("assistant_view", None)
    ours = {
        "command": f"/{profile.command}",
        "description": COMMAND_DESCRIPTION,
        "usage_hint": COMMAND_USAGE,
        "should_escape": False,
    }
    others = [
        {k: v for k, v in c.items() if k != "url"}
        for c in features.get("slash_commands") or []
        if isinstance(c, dict) and c.get("description") != COMMAND_DESCRIPTION and c.get("command") != ours["command"]
    ]
    features["slash_commands"] = [*others, ours]

    scopes = _section(_section(manifest, "oauth_config"), "scopes")
    scopes["bot"] = _merged(scopes.get("bot"), descriptor.bot_scopes)

    settings = _section(manifest, "settings")
    settings["socket_mode_enabled"] = True
    settings.setdefault("org_deploy_enabled", False)
    settings.setdefault("token_rotation_enabled", False)
    events = _section(settings, "event_subscriptions")
    events.pop("request_url", None)
    events["bot_events"] = _merged(events.get("bot_events"), descriptor.bot_events)
    interactivity = settings.get("interactivity")
    if isinstance(interactivity, dict):
        interactivity.pop("request_url", None)
        interactivity.pop("message_menu_options_url", None)
    return manifest


def manifest_problems(descriptor: ProviderDescriptor, manifest: Mapping[str, Any]) -> list[str]:
    """What the manifest lacks of the spec's assertions (empty when it holds them all)."""
    problems = []
    features = manifest.get("features") or {}
    settings = manifest.get("settings") or {}
    if settings.get("socket_mode_enabled") is not True:
        problems.append("socket mode is off")
    if "request_url" in json.dumps(manifest) or any("url" in c for c in features.get("slash_commands") or []):
        problems.append("a request URL is set")
    home = features.get("app_home") or {}
    if home.get("messages_tab_enabled") is not True or home.get("messages_tab_read_only_enabled") is not False:
        problems.append("the Messages tab is not enabled and writable")
    if (features.get("bot_user") or {}).get("always_online") is not True:
        problems.append("the bot is not always online")
    bot_scopes = set(((manifest.get("oauth_config") or {}).get("scopes") or {}).get("bot") or [])
    missing_scopes = [s for s in descriptor.bot_scopes if s not in bot_scopes]
    if missing_scopes:
        problems.append("missing bot scopes " + ", ".join(missing_scopes))
    events = set((settings.get("event_subscriptions") or {}).get("bot_events") or [])
    missing_events = [e for e in descriptor.bot_events if e not in events]
    if missing_events:
        problems.append("missing bot events " + ", ".join(missing_events))
    ours = [c for c in features.get("slash_commands") or [] if c.get("description") == COMMAND_DESCRIPTION]
    if len(ours) != 1:
        problems.append(f"{len(ours)} slash commands carry Hangar's description, not one")
    return problems


def profile_from_manifest(manifest: Mapping[str, Any], fallback: BotProfile) -> BotProfile:
    """The profile an exported manifest shows; what it lacks comes from ``fallback``."""
    info = manifest.get("display_information") or {}
    features = manifest.get("features") or {}
    view = features.get("assistant_view")
    ours = next((c for c in features.get("slash_commands") or [] if c.get("description") == COMMAND_DESCRIPTION), None)
    return BotProfile(
        app_name=str(info.get("name") or fallback.app_name),
        bot_display_name=str((features.get("bot_user") or {}).get("display_name") or fallback.bot_display_name),
        description=str(info.get("description") or ""),
        agent_description=str((view or {}).get("assistant_description") or fallback.agent_description),
        command=normalize_command(str(ours["command"])) if ours else fallback.command,
        agent_enabled=isinstance(view, dict),
    )


def setup_link(descriptor: ProviderDescriptor, profile: BotProfile) -> str:
    """The provider's page that creates an app from this profile's manifest, prefilled (the admin confirms it
    there); composing it reads no secret and dials nothing."""
    manifest = json.dumps(build_manifest(descriptor, profile), separators=(",", ":"))
    return f"{CREATE_APP_URL}?{urlencode({'new_app': '1', 'manifest_json': manifest})}"
