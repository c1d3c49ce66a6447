"""Command lines for the device's own shell, and text for its ``input text``.

adb's shell service joins what it is given into one command line that the device's shell (``sh -c``) reads
again, so an argument is only ever one literal word on the device when it is quoted for that shell: each word is
put in single quotes (a single quote inside as ``'\\''``), unless it holds only characters no shell reads
specially. Nothing here runs on the host: adb is started with an argv list, and the line is one argument of it.

``input text`` types printable ASCII. It reads ``%s`` as a space (a space itself would end the argument on old
devices), so spaces are sent as ``%s``, and a literal ``%`` followed by ``s`` ends one ``input text`` and the
``s`` starts the next; a newline and a tab are sent as their keys (``KEYCODE_ENTER``, ``KEYCODE_TAB``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hangar.errors import InvalidArgs

_PLAIN = re.compile(r"^[A-Za-z0-9_./:@%+,-]+$")
# A device's adb takes a service line of at most 4 KB on old releases (its protocol's first payload size), so
# one shell call stays under it and longer input is sent in several.
MAX_LINE = 3500
TEXT_CHUNK = 512  # characters of text in one `input text`
# One `shell` verb's command line once quoted: adb's request to its server carries at most 64 KiB, and devices of
# today take a service line of up to 1 MiB; longer argv lists are refused rather than cut.
MAX_SHELL_LINE = 32 * 1024
KEYCODE_ENTER = 66
KEYCODE_TAB = 61


def quote(word: str) -> str:
    """``word`` as one literal word for a POSIX shell."""
    if _PLAIN.match(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def command_line(argv: Sequence[str]) -> str:
    words = [quote(w) for w in argv]
    if words and words[0].startswith("-"):
        # adb reads a line starting with "-x" as one of its own options: the program's name is quoted instead.
        words[0] = f"'{words[0]}'"
    return " ".join(words)


def shell_line(argv: Sequence[str], field: str = "action.argv") -> str:
    """The command line of one ``shell`` verb; ``InvalidArgs`` naming ``field`` past ``MAX_SHELL_LINE``."""
    line = command_line(argv)
    if len(line) > MAX_SHELL_LINE:
        raise InvalidArgs(
            f"{field}: quoted for the device's shell it is {len(line)} characters; at most {MAX_SHELL_LINE}",
            field=field,
        )
    return line


def lines(commands: Iterable[Sequence[str]]) -> list[str]:
    """The commands joined with ``;`` into as few lines as fit ``MAX_LINE`` each (one command per line at least)."""
    out: list[str] = []
    current = ""
    for argv in commands:
        one = command_line(argv)
        if current and len(current) + 3 + len(one) > MAX_LINE:
            out.append(current)
            current = ""
        current = f"{current} ; {one}" if current else one
    if current:
        out.append(current)
    return out


def _typable(text: str, field: str) -> None:
    for at, c in enumerate(text):
        if not (" " <= c <= "~" or c in "\n\t"):
            raise InvalidArgs(
                f"{field}: the device's `input text` types printable ASCII, newlines and tabs only; "
                f"U+{ord(c):04X} at position {at} cannot be typed",
                field=field,
            )


def _escape_run(run: str) -> list[str]:
    """One run of printable characters as ``input text`` arguments (spaces as ``%s``, ``%`` before ``s`` split)."""
    args: list[str] = []
    piece = ""
    for i, c in enumerate(run):
        piece += "%s" if c == " " else c
        ends = c == "%" and i + 1 < len(run) and run[i + 1] == "s"
        if ends or len(piece) >= TEXT_CHUNK:
            args.append(piece)
            piece = ""
    if piece:
        args.append(piece)
    return args


def typing_commands(text: str, field: str = "action.text") -> list[list[str]]:
    """The device commands that type ``text``: ``InvalidArgs`` naming ``field`` for a character none can type."""
    _typable(text, field)
    commands: list[list[str]] = []
    for part in re.split(r"([\n\t])", text):
        if part == "\n":
            commands.append(["input", "keyevent", str(KEYCODE_ENTER)])
        elif part == "\t":
            commands.append(["input", "keyevent", str(KEYCODE_TAB)])
        elif part:
            commands.extend(["input", "text", arg] for arg in _escape_run(part))
    return commands
