"""Egress allowlists: host name patterns (exact names or ``*.suffix``), matching, and the defaults per surface.

The terminal default follows the spec's egress table: the developer baseline (forges, package registries,
model providers), the distribution's apt mirrors (read from this machine's apt sources) and the worktree's own
forge host (read from its git remote). The browser default is the product site (by name, when it has one) plus
the distribution's package archives on an engine's first boot only; nothing else, so a page reaches only what
an admin grants.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from hangar.errors import InvalidArgs
from hangar.rigs.image.mirror import mirror_hosts

_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")

FORGES = ("github.com", "*.github.com", "*.githubusercontent.com", "gitlab.com", "*.gitlab.com",
          "bitbucket.org", "*.bitbucket.org", "codeberg.org", "sr.ht", "*.sr.ht")  # fmt: skip
REGISTRIES = (
    "pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "registry.yarnpkg.com", "crates.io",
    "static.crates.io", "index.crates.io", "proxy.golang.org", "sum.golang.org", "rubygems.org",
    "repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "api.nuget.org", "packagist.org",
    "deb.nodesource.com", "nodejs.org", "static.rust-lang.org", "sh.rustup.rs", "go.dev", "dl.google.com",
)  # fmt: skip
MODEL_PROVIDERS = ("api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com",
                   "api.mistral.ai", "api.groq.com", "openrouter.ai")  # fmt: skip
DEVELOPER_BASELINE: frozenset[str] = frozenset(FORGES + REGISTRIES + MODEL_PROVIDERS)


def normalize_host(name: str) -> str:
    return name.strip().lower().rstrip(".")


def is_valid_name(name: str) -> bool:
    """A DNS host name (not an IP literal): labels of letters, digits, ``-``; the last label not numeric."""
    if not name or len(name) > 253:
        return False
    labels = name.split(".")
    return all(_LABEL.match(label) for label in labels) and not labels[-1].isdigit()


def validate_pattern(pattern: str, field: str = "hosts") -> str:
    """Return the normalized pattern or raise ``InvalidArgs`` naming ``field``."""
    value = normalize_host(pattern)
    name = value[2:] if value.startswith("*.") else value
    if "." not in name and not value.startswith("*."):
        # single labels (``localhost``, ``intranet``) are never egress targets
        raise InvalidArgs(f"{pattern!r} is not a fully qualified host name", field=field)
    if not is_valid_name(name):
        raise InvalidArgs(f"{pattern!r} is not a host name or *.suffix pattern", field=field)
    return value


def validate_patterns(patterns: Iterable[str], field: str = "hosts") -> frozenset[str]:
    return frozenset(validate_pattern(p, field) for p in patterns)


def matches(host: str, patterns: Iterable[str]) -> bool:
    name = normalize_host(host)
    if not is_valid_name(name):
        return False
    for pattern in patterns:
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]):
                return True
        elif name == pattern:
            return True
    return False


def forge_host(worktree: Path | None) -> str | None:
    """The host of the worktree's ``origin`` remote (or first remote), from its git config."""
    if worktree is None:
        return None
    git = worktree / ".git"
    config_path = git / "config"
    if git.is_file():  # a linked worktree: ".git" holds "gitdir: <path>"; the config is in the common dir
        text = git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = (worktree / text.split(":", 1)[1].strip()).resolve()
            common = gitdir / "commondir"
            base = (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir
            config_path = base / "config"
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(config_path.read_text(errors="replace"))
    except (OSError, configparser.Error):
        return None
    remotes = [s for s in parser.sections() if s.startswith('remote "')]
    remotes.sort(key=lambda s: s != 'remote "origin"')
    for section in remotes:
        url = parser.get(section, "url", fallback="")
        host = _url_host(url)
        if host and is_valid_name(host):
            return host
    return None


def _url_host(url: str) -> str | None:
    if "://" in url:
        return (urlsplit(url).hostname or "").lower() or None
    if ":" in url and "@" in url.split(":", 1)[0]:  # scp-like git@host:path
        return url.split("@", 1)[1].split(":", 1)[0].lower()
    return None


def terminal_default_allowlist(worktree: Path | None = None) -> frozenset[str]:
    """The terminal surface's default egress allowlist for a rig over ``worktree``."""
    hosts = set(DEVELOPER_BASELINE) | set(mirror_hosts())
    forge = forge_host(worktree)
    if forge:
        hosts.add(forge)
    return frozenset(hosts)


def browser_default_allowlist(site_names: Iterable[str], *, first_boot: bool) -> frozenset[str]:
    """The browser surface's default egress allowlist: the product site's host names (IP literals are reached
    otherwise, see ``hooks.site_lane``) and, on the engine's first boot, the package archive hosts."""
    hosts = {normalize_host(n) for n in site_names if is_valid_name(normalize_host(n)) and "." in n}
    if first_boot:
        hosts |= mirror_hosts()
    return frozenset(hosts)
