from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hangar.errors import InvalidArgs
from hangar.rigs.egress.allowlist import (
    DEVELOPER_BASELINE,
    browser_default_allowlist,
    forge_host,
    matches,
    terminal_default_allowlist,
    validate_pattern,
)
from hangar.rigs.image.mirror import mirror_hosts


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


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_forge_host_from_the_worktree_remote(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    assert forge_host(repo) is None
    git(repo, "remote", "add", "upstream", "https://code.example.org/team/x.git")
    git(repo, "remote", "add", "origin", "git@forge.example.net:team/x.git")
    assert forge_host(repo) == "forge.example.net"  # origin wins
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "x")
    linked = tmp_path / "linked"
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "worktree", "add", "-q", str(linked))
    assert forge_host(linked) == "forge.example.net"


def test_terminal_default_has_baseline_mirrors_and_forge(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "https://git.example.com/a/b")
    allow = terminal_default_allowlist(repo)
    assert allow >= DEVELOPER_BASELINE
    assert {"github.com", "pypi.org", "registry.npmjs.org", "api.anthropic.com", "git.example.com"} <= allow
    assert mirror_hosts() <= allow
    for pattern in allow:
        validate_pattern(pattern)


def test_browser_default_is_the_site_and_archives_on_first_boot_only() -> None:
    assert browser_default_allowlist([], first_boot=False) == frozenset()
    assert browser_default_allowlist(["Hangar.Example.com", "127.0.0.1", "localhost"], first_boot=False) == {
        "hangar.example.com"
    }
    first = browser_default_allowlist([], first_boot=True)
    assert first == mirror_hosts()
    assert "pypi.org" not in first  # none of the terminal's developer baseline
