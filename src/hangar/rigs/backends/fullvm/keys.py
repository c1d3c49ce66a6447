"""X11 key names and typed characters as QEMU key codes (``qcode``), for input through QMP's
``input-send-event``: the VM's keyboard is a PC keyboard the guest reads with a US layout, so a character is a key
and whether shift is held with it.

A name X would know but the PC keyboard has no key for (a dead key, a keysym of another layout) is refused rather
than guessed: the caller names the field.
"""

from __future__ import annotations

import string

# X11 keysym names (and xdotool's modifier aliases) to qcodes; letters and digits are added below.
NAMES: dict[str, str] = {
    "Return": "ret", "KP_Enter": "kp_enter", "Tab": "tab", "ISO_Left_Tab": "tab", "BackSpace": "backspace",
    "Escape": "esc", "space": "spc", "Delete": "delete", "Insert": "insert", "Home": "home", "End": "end",
    "Page_Up": "pgup", "Prior": "pgup", "Page_Down": "pgdn", "Next": "pgdn", "Left": "left", "Right": "right",
    "Up": "up", "Down": "down", "Print": "print", "Pause": "pause", "Menu": "menu", "Caps_Lock": "caps_lock",
    "Num_Lock": "num_lock", "Scroll_Lock": "scroll_lock",
    "Shift_L": "shift", "Shift_R": "shift_r", "Control_L": "ctrl", "Control_R": "ctrl_r", "Alt_L": "alt",
    "Alt_R": "alt_r", "Super_L": "meta_l", "Super_R": "meta_r", "Meta_L": "meta_l", "Meta_R": "meta_r",
    "shift": "shift", "ctrl": "ctrl", "control": "ctrl", "alt": "alt", "super": "meta_l", "meta": "meta_l",
    "minus": "minus", "equal": "equal", "bracketleft": "bracket_left", "bracketright": "bracket_right",
    "backslash": "backslash", "semicolon": "semicolon", "apostrophe": "apostrophe", "grave": "grave_accent",
    "comma": "comma", "period": "dot", "slash": "slash",
}  # fmt: skip
NAMES.update({f"F{n}": f"f{n}" for n in range(1, 13)})
NAMES.update({c: c for c in string.ascii_lowercase})
NAMES.update({c: c.lower() for c in string.ascii_uppercase})  # xdotool's "ctrl+T" is ctrl and the t key
NAMES.update({d: d for d in string.digits})

# Typed characters on a US layout: the key, and whether shift goes with it.
_UNSHIFTED = {
    " ": "spc", "\n": "ret", "\t": "tab", "-": "minus", "=": "equal", "[": "bracket_left", "]": "bracket_right",
    "\\": "backslash", ";": "semicolon", "'": "apostrophe", "`": "grave_accent", ",": "comma", ".": "dot",
    "/": "slash",
}  # fmt: skip
_SHIFTED = {
    "!": "1", "@": "2", "#": "3", "$": "4", "%": "5", "^": "6", "&": "7", "*": "8", "(": "9", ")": "0",
    "_": "minus", "+": "equal", "{": "bracket_left", "}": "bracket_right", "|": "backslash", ":": "semicolon",
    '"': "apostrophe", "~": "grave_accent", "<": "comma", ">": "dot", "?": "slash",
}  # fmt: skip
CHARACTERS: dict[str, tuple[str, bool]] = {c: (c, False) for c in string.ascii_lowercase + string.digits}
CHARACTERS.update({c: (c.lower(), True) for c in string.ascii_uppercase})
CHARACTERS.update({c: (q, False) for c, q in _UNSHIFTED.items()})
CHARACTERS.update({c: (q, True) for c, q in _SHIFTED.items()})


def combo_codes(combo: str) -> list[str] | None:
    """The qcodes of ``ctrl+shift+t`` in press order, or None naming nothing when a name has no key here."""
    codes = [NAMES.get(name) for name in combo.split("+")]
    return None if any(code is None for code in codes) else [c for c in codes if c is not None]


def unknown_names(combo: str) -> list[str]:
    return [name for name in combo.split("+") if name not in NAMES]


def untypable(text: str) -> str:
    """The characters of ``text`` the VM's keyboard cannot type (none: empty)."""
    return "".join(sorted({c for c in text if c not in CHARACTERS}))
