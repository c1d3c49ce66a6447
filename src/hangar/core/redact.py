"""Secrets a program was given never come back out through what it prints.

A command agent's stdout streams into its space and its stderr into error messages, where every member reads
them; a program that echoes its environment (or a crash dump) would otherwise publish the agent's API keys and
its run credential; a shell step's output and error would publish its forge token. ``Redactor`` replaces each
secret value with a marker, also when a value arrives split across two chunks of a stream: it holds back the
last few characters (shorter than the longest secret) until the next chunk or the end shows they are not the
start of one.

Text that leaves the server for someone else's service (a review posted on a forge, a message mirrored to a chat)
is cleaned with ``Redactor.encoded``: each secret also in the encodings a program applies to a whole value before
printing it (``encodings``), and ``count`` says how many were blanked so the sender can record that (never what).
``SecretValues`` is where such a sender gets the secrets a workspace's steps may hold, from whichever part keeps
them (the agents part: its agents' API keys and secret variables).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from hangar.core.context import AppContext

MARK = "[redacted]"
MIN_SECRET = 8  # shorter values are too likely to be ordinary words or numbers to be worth blanking


def encodings(secret: str) -> list[str]:
    """``secret`` and the forms a program commonly turns a whole value into before printing it: base64 (standard
    and URL-safe, with and without padding; also of the value with the newline ``echo "$X" | base64`` adds),
    hexadecimal and percent-encoding. A form of the value inside a longer encoded text depends on where it falls
    and is not caught: this blanks an honest mistake and the obvious disguises, not a determined program."""
    raw = secret.encode()
    forms = {secret, raw.hex(), quote(secret, safe="")}
    for data in (raw, raw + b"\n"):
        for encoded in (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()):
            forms |= {encoded, encoded.rstrip("=")}
    return sorted(forms)


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)
        self._hold = max((len(s) for s in self._secrets), default=1) - 1
        self._pending = ""
        self.count = 0  # secrets blanked so far

    @classmethod
    def encoded(cls, secrets: Iterable[str]) -> Redactor:
        """A redactor of each secret and its ``encodings``."""
        return cls(form for s in secrets if len(s) >= MIN_SECRET for form in encodings(s))

    def clean(self, text: str) -> str:
        """``text`` with every secret replaced (a whole text, not a stream)."""
        for secret in self._secrets:
            if secret in text:
                self.count += text.count(secret)
                text = text.replace(secret, MARK)
        return text

    def clean_json(self, value: Any) -> Any:
        """``value`` (JSON: maps, lists, text) with every secret replaced in its texts and keys."""
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, list):
            return [self.clean_json(v) for v in value]
        if isinstance(value, dict):
            return {self.clean(str(k)): self.clean_json(v) for k, v in value.items()}
        return value

    def feed(self, chunk: str) -> str:
        """The part of the stream so far that is safe to show; the rest waits for more."""
        text = self.clean(self._pending + chunk)
        if not self._secrets:
            self._pending = ""
            return text
        cut = max(0, len(text) - self._hold)
        # Hold back only a tail that could still grow into a secret.
        while cut < len(text) and not any(s.startswith(text[cut:]) for s in self._secrets):
            cut += 1
        self._pending = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        """What was held back, at the end of the stream."""
        rest, self._pending = self._pending, ""
        return self.clean(rest)


class SecretValues:
    """Provided by a part (``app.provide(x, as_type=SecretValues)``): the secret values a workspace's steps and
    agents may have been given, for a sender to blank from what it sends out. This base knows none."""

    async def of(self, workspace_id: str) -> list[str]:
        return []


async def outgoing_redactor(app: AppContext, workspace_id: str, *extra: str) -> Redactor:
    """A ``Redactor.encoded`` of every secret ``SecretValues`` knows for the workspace, and ``extra`` (what the
    sender itself holds: the token it sends with)."""
    source = app.maybe_service(SecretValues) or SecretValues()
    return Redactor.encoded([*await source.of(workspace_id), *extra])
