"""DOM key names (``Enter``, ``ArrowLeft``, ``a``, ``Control+a``) and what each protocol calls them.

The DevTools protocol wants the DOM ``key``, the physical ``code``, the Windows virtual key code and the text
the key types; WebDriver (BiDi and classic) wants one character, special keys as the code points of the
WebDriver key table (https://w3c.github.io/webdriver/#keyboard-actions).
"""

from __future__ import annotations

from dataclasses import dataclass

from hangar.errors import InvalidArgs


@dataclass(frozen=True)
class KeySpec:
    key: str  # the DOM key value: "Enter", "a", "A"
    code: str  # the physical key: "Enter", "KeyA"
    key_code: int  # Windows virtual key code
    text: str  # what the key types ("" for keys that type nothing)
    webdriver: str  # the WebDriver key action value

    @property
    def modifier_bit(self) -> int:
        """The DevTools protocol's modifier bit for a modifier key (Alt 1, Control 2, Meta 4, Shift 8), else 0."""
        return _MODIFIER_BITS.get(self.key, 0)


_MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}

# Named keys: (code, virtual key code, typed text, WebDriver code point).
_NAMED: dict[str, tuple[str, int, str, str]] = {
    "Enter": ("Enter", 13, "\r", "\ue007"),
    "Tab": ("Tab", 9, "\t", "\ue004"),
    "Backspace": ("Backspace", 8, "", "\ue003"),
    "Escape": ("Escape", 27, "", "\ue00c"),
    "Delete": ("Delete", 46, "", "\ue017"),
    "Insert": ("Insert", 45, "", "\ue016"),
    "Home": ("Home", 36, "", "\ue011"),
    "End": ("End", 35, "", "\ue010"),
    "PageUp": ("PageUp", 33, "", "\ue00e"),
    "PageDown": ("PageDown", 34, "", "\ue00f"),
    "ArrowLeft": ("ArrowLeft", 37, "", "\ue012"),
    "ArrowUp": ("ArrowUp", 38, "", "\ue013"),
    "ArrowRight": ("ArrowRight", 39, "", "\ue014"),
    "ArrowDown": ("ArrowDown", 40, "", "\ue015"),
    "Shift": ("ShiftLeft", 16, "", "\ue008"),
    "Control": ("ControlLeft", 17, "", "\ue009"),
    "Alt": ("AltLeft", 18, "", "\ue00a"),
    "Meta": ("MetaLeft", 91, "", "\ue03d"),
    "Pause": ("Pause", 19, "", "\ue00b"),
    "ContextMenu": ("ContextMenu", 93, "", "\ue004"),
    **{f"F{n}": (f"F{n}", 111 + n, "", chr(0xE030 + n)) for n in range(1, 13)},
}

_PUNCTUATION: dict[str, tuple[str, int]] = {
    " ": ("Space", 32), "-": ("Minus", 189), "=": ("Equal", 187), "[": ("BracketLeft", 219),
    "]": ("BracketRight", 221), "\\": ("Backslash", 220), ";": ("Semicolon", 186), "'": ("Quote", 222),
    ",": ("Comma", 188), ".": ("Period", 190), "/": ("Slash", 191), "`": ("Backquote", 192),
}  # fmt: skip


def key_spec(name: str) -> KeySpec:
    """The key a DOM key name stands for: a named key or one printable character. ``InvalidArgs`` otherwise."""
    if name == "Space":
        name = " "
    named = _NAMED.get(name)
    if named is not None:
        code, key_code, text, webdriver = named
        return KeySpec(name, code, key_code, text, webdriver)
    if len(name) != 1 or not name.isprintable():
        raise InvalidArgs(
            f"{name!r} is not a DOM key name (Enter, Tab, ArrowLeft, F5, a single character...)", field="key"
        )
    if name.isascii() and name.isalpha():
        return KeySpec(name, f"Key{name.upper()}", ord(name.upper()), name, name)
    if name.isdigit() and name.isascii():
        return KeySpec(name, f"Digit{name}", ord(name), name, name)
    code, key_code = _PUNCTUATION.get(name, ("", 0))
    return KeySpec(name, code, key_code, name, name)


@dataclass(frozen=True)
class Chord:
    """A key pressed with modifiers held: ``Control+Shift+a``."""

    modifiers: tuple[KeySpec, ...]
    key: KeySpec

    @property
    def modifier_bits(self) -> int:
        bits = 0
        for modifier in self.modifiers:
            bits |= modifier.modifier_bit
        return bits


def parse_chord(combo: str) -> Chord:
    """``Control+a`` -> Control held while ``a`` is pressed. A lone ``+`` is the plus key."""
    if combo == "+" or combo.endswith("++"):
        head, last = combo[:-1].rstrip("+"), "+"
        parts = [*([p for p in head.split("+")] if head else []), last]
    else:
        parts = combo.split("+")
    *mods, last = parts
    modifiers = []
    for name in mods:
        if name not in _MODIFIER_BITS:
            raise InvalidArgs(f"{name!r} in {combo!r} is not a modifier (Alt, Control, Meta, Shift)", field="key")
        modifiers.append(key_spec(name))
    return Chord(tuple(modifiers), key_spec(last))
