"""The slash command: ``/<command> help``, ``link <code>``, ``ticket <title> | <description>``, anything else.

The command word is whatever the app was last invoked with (an admin may rename it in the bot profile), so the
help text names the word of the invocation it answers. Parsing is pure; ``hangar.chat.bridge`` acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verb = Literal["help", "link", "ticket", "unknown"]


@dataclass(frozen=True)
class Command:
    verb: Verb
    argument: str  # what followed the verb, trimmed
    word: str  # the verb as typed, for the unknown-verb answer


def parse(text: str) -> Command:
    """The verb and its argument of ``/<command> <text>``; no verb at all is ``help``."""
    head, _, rest = text.strip().partition(" ")
    verb = head.lower()
    if verb in ("", "help"):
        return Command("help", rest.strip(), head)
    if verb in ("link", "ticket"):
        return Command(verb, rest.strip(), head)  # type: ignore[arg-type]  # narrowed by the membership test
    return Command("unknown", rest.strip(), head)


def ticket_parts(argument: str) -> tuple[str, str]:
    """``<title> | <description>``: everything after the first ``|`` is the description."""
    title, _, description = argument.partition("|")
    return title.strip(), description.strip()


def help_text(command: str) -> str:
    c = command if command.startswith("/") else f"/{command}"
    return "\n".join(
        [
            "Here is what I can do:",
            "• Mention me in a channel to ask a workspace agent; reply in the thread to go on.",
            "• Send me a direct message to talk with the workspace's agents one to one.",
            f"• `{c} link <code>` links your chat account to your Hangar account (get the code in the "
            "workspace settings, under Chat bridge).",
            f"• `{c} ticket <title> | <description>` files a ticket in the workspace.",
            f"• `{c} help` shows this.",
        ]
    )


def unknown_text(command: str, word: str) -> str:
    c = command if command.startswith("/") else f"/{command}"
    return f"`{c} {word}` is not something I know.\n" + help_text(command)
