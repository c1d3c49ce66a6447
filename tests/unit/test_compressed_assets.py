"""Which requests get gzipped assets, and the in-memory cache of compressed bodies."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from hangar.server.compressed import GzipCache, accepts_gzip, is_compressible


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip, deflate, br, zstd", True),
        ("GZIP", True),
        ("br;q=1.0, gzip;q=0.8", True),
        ("x-gzip", True),
        ("*", True),
        ("", False),
        ("identity", False),
        ("br", False),
        ("gzip;q=0", False),
        ("gzip;q=0.0, *", False),  # refused by name wins over the wildcard
        ("*;q=0", False),
        ("gzip;q=bogus", False),
    ],
)
def test_accepts_gzip(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected


def test_only_text_formats_large_enough_are_compressed() -> None:
    assert is_compressible("a/index-1.js", 5000)
    assert is_compressible("a/index-1.CSS", 5000)
    assert not is_compressible("a/index-1.js", 100)
    assert not is_compressible("a/logo-1.png", 50_000)
    assert not is_compressible("a/font-1.woff2", 50_000)


def test_the_cache_compresses_once_per_version_within_its_budget(tmp_path: Path) -> None:
    cache = GzipCache(budget=3000)
    a = tmp_path / "a.js"
    a.write_text("a" * 100_000)
    body = cache.body(a, a.stat())
    assert gzip.decompress(body) == b"a" * 100_000
    # Same path, time and size: the kept body, not read again (a rewrite with the old time does not show).
    first = a.stat()
    a.write_text("b" * 100_000)
    os.utime(a, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert cache.body(a, a.stat()) is body
    # A new modification time is a new version: compressed afresh.
    os.utime(a, ns=(first.st_atime_ns, first.st_mtime_ns + 1_000_000))
    assert gzip.decompress(cache.body(a, a.stat())) == b"b" * 100_000
    # Over budget: the oldest are dropped, the newest kept.
    for i in range(30):
        f = tmp_path / f"f{i}.js"
        f.write_bytes(os.urandom(500))
        cache.body(f, f.stat())
    assert cache.kept_bytes <= 3000 + 600
    assert (str(tmp_path / "f29.js"), (tmp_path / "f29.js").stat().st_mtime_ns, 500) in cache._bodies
