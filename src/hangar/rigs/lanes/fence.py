"""Fencing untrusted text: what a web page hands back (its DOM, its title, its console, the clipboard it filled)
is data written by whoever wrote the page, and an agent reading it must not take it for instructions.

Each fenced text sits between two marker lines sharing a boundary drawn at random for that text (so a page
cannot print a closing marker in advance, as it could with a fixed one), and the opening line says what the
text is and that it is untrusted. A boundary that happens to occur inside the text is drawn again.
"""

from __future__ import annotations

import re
import secrets

BOUNDARY_BYTES = 12
_OPEN = re.compile(r"^<<<untrusted (?P<what>[a-z -]+) boundary=(?P<b>[0-9a-f]+)>>>\n", re.ASCII)


def _boundary(text: str) -> str:
    while True:
        boundary = secrets.token_hex(BOUNDARY_BYTES)
        if boundary not in text:
            return boundary


def fence(text: str, what: str) -> str:
    """``text`` marked as untrusted ``what`` ("page content", "page title", "clipboard text")."""
    boundary = _boundary(text)
    return f"<<<untrusted {what} boundary={boundary}>>>\n{text}\n<<<end of untrusted {what} boundary={boundary}>>>"


def unfence(fenced: str) -> str:
    """The text inside a fence ``fence`` made (for readers that trust the fence, such as tests and the web
    client); ``ValueError`` when ``fenced`` is not one."""
    found = _OPEN.match(fenced)
    if found is None:
        raise ValueError("not a fenced text")
    closing = f"\n<<<end of untrusted {found['what']} boundary={found['b']}>>>"
    if not fenced.endswith(closing):
        raise ValueError("the fence is not closed")
    return fenced[found.end() : len(fenced) - len(closing)]
