"""Egress allowlists: host name patterns (exact names or ``*.suffix``), matching, and the defaults per surface.

The terminal default follows the spec's egress table: the developer baseline (forges, package registries,
model providers), the distribution's apt mirrors (read from this machine's apt sources) and the worktree's own
forge host, taken from the server's record of the repo's origin (``git_url_host`` of the URL an admin registered),
never from the worktree: its ``.git`` file and config are the rig's to write, and a name read there would be
whatever the rig wanted reached. The browser default is the product site (by name, when it has one) plus
the distribution's package archives on an engine's first boot only; nothing else, so a page reaches only what
an admin grants.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from hangar.core.addresses import is_valid_name, normalize_host
from hangar.errors import InvalidArgs
from hangar.rigs.images.mirror import mirror_hosts

log = logging.getLogger("hangar.rigs.egress")

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


def fully_qualified(names: Iterable[str], what: str) -> frozenset[str]:
    """The ``names`` an allowlist can hold (fully qualified host names); the rest (a single label such as
    ``gitserver``, an IP literal) are logged and left out, so such a host in a repo origin or an apt source never
    keeps a rig from booting. An admin may grant the full name."""
    kept: set[str] = set()
    for name in names:
        value = normalize_host(name)
        if "." in value and is_valid_name(value):
            kept.add(value)
        else:
            log.warning("%s %r is not a fully qualified host name: it is left off the egress allowlist", what, name)
    return frozenset(kept)


def terminal_default_allowlist(forge_hosts: Iterable[str] = ()) -> frozenset[str]:
    """The terminal surface's default egress allowlist, with ``forge_hosts``: the hosts (``forge_host``) of the
    origins the server recorded for the rig's repos."""
    return (
        DEVELOPER_BASELINE
        | fully_qualified(mirror_hosts(), "the apt mirror")
        | fully_qualified(forge_hosts, "the forge host of a repo origin")
    )


def browser_default_allowlist(site_names: Iterable[str], *, first_boot: bool) -> frozenset[str]:
    """The browser surface's default egress allowlist: the product site's host names (IP literals are reached
    otherwise, see ``hooks.site_lane``) and, on the engine's first boot, the package archive hosts."""
    hosts = {normalize_host(n) for n in site_names if is_valid_name(normalize_host(n)) and "." in n}
    if first_boot:
        hosts |= fully_qualified(mirror_hosts(), "the apt mirror")
    return frozenset(hosts)
