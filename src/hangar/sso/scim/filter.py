"""The SCIM filter and PATCH-path grammar of RFC 7644 §3.4.2.2 and §3.5.2, parsed into a small AST.

Written here rather than taken from a library so that every refusal is ours to word (the message says where the
filter went wrong) and so that the AST is the one both evaluators read: ``match`` (in memory, for PATCH targets)
and ``sql`` (listing, translated to one SQL query). The grammar, with ``not`` binding tighter than ``and``, which
binds tighter than ``or``:

    FILTER    = orExp
    orExp     = andExp *("or" andExp)
    andExp    = unary *("and" unary)
    unary     = "not" "(" FILTER ")" / "(" FILTER ")" / valuePath / attrExp
    valuePath = attrPath "[" valFilter "]"          ; valFilter: FILTER without nested valuePath
    attrExp   = attrPath "pr" / attrPath compareOp compValue
    compareOp = "eq" / "ne" / "co" / "sw" / "ew" / "gt" / "ge" / "lt" / "le"
    compValue = "false" / "null" / "true" / number / string   ; JSON literals
    attrPath  = [URI ":"] ATTRNAME ["." ATTRNAME]
    PATH      = attrPath / valuePath ["." ATTRNAME]   ; PATCH paths

Keywords, operators, literals and attribute names are case-insensitive; names keep their spelling in the AST
and are compared lower-cased by the binder.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_FILTER_LENGTH = 4096
MAX_DEPTH = 40

COMPARE_OPS: frozenset[str] = frozenset({"eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"})
_KEYWORDS: frozenset[str] = frozenset({"and", "or", "not", "pr"})

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")
  | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_]))
  | (?P<subattr>\.[A-Za-z$][A-Za-z0-9_$-]*)
  | (?P<word>[A-Za-z$][A-Za-z0-9_$:.\-]*)
  | (?P<punct>[()\[\]])
    """,
    re.VERBOSE,
)
_ATTRNAME = re.compile(r"^[A-Za-z$][A-Za-z0-9_$-]*$")


class FilterSyntaxError(ValueError):
    """A filter or path that does not parse; the message says where."""


@dataclass(frozen=True)
class AttrPath:
    uri: str | None
    attr: str
    sub: str | None = None

    def __str__(self) -> str:
        head = f"{self.uri}:" if self.uri else ""
        return f"{head}{self.attr}" + (f".{self.sub}" if self.sub else "")


@dataclass(frozen=True)
class Compare:
    path: AttrPath
    op: str
    value: Any


@dataclass(frozen=True)
class Present:
    path: AttrPath


@dataclass(frozen=True)
class And:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Or:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Not:
    inner: Filter


@dataclass(frozen=True)
class ValuePath:
    path: AttrPath
    filter: Filter


Filter = Compare | Present | And | Or | Not | ValuePath


@dataclass(frozen=True)
class PatchPath:
    """A PATCH ``path``: an attribute, optionally narrowed by a value filter and then a sub-attribute."""

    attr: AttrPath
    filter: Filter | None = None
    sub: str | None = None


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterSyntaxError(f"the filter is longer than {MAX_FILTER_LENGTH} characters")
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FilterSyntaxError(f"unexpected character {text[pos]!r} at position {pos + 1}")
        kind = m.lastgroup or ""
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    return toks


