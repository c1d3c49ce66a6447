"""Bot profile limits and normalization; the manifest's assertions and merge; the setup link."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from hangar.chat.descriptor import SLACK
from hangar.chat.profile import (
    COMMAND_DESCRIPTION,
    build_manifest,
    default_profile,
    edit_profile,
    manifest_problems,
    normalize_command,
    profile_from_manifest,
    setup_link,
)
from hangar.errors import InvalidArgs


@pytest.mark.parametrize(
    ("raw", "word"),
    [("/Hangar", "hangar"), ("//My Bot!", "mybot"), ("ops_team-2", "ops_team-2"), ("///", "hangar"), ("é", "hangar")],
)
def test_the_command_is_normalized_and_falls_back_to_the_default_word(raw: str, word: str) -> None:
    assert normalize_command(raw) == word


def test_the_default_profile_joins_product_and_workspace_names_within_35_characters() -> None:
    assert default_profile("Acme").app_name == "Hangar Acme"
    long = default_profile("A workspace with a very long name indeed")
    assert len(long.app_name) <= 35 and long.app_name.startswith("Hangar A workspace")
    assert default_profile("x").command == "hangar" and default_profile("x").agent_enabled


def test_an_empty_box_leaves_the_value_unchanged() -> None:
    base = default_profile("Acme")
    same = edit_profile(base, {"appName": "  ", "botDisplayName": None, "description": "", "command": " "})
    assert same == base
    changed = edit_profile(base, {"appName": " Ops  bot ", "command": "/OPS", "agentEnabled": False})
    assert (changed.app_name, changed.command, changed.agent_enabled) == ("Ops bot", "ops", False)
    assert edit_profile(base, {"command": "!!"}).command == "hangar"


@pytest.mark.parametrize(
    ("field", "limit"), [("appName", 35), ("botDisplayName", 80), ("description", 140), ("agentDescription", 300)]
)
def test_text_fields_are_held_to_their_limits(field: str, limit: int) -> None:
    base = default_profile("Acme")
    edit_profile(base, {field: "x" * limit})
    with pytest.raises(InvalidArgs) as err:
        edit_profile(base, {field: "x" * (limit + 1)})
    assert err.value.field == field and str(limit) in err.value.message


def test_the_command_is_held_to_32_characters_after_normalization() -> None:
    base = default_profile("Acme")
    assert edit_profile(base, {"command": "/" + "a" * 32}).command == "a" * 32
    with pytest.raises(InvalidArgs, match="command"):
        edit_profile(base, {"command": "a" * 33})
    with pytest.raises(InvalidArgs, match="agentEnabled"):
        edit_profile(base, {"agentEnabled": "yes"})


def test_a_new_manifest_holds_every_assertion() -> None:
    manifest = build_manifest(SLACK, default_profile("Acme"))
    assert manifest_problems(SLACK, manifest) == []
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    assert manifest["features"]["app_home"]["messages_tab_read_only_enabled"] is False
    assert manifest["features"]["bot_user"] == {"display_name": "Hangar agents", "always_online": True}
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/hangar"]
    assert "request_url" not in json.dumps(manifest)


def _admins_app() -> dict[str, Any]:
    return {
        "display_information": {"name": "Old", "long_description": "kept"},
        "features": {
            "app_home": {
                "home_tab_enabled": True,
                "messages_tab_enabled": False,
                "messages_tab_read_only_enabled": True,
            },
            "bot_user": {"display_name": "old", "always_online": False},
            "slash_commands": [
                {"command": "/old", "description": COMMAND_DESCRIPTION, "url": "https://example.test/cmd"},
                {"command": "/deploy", "description": "The admin's own", "url": "https://example.test/deploy"},
            ],
        },
        "oauth_config": {"scopes": {"bot": ["reactions:write", "chat:write"], "user": ["search:read"]}},
        "settings": {
            "socket_mode_enabled": False,
            "event_subscriptions": {"request_url": "https://example.test/events", "bot_events": ["reaction_added"]},
            "interactivity": {"is_enabled": True, "request_url": "https://example.test/i"},
        },
    }


def test_editing_merges_scopes_and_events_and_never_subtracts() -> None:
    profile = edit_profile(default_profile("Acme"), {"command": "ops", "agentEnabled": False})
    manifest = build_manifest(SLACK, profile, _admins_app())
    assert manifest_problems(SLACK, manifest) == []
    bot = manifest["oauth_config"]["scopes"]["bot"]
    assert bot[:2] == ["reactions:write", "chat:write"] and set(SLACK.bot_scopes) <= set(bot)
    assert bot.count("chat:write") == 1 and manifest["oauth_config"]["scopes"]["user"] == ["search:read"]
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert events[0] == "reaction_added" and set(SLACK.bot_events) <= set(events)
    ours = [c for c in manifest["features"]["slash_commands"] if c["description"] == COMMAND_DESCRIPTION]
    assert [c["command"] for c in ours] == ["/ops"]
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/deploy", "/ops"]
    assert manifest["display_information"]["long_description"] == "kept"
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "assistant_view" not in manifest["features"]
    assert "request_url" not in json.dumps(manifest) and "url" not in json.dumps(manifest["features"])
    assert manifest_problems(SLACK, _admins_app()) != []


def test_the_profile_reads_back_from_an_exported_manifest() -> None:
    profile = edit_profile(default_profile("Acme"), {"command": "ops", "description": "Ours", "appName": "Ops"})
    assert profile_from_manifest(build_manifest(SLACK, profile), default_profile("x")) == profile


def test_the_setup_link_carries_the_manifest_to_the_providers_create_page() -> None:
    profile = edit_profile(default_profile("Acme"), {"command": "ops"})
    url = setup_link(SLACK, profile)
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "api.slack.com", "/apps")
    query = parse_qs(parts.query)
    assert query["new_app"] == ["1"]
    assert json.loads(query["manifest_json"][0]) == build_manifest(SLACK, profile)
