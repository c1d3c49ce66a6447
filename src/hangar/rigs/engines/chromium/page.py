"""What engine A's session runs inside the page, and how it renders what the page returns.

The page-side functions are plain JavaScript applied with ``Runtime.callFunctionOn`` (arguments travel as JSON,
never spliced into source). Renderers turn the accessibility tree and console events into compact, capped text:
everything here comes from the page and is untrusted; the verb layer fences it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

A11Y_CAP = 256 * 1024  # characters of rendered accessibility tree
DOM_CAP = 1024 * 1024  # characters of outerHTML
CONSOLE_ENTRIES = 500  # the console ring's length
CONSOLE_ENTRY_CAP = 2000  # characters per console entry
CONSOLE_CAP = 256 * 1024  # characters of console text per extract

# The element itself (``this``), scrolled into the middle of the viewport, as its centre in viewport pixels.
CENTRE_OF = """function () {
  this.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  const r = this.getBoundingClientRect();
  return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
}"""

# How ``fill`` may replace the value: "text" (focused and selected, ready for inserted text), "direct" (a control
# typing cannot set: select, date, colour, range...) or "none" (not a form field).
PREPARE_FILL = """function () {
  const typed = ['', 'text', 'search', 'url', 'tel', 'email', 'password', 'number'];
  if (this instanceof HTMLSelectElement) return 'direct';
  const inert = ['file', 'checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'hidden'];
  if (this instanceof HTMLInputElement && !typed.includes(this.type)) {
    return inert.includes(this.type) ? 'none' : 'direct';
  }
  if (this instanceof HTMLInputElement || this instanceof HTMLTextAreaElement) {
    this.focus();
    this.select();
    return 'text';
  }
  if (this.isContentEditable) {
    this.focus();
    const range = document.createRange();
    range.selectNodeContents(this);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return 'text';
  }
  return 'none';
}"""

SET_VALUE = """function (value) {
  this.focus();
  this.value = value;
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
}"""

# A person's typing fires change when the field loses focus; fill is one complete edit, so it fires it now.
FIRE_CHANGE = "function () { this.dispatchEvent(new Event('change', {bubbles: true})); }"

# Resolves true once the selector matches, false when ``ms`` passed first. Mutations wake it; the interval
# catches what mutations miss (a matching pseudo-class such as :checked changing without an attribute).
WAIT_FOR = """function (selector, ms) {
  return new Promise((resolve) => {
    const found = () => document.querySelector(selector) !== null;
    if (found()) return resolve(true);
    const done = (value) => { observer.disconnect(); clearTimeout(timer); clearInterval(poll); resolve(value); };
    const observer = new MutationObserver(() => { if (found()) done(true); });
    observer.observe(document, {childList: true, subtree: true, attributes: true, characterData: true});
    const poll = setInterval(() => { if (found()) done(true); }, 100);
    const timer = setTimeout(() => done(found()), ms);
  });
}"""

# The file input at a point: the input itself, or the one a label there points at.
FILE_INPUT_AT = """function (x, y) {
  const hit = document.elementFromPoint(x, y);
  if (!hit) return null;
  const isFile = (el) => el instanceof HTMLInputElement && el.type === 'file';
  if (isFile(hit)) return hit;
  const label = hit.closest('label');
  return label && isFile(label.control) ? label.control : null;
}"""

# Whether the page has an asynchronous clipboard at all (secure contexts only), and its origin for the grant.
CLIPBOARD_ORIGIN = "window.isSecureContext && navigator.clipboard ? location.origin : null"

# Watches for a drag starting after a button went down; the object is reachable only through its handle.
DRAG_WATCH = """(() => {
  const state = {started: false};
  addEventListener('dragstart', () => { state.started = true; }, {capture: true, once: true});
  return state;
})()"""


def _text(value: object, cap: int = 200) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _ax_value(node: Mapping[str, Any], key: str) -> str:
    field = node.get(key)
    if not isinstance(field, Mapping):
        return ""
    value = field.get("value")
    return "" if value is None else str(value)


_QUIET_ROLES = frozenset({"generic", "none", "InlineTextBox", "LineBreak", "presentation"})
_STATES = ("focused", "checked", "selected", "expanded", "disabled", "required", "pressed")


def render_ax_tree(nodes: Iterable[Mapping[str, Any]]) -> str:
    """``Accessibility.getFullAXTree`` as indented ``role "name" value=... [states]`` lines, capped.

    Ignored nodes and unnamed wrappers (generic, none) are skipped but their children kept, one level up."""
    by_id = {str(node["nodeId"]): node for node in nodes if "nodeId" in node}
    children = {key: [str(c) for c in node.get("childIds", [])] for key, node in by_id.items()}
    listed = {child for kids in children.values() for child in kids}
    roots = [key for key in by_id if key not in listed]
    lines: list[str] = []
    size = 0
    stack: list[tuple[str, int]] = [(key, 0) for key in reversed(roots)]
    while stack:
        key, depth = stack.pop()
        node = by_id.get(key)
        if node is None:
            continue
        role, name = _ax_value(node, "role"), _ax_value(node, "name")
        shown = not node.get("ignored") and not (role in _QUIET_ROLES and not name)
        if shown:
            line = "  " * depth + (role or "?") + (f' "{_text(name)}"' if name else "")
            value = _ax_value(node, "value")
            if value:
                line += f" value={_text(value)!r}"
            states = [
                prop["name"]
                for prop in node.get("properties", [])
                if prop.get("name") in _STATES and prop.get("value", {}).get("value") not in (False, "false", None)
            ]
            if states:
                line += " [" + ", ".join(states) + "]"
            size += len(line) + 1
            if size > A11Y_CAP:
                lines.append("… (accessibility tree cut at its size cap)")
                break
            lines.append(line)
        next_depth = depth + 1 if shown else depth
        stack.extend((child, next_depth) for child in reversed(children.get(key, [])))
    return "\n".join(lines)


def _remote_object(obj: Mapping[str, Any]) -> str:
    if "value" in obj:
        value = obj["value"]
        return value if isinstance(value, str) else repr(value)
    return str(obj.get("unserializableValue") or obj.get("description") or obj.get("type", "?"))


class ConsoleRing:
    """The last ``CONSOLE_ENTRIES`` console calls and uncaught exceptions, each cut to its cap."""

    def __init__(self) -> None:
        self._entries: deque[str] = deque(maxlen=CONSOLE_ENTRIES)
        self._seen = 0

    def add(self, entry: str) -> None:
        self._seen += 1
        self._entries.append(_text(entry, CONSOLE_ENTRY_CAP))

    def console_call(self, params: Mapping[str, Any]) -> None:
        args = " ".join(_remote_object(arg) for arg in params.get("args", []))
        self.add(f"[{params.get('type', 'log')}] {args}")

    def exception(self, params: Mapping[str, Any]) -> None:
        details = params.get("exceptionDetails", {})
        thrown = details.get("exception") or {}
        text = thrown.get("description") or details.get("text") or "exception"
        where = f" ({details['url']}:{details.get('lineNumber', 0) + 1})" if details.get("url") else ""
        self.add(f"[exception] {text}{where}")

    def render(self) -> str:
        dropped = self._seen - len(self._entries)
        lines = [f"({dropped} earlier entries dropped)"] if dropped else []
        size = 0
        kept: list[str] = []
        for entry in reversed(self._entries):  # the newest entries matter most when the cap cuts
            size += len(entry) + 1
            if size > CONSOLE_CAP:
                lines.append("(older entries cut at the size cap)")
                break
            kept.append(entry)
        return "\n".join(lines + kept[::-1])


def jpeg_size(data: bytes) -> tuple[int, int]:
    """Width and height from a JPEG's start-of-frame segment; (0, 0) when there is none."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return 0, 0
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        i += 2 + length
    return 0, 0
