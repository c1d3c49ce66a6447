"""From a parsed file to its symbols and edges (run in the parsing worker; imports nothing of the server).

A symbol is a definition: its name, kind, 1-based line and 0-based column range, and its container (the qualified
name of the definition around it: ``Parser.parse`` for a method ``parse`` of class ``Parser``). A function defined
in a class, struct, trait, interface or impl is a ``method``. An edge goes from the innermost definition around its
site (its qualified name; empty at file level) to a target *name*: ``defines`` (a container to what it holds),
``calls``, ``imports``, ``inherits`` and ``references`` (any other identifier, once per source and name). Targets are
names, not resolved symbols: the ops resolve them against the graph when asked (a callee defined in another file,
another language or not indexed yet stays a name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_MEMBER_HOLDERS = frozenset({"class", "struct", "interface", "trait", "impl", "enum"})
_EDGE_CAPTURES = {"call": "calls", "import": "imports", "inherit": "inherits", "ref": "references"}
MAX_NAME = 200  # a longer name (generated code) is cut; the graph's columns hold this much


@dataclass
class _Def:
    kind: str
    name: str
    start_byte: int
    end_byte: int
    start: tuple[int, int]
    end: tuple[int, int]
    emitted: bool  # False for a container that is no symbol (a Rust impl block)
    qualified: str = ""
    container: str = ""
    holder: str = ""  # the kind of the definition around it


def _text(node: Any) -> str:
    raw: bytes = node.text or b""
    # A NUL past the binary sniff would reach the graph, and PostgreSQL refuses it in text.
    return raw.replace(b"\0", b"").decode("utf-8", errors="replace")[:MAX_NAME]


def _import_text(node: Any) -> str:
    return _text(node).strip().strip("\"'<>`")


def extract(query: Any, cursor_type: Any, root: Any) -> dict[str, Any]:
    """Symbols and edges of the tree under ``root``, found with ``query`` (the language's, compiled)."""
    defs: list[_Def] = []
    name_sites: set[int] = set()
    sites: list[tuple[str, int, Any]] = []  # (edge kind, start byte, node)
    for _pattern, captures in cursor_type(query).matches(root):
        names = captures.get("name")
        for cap, nodes in captures.items():
            if cap.startswith(("def.", "container.")) and names:
                node, name = nodes[0], names[0]
                name_sites.add(name.start_byte)
                defs.append(
                    _Def(
                        kind=cap.split(".", 1)[1],
                        name=_text(name),
                        start_byte=node.start_byte,
                        end_byte=node.end_byte,
                        start=(node.start_point[0] + 1, node.start_point[1]),
                        end=(node.end_point[0] + 1, node.end_point[1]),
                        emitted=cap.startswith("def."),
                    )
                )
            elif cap in _EDGE_CAPTURES:
                sites.extend((_EDGE_CAPTURES[cap], n.start_byte, n) for n in nodes)
    defs.sort(key=lambda d: (d.start_byte, -d.end_byte))
    _nest(defs)
    symbols = [
        {
            "name": d.name,
            "kind": "method" if d.kind == "function" and d.holder in _MEMBER_HOLDERS else d.kind,
            "container": d.container,
            "startLine": d.start[0],
            "startCol": d.start[1],
            "endLine": d.end[0],
            "endCol": d.end[1],
        }
        for d in defs
        if d.emitted
    ]
    edges: list[dict[str, Any]] = [
        {"kind": "defines", "source": d.container, "target": d.name, "line": d.start[0]}
        for d in defs
        if d.emitted and d.container
    ]
    claimed = set(name_sites)
    seen_refs: set[tuple[str, str]] = set()
    # In file order; at one place calls, imports and inherits come before the reference to the same identifier,
    # so it is not counted twice. The definitions around the current site are kept on a stack.
    sites.sort(key=lambda s: (s[1], s[0] == "references"))
    around: list[_Def] = []
    following = iter(defs)
    upcoming = next(following, None)
    for kind, start, node in sites:
        while upcoming is not None and upcoming.start_byte <= start:
            while around and around[-1].end_byte <= upcoming.start_byte:
                around.pop()
            around.append(upcoming)
            upcoming = next(following, None)
        while around and around[-1].end_byte <= start:
            around.pop()
        if start in claimed and kind == "references":
            continue
        source = around[-1].qualified if around else ""
        target = _import_text(node) if kind == "imports" else _text(node)
        if not target:
            continue
        if kind == "references":
            if len(target) < 2 or (source, target) in seen_refs:
                continue
            seen_refs.add((source, target))
        else:
            claimed.add(start)
        edges.append({"kind": kind, "source": source, "target": target, "line": node.start_point[0] + 1})
    return {"symbols": symbols, "edges": edges}


def _nest(defs: list[_Def]) -> None:
    """Give each definition its container's qualified name and its own (defs sorted by start, outer first)."""
    stack: list[_Def] = []
    for d in defs:
        while stack and stack[-1].end_byte <= d.start_byte:
            stack.pop()
        while stack and stack[-1].end_byte < d.end_byte:  # overlapping, not nested (never in a valid tree)
            stack.pop()
        d.container = stack[-1].qualified if stack else ""
        d.holder = stack[-1].kind if stack else ""
        d.qualified = f"{d.container}.{d.name}" if d.container else d.name
        stack.append(d)
