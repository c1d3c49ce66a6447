"""The parsing worker: ``python -I -m hangar.codegraph.worker``, run confined by ``hangar.codegraph.pool``.

It reads requests from stdin, one per line: ``{"language", "grammar", "query", "timeoutMs"}`` followed by a line
holding the file's length and then that many bytes; it answers each with one JSON line: ``{"symbols", "edges",
"lines"}``, or ``{"error": "grammar"|"timeout"|"parse", "message"}``. It never opens a repository file: the server
reads the file from its own clone and hands over the bytes, so a worker holds nothing of the repository but what it
is given. A grammar is resolved (imported) the first time a file of its language arrives; one that fails to resolve
is answered as ``grammar`` and the server fails the step. Parsing gives up at ``timeoutMs`` (tree-sitter's progress
callback); the server also kills a worker that overruns it, whatever it is stuck in.

It imports tree-sitter and the standard library only, so it starts in a fraction of a second.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any

from hangar.codegraph.extract import extract

_CHUNK = 65536


def _resolve(grammar: str) -> Any:
    import tree_sitter

    module_name, _, function = grammar.partition(":")
    module = importlib.import_module(module_name)
    return tree_sitter.Language(getattr(module, function or "language")())


def serve(stdin: Any, stdout: Any) -> None:
    import tree_sitter

    languages: dict[str, tuple[Any, Any]] = {}
    while True:
        head = stdin.readline()
        if not head:
            return
        request = json.loads(head)
        size = int(stdin.readline())
        source = stdin.read(size)
        key = f"{request['grammar']}\n{request['query']}"
        try:
            if key not in languages:
                language = _resolve(request["grammar"])
                languages[key] = (tree_sitter.Parser(language), tree_sitter.Query(language, request["query"]))
        except Exception as exc:  # any failure to load a grammar is the same answer: it did not resolve
            answer: dict[str, Any] = {"error": "grammar", "message": f"{type(exc).__name__}: {exc}"}
        else:
            answer = _parse(*languages[key], tree_sitter.QueryCursor, source, int(request["timeoutMs"]))
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


def _parse(parser: Any, query: Any, cursor: Any, source: bytes, timeout_ms: int) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_ms / 1000

    def progress(*_state: Any) -> bool:
        return time.monotonic() > deadline  # True cancels the parse

    def read(offset: int, _point: Any) -> bytes:
        return source[offset : offset + _CHUNK]

    # Read through a callback: tree-sitter calls ``progress`` only then (not for a whole bytestring).
    try:
        tree = parser.parse(read, progress_callback=progress)
    except Exception as exc:  # a cancelled parse raises in recent bindings, returns None in older ones
        if time.monotonic() <= deadline:
            return {"error": "parse", "message": f"{type(exc).__name__}: {exc}"}
        tree = None
    if tree is None:
        return {"error": "timeout", "message": f"parsing took longer than {timeout_ms} ms"}
    try:
        found = extract(query, cursor, tree.root_node)
    except Exception as exc:
        return {"error": "parse", "message": f"{type(exc).__name__}: {exc}"}
    found["lines"] = source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)
    return found


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout)
