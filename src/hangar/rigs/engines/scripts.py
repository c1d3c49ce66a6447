"""The page scripts engines B and C run (``js/*.js``, package data), read once.

Each file holds one function expression. BiDi calls it as ``script.callFunction``'s declaration; classic
WebDriver wraps it as ``return (<function>).apply(null, arguments)``, whose returned promise the driver awaits.
"""

from __future__ import annotations

import functools
from importlib import resources


@functools.cache
def script(name: str) -> str:
    """The function expression in ``js/<name>.js``."""
    text = (resources.files("hangar.rigs.engines") / "js" / f"{name}.js").read_text(encoding="utf-8")
    # Drop the leading comment block: it is for readers, not for every call's payload.
    lines = text.splitlines()
    while lines and lines[0].startswith("//"):
        lines.pop(0)
    return "\n".join(lines).strip()