def parse_attr_path(word: str, pos: int = 0) -> AttrPath:
    """``[URI:]name[.sub]``; a URI is everything up to the last colon."""
    uri: str | None = None
    rest = word
    if ":" in word:
        uri, rest = word.rsplit(":", 1)
        if not uri.lower().startswith("urn:"):
            raise FilterSyntaxError(f"{word!r} at position {pos + 1} is not an attribute path")
    parts = rest.split(".")
    if len(parts) > 2 or not all(_ATTRNAME.match(p) for p in parts):
        raise FilterSyntaxError(f"{word!r} at position {pos + 1} is not an attribute path")
    return AttrPath(uri, parts[0], parts[1] if len(parts) == 2 else None)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def where(self) -> str:
        tok = self.peek()
        return f"at position {tok.pos + 1}" if tok else "at the end"

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise FilterSyntaxError("the filter ends too early")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.peek()
        if tok is None or tok.text != text:
            found = repr(tok.text) if tok else "the end"
            raise FilterSyntaxError(f"expected {text!r} {self.where()}, found {found}")
        self.i += 1

    def is_word(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "word" and tok.text.lower() in words

    def filter(self, in_value_path: bool) -> Filter:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterSyntaxError(f"the filter nests deeper than {MAX_DEPTH} levels")
        left = self.and_exp(in_value_path)
        while self.is_word("or"):
            self.i += 1
            left = Or(left, self.and_exp(in_value_path))
        self.depth -= 1
        return left

    def and_exp(self, in_value_path: bool) -> Filter:
        left = self.unary(in_value_path)
        while self.is_word("and"):
            self.i += 1
            left = And(left, self.unary(in_value_path))
        return left

    def unary(self, in_value_path: bool) -> Filter:
        tok = self.peek()
        if tok is None:
            raise FilterSyntaxError("the filter ends where an expression was expected")
        if tok.kind == "word" and tok.text.lower() == "not":
            nxt = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if nxt is not None and nxt.text == "(":
                self.i += 2
                inner = self.filter(in_value_path)
                self.expect(")")
                return Not(inner)
            raise FilterSyntaxError(f"'not' at position {tok.pos + 1} must be followed by '('")
        if tok.text == "(":
            self.i += 1
            inner = self.filter(in_value_path)
            self.expect(")")
            return inner
        if tok.kind != "word" or tok.text.lower() in _KEYWORDS | COMPARE_OPS:
            raise FilterSyntaxError(f"expected an attribute path at position {tok.pos + 1}, found {tok.text!r}")
        self.i += 1
        path = parse_attr_path(tok.text, tok.pos)
        nxt = self.peek()
        if nxt is not None and nxt.text == "[":
            if in_value_path:
                raise FilterSyntaxError(f"a value filter cannot nest another one (position {nxt.pos + 1})")
            if path.sub is not None:
                raise FilterSyntaxError(f"a value filter applies to an attribute, not to {path} ")
            self.i += 1
            inner = self.filter(True)
            self.expect("]")
            return ValuePath(path, inner)
        return self.attr_exp(path)

    def attr_exp(self, path: AttrPath) -> Filter:
        tok = self.peek()
        if tok is None or tok.kind != "word":
            raise FilterSyntaxError(f"expected an operator after {path} {self.where()}")
        opname = tok.text.lower()
        self.i += 1
        if opname == "pr":
            return Present(path)
        if opname not in COMPARE_OPS:
            raise FilterSyntaxError(f"unknown operator {tok.text!r} at position {tok.pos + 1}")
        return Compare(path, opname, self.comp_value(path, opname))

    def comp_value(self, path: AttrPath, opname: str) -> Any:
        tok = self.peek()
        if tok is None:
            raise FilterSyntaxError(f"'{path} {opname}' needs a value")
        self.i += 1
        if tok.kind == "string":
            return json.loads(tok.text)
        if tok.kind == "number":
            value = json.loads(tok.text)
            return value
        literal = tok.text.lower()
        if tok.kind == "word" and literal in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[literal]
        raise FilterSyntaxError(
            f"expected a string, number, true, false or null at position {tok.pos + 1}, found {tok.text!r}"
        )

    def done(self) -> None:
        tok = self.peek()
        if tok is not None:
            raise FilterSyntaxError(f"unexpected {tok.text!r} at position {tok.pos + 1}")


def parse_filter(text: str) -> Filter:
    """Parse a ``filter`` query parameter."""
    if not text.strip():
        raise FilterSyntaxError("the filter is empty")
    parser = _Parser(text)
    result = parser.filter(False)
    parser.done()
    return result


def parse_path(text: str) -> PatchPath:
    """Parse a PATCH ``path``: ``attrPath``, ``attr[valFilter]`` or ``attr[valFilter].sub``."""
    if not text.strip():
        raise FilterSyntaxError("the path is empty")
    parser = _Parser(text)
    tok = parser.take()
    if tok.kind != "word":
        raise FilterSyntaxError(f"expected an attribute path at position {tok.pos + 1}, found {tok.text!r}")
    attr = parse_attr_path(tok.text, tok.pos)
    if parser.peek() is None:
        return PatchPath(attr)
    if attr.sub is not None:
        raise FilterSyntaxError(f"a value filter applies to an attribute, not to {attr}")
    parser.expect("[")
    flt = parser.filter(True)
    parser.expect("]")
    sub: str | None = None
    nxt = parser.peek()
    if nxt is not None and nxt.kind == "subattr":
        parser.i += 1
        sub = nxt.text[1:]
    parser.done()
    return PatchPath(attr, flt, sub)
