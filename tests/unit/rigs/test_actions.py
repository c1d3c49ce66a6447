"""Total parsing of the verb tables: every verb of the spec, every bound, the field named on each fault."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.actions import BROWSER_USE, COMPUTER_USE, MOBILE_USE, SIM_USE, VerbTable, parse_action


def bad(table: VerbTable, payload: Any) -> InvalidArgs:
    with pytest.raises(InvalidArgs) as e:
        parse_action(table, payload)
    assert e.value.field is not None
    assert e.value.message.startswith(e.value.field), e.value.message
    return e.value


def observations(table: VerbTable) -> set[str]:
    return {v.name for v in table.verbs.values() if v.observation}


def test_verb_lists_and_observations_match_the_spec() -> None:
    assert list(COMPUTER_USE.verbs) == [
        "screenshot",
        "cursor_position",
        "mouse_move",
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
        "left_mouse_down",
        "left_mouse_up",
        "left_click_drag",
        "scroll",
        "key",
        "hold_key",
        "type",
        "wait",
        "set_display",
        "clipboard_read",
        "clipboard_write",
    ]
    assert observations(COMPUTER_USE) == {"screenshot", "cursor_position", "wait", "clipboard_read"}
    assert list(BROWSER_USE.verbs) == [
        "navigate",
        "reload",
        "stop_loading",
        "click",
        "fill",
        "type",
        "key",
        "scroll",
        "mouse_move",
        "drag",
        "left_mouse_down",
        "left_mouse_up",
        "extract",
        "screenshot",
        "set_viewport",
        "history",
        "pages",
        "switch_page",
        "wait_for",
        "clipboard_read",
        "clipboard_write",
    ]
    assert observations(BROWSER_USE) == {"extract", "screenshot", "wait_for", "clipboard_read", "pages"}
    assert list(MOBILE_USE.verbs) == [
        "tap",
        "swipe",
        "type",
        "key",
        "screenshot",
        "ui_dump",
        "install_apk",
        "start_app",
        "stop_app",
        "clear_app_data",
        "uninstall_app",
        "open_url",
        "shell",
    ]
    assert observations(MOBILE_USE) == {"screenshot", "ui_dump"}
    assert list(SIM_USE.verbs) == [
        "tap",
        "swipe",
        "type",
        "key",
        "home",
        "lock",
        "unlock",
        "screenshot",
        "ui_dump",
        "install_app",
        "start_app",
        "stop_app",
        "uninstall_app",
        "open_url",
        "spawn",
    ]
    assert observations(SIM_USE) == {"screenshot", "ui_dump"}


@pytest.mark.parametrize("verb", ["hold_key", "wait"])
def test_hold_key_and_wait_are_0_to_60_seconds(verb: str) -> None:
    extra = {"text": "shift"} if verb == "hold_key" else {}
    for ok in (0, 0.5, 60):
        parse_action(COMPUTER_USE, {"action": verb, "duration": ok, **extra})
    for out in (-0.01, 60.01):
        assert bad(COMPUTER_USE, {"action": verb, "duration": out, **extra}).field == "action.duration"
    assert bad(COMPUTER_USE, {"action": verb, "duration": True, **extra}).field == "action.duration"
    assert bad(COMPUTER_USE, {"action": verb, "duration": "5", **extra}).field == "action.duration"


def test_wait_for_is_a_tenth_to_30_seconds() -> None:
    for ok in (0.1, 30):
        parse_action(BROWSER_USE, {"action": "wait_for", "selector": "#go", "timeout": ok})
    for out in (0.09, 30.5):
        e = bad(BROWSER_USE, {"action": "wait_for", "selector": "#go", "timeout": out})
        assert e.field == "action.timeout"
    assert bad(BROWSER_USE, {"action": "wait_for", "timeout": 1}).field == "action.selector"


@pytest.mark.parametrize("table", [MOBILE_USE, SIM_USE])
def test_swipe_is_50_to_5000_ms(table: VerbTable) -> None:
    base = {"action": "swipe", "start_coordinate": [0, 0], "coordinate": [10, 400]}
    for ok in (50, 5000):
        parse_action(table, {**base, "duration_ms": ok})
    for out in (49, 5001):
        assert bad(table, {**base, "duration_ms": out}).field == "action.duration_ms"


def test_set_viewport_minimum_is_320x240() -> None:
    parse_action(BROWSER_USE, {"action": "set_viewport", "width": 320, "height": 240})
    assert bad(BROWSER_USE, {"action": "set_viewport", "width": 319, "height": 240}).field == "action.width"
    assert bad(BROWSER_USE, {"action": "set_viewport", "width": 320, "height": 239}).field == "action.height"


def test_the_action_itself_must_be_named_and_known() -> None:
    assert bad(COMPUTER_USE, "click").field == "action"
    assert bad(COMPUTER_USE, {}).field == "action.action"
    e = bad(COMPUTER_USE, {"action": "teleport"})
    assert e.field == "action.action" and "'teleport'" in e.message
    assert bad(COMPUTER_USE, {"action": 7}).field == "action.action"


def test_unknown_fields_are_refused_by_name() -> None:
    e = bad(COMPUTER_USE, {"action": "screenshot", "zoom": 2})
    assert e.field == "action.zoom" and "screenshot" in e.message


def test_coordinates_are_two_non_negative_integers() -> None:
    parse_action(COMPUTER_USE, {"action": "left_click", "coordinate": [0, 799]})
    parse_action(COMPUTER_USE, {"action": "left_click"})
    assert bad(COMPUTER_USE, {"action": "mouse_move", "coordinate": [1, -1]}).field == "action.coordinate.1"
    assert bad(COMPUTER_USE, {"action": "mouse_move", "coordinate": [1]}).field == "action.coordinate"
    assert bad(COMPUTER_USE, {"action": "mouse_move", "coordinate": [1.5, 2]}).field == "action.coordinate.0"
    assert bad(COMPUTER_USE, {"action": "mouse_move"}).field == "action.coordinate"


def test_x11_keys_and_clipboard_selection() -> None:
    parse_action(COMPUTER_USE, {"action": "key", "text": "ctrl+shift+KP_Enter"})
    assert bad(COMPUTER_USE, {"action": "key", "text": "ctrl shift"}).field == "action.text"
    p = parse_action(COMPUTER_USE, {"action": "clipboard_read"})
    assert p.params.model_dump() == {"selection": "clipboard"}
    for sel in ("primary", "xdnd"):
        parse_action(COMPUTER_USE, {"action": "clipboard_read", "selection": sel})
    assert bad(COMPUTER_USE, {"action": "clipboard_read", "selection": "secondary"}).field == "action.selection"


def test_browser_navigate_is_http_and_https_only() -> None:
    parse_action(BROWSER_USE, {"action": "navigate", "url": "https://example.test/a?b=1"})
    for url in ("file:///etc/passwd", "javascript:alert(1)", "ftp://x.test/", "https://", "http://a b.test/"):
        assert bad(BROWSER_USE, {"action": "navigate", "url": url}).field == "action.url"


def test_browser_click_takes_exactly_one_target_and_keys_are_dom_names() -> None:
    parse_action(BROWSER_USE, {"action": "click", "selector": "button.go"})
    parse_action(BROWSER_USE, {"action": "click", "coordinate": [5, 5]})
    assert bad(BROWSER_USE, {"action": "click"}).field == "action"
    assert bad(BROWSER_USE, {"action": "click", "selector": "a", "coordinate": [1, 1]}).field == "action"
    for key in ("Enter", "ArrowLeft", "a", "Control+a", "Shift+Tab", "+"):
        parse_action(BROWSER_USE, {"action": "key", "key": key})
    assert bad(BROWSER_USE, {"action": "key", "key": "ctrl+c"}).field == "action.key"
    assert bad(BROWSER_USE, {"action": "extract", "kind": "html"}).field == "action.kind"
    assert bad(BROWSER_USE, {"action": "scroll"}).field == "action"
    assert bad(BROWSER_USE, {"action": "clipboard_read", "selection": "primary"}).field == "action.selection"


def test_mobile_keys_apps_and_shell() -> None:
    for key in ("back", "volume_down", "KEYCODE_CAMERA"):
        parse_action(MOBILE_USE, {"action": "key", "key": key})
    assert bad(MOBILE_USE, {"action": "key", "key": "keycode_camera"}).field == "action.key"
    parse_action(MOBILE_USE, {"action": "start_app", "package": "com.example.app"})
    assert bad(MOBILE_USE, {"action": "start_app", "package": "example"}).field == "action.package"
    parse_action(MOBILE_USE, {"action": "shell", "argv": ["logcat", "-d"]})
    assert bad(MOBILE_USE, {"action": "shell", "argv": "logcat -d"}).field == "action.argv"
    assert bad(MOBILE_USE, {"action": "shell", "argv": []}).field == "action.argv"
    assert bad(MOBILE_USE, {"action": "shell", "argv": ["a\x00b"]}).field == "action.argv.0"
    parse_action(MOBILE_USE, {"action": "install_apk", "path": "build/app.apk"})
    assert bad(MOBILE_USE, {"action": "install_apk", "path": "--install-all.apk"}).field == "action.path"
    assert bad(MOBILE_USE, {"action": "install_apk", "path": "app.zip"}).field == "action.path"
    parse_action(MOBILE_USE, {"action": "open_url", "url": "myapp://open/1"})
    assert bad(MOBILE_USE, {"action": "open_url", "url": "not a url"}).field == "action.url"


def test_simulator_keys_and_modifiers() -> None:
    parse_action(SIM_USE, {"action": "key", "key": "a", "modifiers": ["command", "shift"]})
    parse_action(SIM_USE, {"action": "key", "key": "up"})
    assert bad(SIM_USE, {"action": "key", "key": "F5"}).field == "action.key"
    assert bad(SIM_USE, {"action": "key", "key": "a", "modifiers": ["hyper"]}).field == "action.modifiers.0"
    assert bad(SIM_USE, {"action": "key", "key": "a", "modifiers": ["shift", "shift"]}).field == "action.modifiers"
    parse_action(SIM_USE, {"action": "install_app", "path": "Build/My.app/"})
    parse_action(SIM_USE, {"action": "spawn", "argv": ["log", "show"]})
    assert bad(SIM_USE, {"action": "start_app", "bundle_id": "nodots"}).field == "action.bundle_id"
