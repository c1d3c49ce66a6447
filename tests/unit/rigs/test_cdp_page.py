"""Engine A's renderers of what a page returns: the accessibility tree as text, the console ring and its caps,
and reading a JPEG's size. (The page-side scripts run in the conformance tests, in a real Chromium.)"""

from __future__ import annotations

from typing import Any

from hangar.rigs.engines.chromium import page as cdp_page
from hangar.rigs.engines.chromium.capture import captured_at
from hangar.rigs.engines.chromium.page import ConsoleRing, jpeg_size, render_ax_tree


def _node(node_id: int, role: str, name: str = "", children: tuple[int, ...] = (), **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"nodeId": str(node_id), "role": {"value": role}, "childIds": [str(c) for c in children]}
    if name:
        node["name"] = {"value": name}
    return {**node, **extra}


def test_ax_tree_indents_named_nodes_and_lifts_the_children_of_wrappers() -> None:
    nodes = [
        _node(1, "RootWebArea", "Page", (2, 5)),
        _node(2, "generic", "", (3, 4)),
        _node(3, "button", "Save", properties=[{"name": "focused", "value": {"value": True}}]),
        _node(4, "textbox", "Name", value={"value": "Ada"}),
        _node(5, "paragraph", "hidden", (6,), ignored=True),
        _node(6, "StaticText", "kept under an ignored parent"),
    ]
    assert render_ax_tree(nodes).splitlines() == [
        'RootWebArea "Page"',
        '  button "Save" [focused]',
        "  textbox \"Name\" value='Ada'",
        '  StaticText "kept under an ignored parent"',
    ]


def test_ax_tree_is_cut_at_its_cap(monkeypatch: Any) -> None:
    monkeypatch.setattr(cdp_page, "A11Y_CAP", 200)
    nodes = [_node(1, "list", "l", tuple(range(2, 102)))] + [_node(i, "listitem", f"item {i}") for i in range(2, 102)]
    text = render_ax_tree(nodes)
    assert len(text) < 300 and text.endswith("(accessibility tree cut at its size cap)")


def test_console_ring_keeps_the_newest_and_says_what_it_dropped(monkeypatch: Any) -> None:
    ring = ConsoleRing()
    ring.console_call({"type": "log", "args": [{"type": "string", "value": "hello"}, {"type": "number", "value": 42}]})
    ring.console_call({"type": "error", "args": [{"type": "object", "description": "Object"}]})
    ring.exception({"exceptionDetails": {"text": "Uncaught", "exception": {"description": "Error: boom"},
                                         "url": "http://x/a.js", "lineNumber": 4}})  # fmt: skip
    assert ring.render().splitlines() == [
        "[log] hello 42",
        "[error] Object",
        "[exception] Error: boom (http://x/a.js:5)",
    ]
    for n in range(cdp_page.CONSOLE_ENTRIES):
        ring.add(f"entry {n}")
    lines = ring.render().splitlines()
    assert lines[0] == "(3 earlier entries dropped)" and lines[-1] == f"entry {cdp_page.CONSOLE_ENTRIES - 1}"
    ring.add("x" * 10_000)
    assert len(ring.render().splitlines()[-1]) == cdp_page.CONSOLE_ENTRY_CAP
    monkeypatch.setattr(cdp_page, "CONSOLE_CAP", cdp_page.CONSOLE_ENTRY_CAP + 100)
    lines = ring.render().splitlines()
    assert lines[1] == "(older entries cut at the size cap)" and lines[-1].startswith("xxx")
    last = cdp_page.CONSOLE_ENTRIES
    assert lines[2:-1] == [f"entry {n}" for n in range(last - 9, last)]  # 99 characters left: 9 entries of 10


def test_jpeg_size_reads_the_frame_header() -> None:
    # SOI, an APP0 segment, then a baseline start-of-frame: height 0x0258 (600), width 0x0320 (800).
    jpeg = b"\xff\xd8" + b"\xff\xe0\x00\x04\x00\x00" + b"\xff\xc0\x00\x11\x08\x02\x58\x03\x20\x03" + b"\x00" * 12
    assert jpeg_size(jpeg) == (800, 600)
    assert jpeg_size(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20) == (0, 0)


def test_frame_stamps_become_monotonic_instants_only_when_plausible() -> None:
    import time

    received = time.monotonic()
    stamped = captured_at(time.time() - 0.25, received)
    assert received - 0.3 < stamped < received - 0.2
    assert captured_at(time.time() + 60, received) == received  # a clock ahead of ours
    assert captured_at(time.time() - 3600, received) == received  # a clock far behind
    assert captured_at(None, received) == received
