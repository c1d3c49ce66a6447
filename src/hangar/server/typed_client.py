"""Writes the web client's typed RPC table (``web/src/generated/ops.ts``) from the registry of every part this
server is composed of, with the domain event types they declare; ``--check`` only says whether the committed
file is current.

    python -m hangar.server.typed_client [--check]

It lives in the composition because only here is the whole registry known; the conversion is
``hangar.rpc.typescript``."""

from __future__ import annotations

import sys
from pathlib import Path

from hangar.rpc.registry import OpRegistry
from hangar.rpc.typescript import render
from hangar.server.parts import all_parts

COMMAND = "python -m hangar.server.typed_client"
# The checkout this module runs from: src/hangar/server/ → the repository root.
REPO = Path(__file__).resolve().parents[3]
TARGET = REPO / "web" / "src" / "generated" / "ops.ts"


def generated() -> str:
    parts = all_parts()
    registry = OpRegistry(o for p in parts for o in p.ops)
    return render(registry, COMMAND, (e for p in parts for e in p.events))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = generated()
    if "--check" in args:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(REPO)} is stale; regenerate it with: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
