from __future__ import annotations

import pytest

from hangar.core.addresses import git_url_host as forge_host
from hangar.errors import InvalidArgs
from hangar.rigs.egress import allowlist
from hangar.rigs.egress.allowlist import (
    DEVELOPER_BASELINE,
    browser_default_allowlist,
    fully_qualified,
    matches,
    terminal_default_allowlist,
    validate_pattern,
    validate_patterns,
)
from hangar.rigs.images.mirror import mirror_hosts


def test_patterns_are_normalized_and_validated() -> None:
    assert validate_pattern("  PyPI.org. ") == "pypi.org"
    assert validate_pattern("*.GitHub.com") == "*.github.com"
    for bad in ("localhost", "1.2.3.4", "exa mple.com", "*", "a..b", "-x.com", "http://x.com", ""):
        with pytest.raises(InvalidArgs) as err:
            validate_pattern(bad, "allow_hosts")
        assert err.value.field == "allow_hosts"


def test_matching_exact_and_suffix() -> None:
    allow = {"pypi.org", "*.github.com"}
    assert matches("PYPI.ORG", allow)
    assert matches("api.github.com", allow) and matches("a.b.github.com", allow)
    assert not matches("github.com", allow)  # "*.suffix" covers subdomains only
    assert not matches("evilgithub.com", allow)
    assert not matches("pypi.org.evil.com", allow)
    assert not matches("198.18.0.1", allow)


def test_forge_host_of_a_recorded_origin() -> None:
    assert forge_host("https://Code.Example.org/team/x.git") == "code.example.org"
    assert forge_host("ssh://git@forge.example.net:2222/team/x.git") == "forge.example.net"
    assert forge_host("git@forge.example.net:team/x.git") == "forge.example.net"
    assert forge_host("file:///srv/git/x.git") is None
    assert forge_host("/srv/git/x.git") is None


def test_terminal_default_has_baseline_mirrors_and_the_recorded_forges() -> None:
    allow = terminal_default_allowlist(["git.example.com"])
    assert allow >= DEVELOPER_BASELINE
    assert {"github.com", "pypi.org", "registry.npmjs.org", "api.anthropic.com", "git.example.com"} <= allow
    assert fully_qualified(mirror_hosts(), "mirror") <= allow
    for pattern in allow:
        validate_pattern(pattern)


def test_single_labels_and_ip_literals_are_left_off_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    """A repo origin such as http://gitserver/x.git names no host the allowlist can hold: it is left off (logged)
    and the list stays valid, so the space's rigs still boot."""
    allow = terminal_default_allowlist(["gitserver", "10.0.0.5", "[fd00::5]", "git.example.com"])
    assert "git.example.com" in allow and not {"gitserver", "10.0.0.5", "[fd00::5]"} & allow
    for pattern in allow:
        validate_pattern(pattern)
    assert "'gitserver' is not a fully qualified host name" in caplog.text


def test_browser_default_is_the_site_and_archives_on_first_boot_only() -> None:
    assert browser_default_allowlist([], first_boot=False) == frozenset()
    assert browser_default_allowlist(["Hangar.Example.com", "127.0.0.1", "localhost"], first_boot=False) == {
        "hangar.example.com"
    }
    first = browser_default_allowlist([], first_boot=True)
    assert first == mirror_hosts()
    assert "pypi.org" not in first  # none of the terminal's developer baseline


def test_an_apt_source_by_single_label_or_address_does_not_break_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host whose apt sources name a LAN cache by address (http://10.0.0.5/debian) or a single label: those
    hosts are left off both defaults, which stay valid, so every rig still boots."""
    monkeypatch.setattr(allowlist, "mirror_hosts", lambda: frozenset({"10.0.0.5", "aptcache", "deb.debian.org"}))
    for allow in (terminal_default_allowlist(), browser_default_allowlist([], first_boot=True)):
        assert "deb.debian.org" in allow and not {"10.0.0.5", "aptcache"} & allow
        assert validate_patterns(allow) == allow
