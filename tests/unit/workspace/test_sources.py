"""Clone URLs taken apart strictly: the host the rules check is the host git and curl connect to, so anything the
parsers could read differently (a backslash, a second ``@``, a percent sign or a non-ASCII letter in the host) is
refused, and so are remote helpers (``<transport>::<address>``) and hosts ssh would read as options."""

from __future__ import annotations

import pytest

from hangar.errors import InvalidArgs
from hangar.workspace.sources import Source, parse_url


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("https://github.com/team/app.git", Source("https", "github.com", 443)),
        ("HTTP://Forge.Example.Test.:8080/a.git", Source("http", "Forge.Example.Test.", 8080)),
        ("https://[2001:db8::1]/a.git", Source("https", "2001:db8::1", 443)),
        ("https://token-user@forge.example.test/a.git", Source("https", "forge.example.test", 443)),
        ("ssh://git@forge.example.test:2222/a.git", Source("ssh", "forge.example.test", 2222)),
        ("git@forge.example.test:team/a.git", Source("ssh", "forge.example.test", 22)),
        ("git://forge.example.test/a.git", Source("git", "forge.example.test", 9418)),
        ("file:///srv/git/a%20b.git", Source("file", path="/srv/git/a b.git")),
        ("https://forge.example.test:65535/a.git", Source("https", "forge.example.test", 65535)),
        ("https://forge.example.test:1/a.git", Source("https", "forge.example.test", 1)),
    ],
)
def test_clone_urls(url: str, source: Source) -> None:
    assert parse_url(url) == source


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("ext::sh -c id", "names a git remote helper"),
        ("fd::3", "names a git remote helper"),
        ("testgit::/srv/a", "names a git remote helper"),
        ("https://evil.example\\@127.0.0.1/a.git", "is not a clone URL"),
        ("https://a@b@127.0.0.1/a.git", "must be a host name, an IP address"),
        ("https://forge%2eexample.test/a.git", "must be a host name, an IP address"),
        ("https://bücher.example/a.git", "must be a host name, an IP address"),
        ("https://[fe80::1%25eth0]/a.git", "must be a host name, an IP address"),
        ("https://forge.example.test:0/a.git", "the port of"),
        ("https://forge.example.test:65536/a.git", "the port of"),
        ("ssh://-oProxyCommand/a.git", "must not start with '-'"),
        ("-oProxyCommand@host:a.git", "must not start with '-'"),
        ("ftp://forge.example.test/a.git", "is not a clone URL"),
        ("forge.example.test:a.git", "is not a clone URL"),
        ("https://forge.example.test/a b.git", "is not a clone URL"),
    ],
)
def test_what_is_refused(url: str, needle: str) -> None:
    with pytest.raises(InvalidArgs) as err:
        parse_url(url)
    assert needle in err.value.message and err.value.field == "url"
