"""The scan's text checks, pure functions over a skill's files (no I/O): each returns ``Finding``s.

- ``binary``: a file that is not UTF-8 text, holds a NUL, or starts with an executable's magic (ELF, PE, Mach-O):
  nobody can read what it does, so it blocks;
- ``secret``: credentials written into the skill (cloud and forge tokens, model-provider keys, private keys). The
  finding names the kind and the line, never the value;
- ``obfuscation``: an encoded blob fed to an interpreter (``base64 -d | sh``, ``exec(b64decode(...))``,
  ``eval(atob(...))``), which hides what runs: blocks;
- ``instructionOverride``: text telling the agent to drop its rules (ignore previous instructions, reveal the system
  prompt, act without telling the user, bypass approvals): blocks;
- ``destinations``: the hosts the files name in URLs and on network tools' command lines, for the scan to hold
  against the workspace's allowlist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

BLOCK = "block"
REVIEW = "review"


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # ``block`` or ``review``
    message: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
        }


_MAGIC = (
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Mach-O or Java binary"),
    (b"\x00asm", "a WebAssembly module"),
)

SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{20,}\b")),
    ("a private key", re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY( BLOCK)?-----")),
)

_INTERPRETER = r"(?:ba|da|z|k|c)?sh|python[0-9.]*|perl|ruby|node|php|pwsh|powershell"
OBFUSCATION: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decoded base64 piped to an interpreter",
     re.compile(rf"base64\s+(?:-d|--decode|-D)\b[^\n]*\|\s*(?:sudo\s+)?(?:{_INTERPRETER})\b", re.I)),
    ("decoded hex piped to an interpreter",
     re.compile(rf"xxd\s+-r\b[^\n]*\|\s*(?:sudo\s+)?(?:{_INTERPRETER})\b", re.I)),
    ("an interpreter run on decoded text",
     re.compile(rf"(?:{_INTERPRETER})\s+(?:-c\s+)?[\"']?\$\(\s*(?:echo|printf)[^\n]*base64\s+(?:-d|--decode)", re.I)),
    ("eval of decoded text", re.compile(r"\beval\s+[\"']?\$\([^\n]*(?:base64|xxd|openssl\s+enc)", re.I)),
    ("exec or eval of decoded data",
     re.compile(r"\b(?:exec|eval|compile)\s*\(\s*(?:[\w.]*\.)?(?:b64decode|b32decode|b16decode|a85decode|"
                r"decodebytes|unhexlify|fromhex|decompress|loads|decode)\b")),
    ("exec or eval of decoded data",
     re.compile(r"\b(?:exec|eval)\s*\(\s*(?:__import__\(\s*['\"](?:base64|zlib|marshal|codecs)['\"]\s*\)|"
                r"bytes\.fromhex|codecs\.decode)")),
    ("JavaScript eval of decoded text",
     re.compile(r"\b(?:eval|Function|setTimeout)\s*\(\s*(?:atob|Buffer\.from|unescape|decodeURIComponent)\s*\(")),
)  # fmt: skip

OVERRIDES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|every\s+)*(?:previous|prior|above|earlier|"
        r"preceding|your|system|other|existing)\s+(?:\w+\s+)?(?:instructions|rules|prompts?|guidelines|directives|"
        r"guardrails)",
        r"\b(?:reveal|print|output|show|leak|repeat|disclose)\s+(?:\w+\s+){0,2}(?:system\s+prompt|hidden\s+"
        r"instructions|developer\s+(?:message|prompt))",
        r"\byou\s+are\s+no\s+longer\b",
        r"\b(?:without|never)\s+(?:telling|asking|informing|notifying)\s+the\s+user\b",
        r"\bdo\s+not\s+(?:tell|inform|ask|notify|let)\s+the\s+user\b",
        r"\b(?:bypass|skip|disable|circumvent)\s+(?:\w+\s+)?(?:guardrails?|approvals?|confirmations?|sandbox|"
        r"safety\s+(?:checks|rules))",
    )
)

_URL = re.compile(r"\b(?:https?|wss?|ftp)://([^\s/\"'<>()\[\]{}`|;,]+)", re.I)
# A network tool's command line names its destination without a scheme too (``curl evil.example/x``, ``nc 1.2.3.4
# 443``, ``scp f user@host:``): the words after the tool that look like a host name or an address.
_TOOL = re.compile(r"\b(?:curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp|socat)\b[^\n|;&]*", re.I)
_HOSTLIKE = re.compile(
    r"(?<![\w./:@-])(?:[\w.-]+@)?((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}|\d{1,3}(?:\.\d{1,3}){3})(?=[:/\s\"']|$)",
    re.I,
)
# The last labels of file names a command line also holds (``-o out.json``), never taken for a host.
_FILE_ENDINGS = frozenset(
    {
        "sh",
        "bash",
        "py",
        "txt",
        "json",
        "md",
        "gz",
        "tgz",
        "tar",
        "zip",
        "log",
        "out",
        "tmp",
        "yaml",
        "yml",
        "toml",
        "cfg",
        "conf",
        "ini",
        "html",
        "htm",
        "js",
        "ts",
        "csv",
        "xml",
        "pem",
        "key",
        "crt",
        "deb",
        "rpm",
        "whl",
        "lock",
        "env",
    }
)
MAX_HOSTS = 1000  # distinct hosts read from one file; a file naming more says so through its first ones
MAX_FINDINGS_PER_CHECK = 20  # per file: a file that repeats a problem a thousand times says so in 20 findings


def text_of(data: bytes) -> str | None:
    """``data`` as text, or None when it is binary (``binary`` reports it)."""
    # Every executable format holds NULs or bytes that are not UTF-8; ELF's magic is checked too for a stub.
    if b"\0" in data or data.startswith(b"\x7fELF"):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def binary(name: str, data: bytes) -> list[Finding]:
    if text_of(data) is not None:
        return []
    what = next((label for magic, label in _MAGIC if data.startswith(magic)), "not UTF-8 text")
    return [Finding("binary", BLOCK, f"{name} is a binary file ({what}): what it does cannot be read", name)]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _matches(
    name: str, text: str, patterns: tuple[tuple[str, re.Pattern[str]], ...], kind: str, how: str, severity: str
) -> list[Finding]:
    found: list[Finding] = []
    for label, pattern in patterns:
        for m in pattern.finditer(text):
            found.append(Finding(kind, severity, how.format(label=label), name, _line(text, m.start())))
            if len(found) >= MAX_FINDINGS_PER_CHECK:
                return found
    return found


def secrets(name: str, text: str) -> list[Finding]:
    return _matches(name, text, SECRETS, "secret", "{label} is written into the skill (its value is not shown)", BLOCK)


def obfuscation(name: str, text: str) -> list[Finding]:
    return _matches(name, text, OBFUSCATION, "obfuscation", "{label}: what runs is hidden", BLOCK)


def instruction_overrides(name: str, text: str) -> list[Finding]:
    found: list[Finding] = []
    for pattern in OVERRIDES:
        for m in pattern.finditer(text):
            quote = " ".join(m.group(0).split())[:80]
            found.append(
                Finding(
                    "instructionOverride",
                    BLOCK,
                    f"the text tells the agent to drop its rules: {quote!r}",
                    name,
                    _line(text, m.start()),
                )
            )
            if len(found) >= MAX_FINDINGS_PER_CHECK:
                return found
    return found


def destinations(text: str) -> list[tuple[str, int]]:
    """The hosts named in URLs in ``text`` with the line of their first mention, lowercased, without port or
    user."""
    seen: dict[str, int] = {}
    for m in _URL.finditer(text):
        try:
            host = urlsplit("http://" + m.group(1)).hostname
        except ValueError:
            continue
        if host:
            seen.setdefault(host.rstrip("."), _line(text, m.start()))
        if len(seen) >= MAX_HOSTS:
            return list(seen.items())
    for tool in _TOOL.finditer(text):
        for word in _HOSTLIKE.finditer(tool.group(0)):
            host = word.group(1).lower()
            if host.rsplit(".", 1)[-1] not in _FILE_ENDINGS:
                seen.setdefault(host, _line(text, tool.start()))
        if len(seen) >= MAX_HOSTS:
            break
    return list(seen.items())


def verdict(findings: list[Finding]) -> str:
    if any(f.severity == BLOCK for f in findings):
        return "blocked"
    return "review" if findings else "pass"
