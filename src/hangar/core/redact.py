"""Secrets a program was given never come back out through what it prints.

A command agent's stdout streams into its space and its stderr into error messages, where every member reads
them; a program that echoes its environment (or a crash dump) would otherwise publish the agent's API keys and
its run credential; a shell step's output and error would publish its forge token. ``Redactor`` replaces each
secret value with a marker, also when a value arrives split across two chunks of a stream: it holds back the
last few characters (shorter than the longest secret) until the next chunk or the end shows they are not the
start of one.
"""

from __future__ import annotations

from collections.abc import Iterable

MARK = "[redacted]"
MIN_SECRET = 8  # shorter values are too likely to be ordinary words or numbers to be worth blanking


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)
        self._hold = max((len(s) for s in self._secrets), default=1) - 1
        self._pending = ""

    def clean(self, text: str) -> str:
        """``text`` with every secret replaced (a whole text, not a stream)."""
        for secret in self._secrets:
            text = text.replace(secret, MARK)
        return text

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
