"""Gzip for the web client's hashed assets: each file is compressed once, on its first request, and kept in memory
keyed by its path, modification time and size (a rebuild writes new names, so entries of an old build simply stop
being asked for; a byte budget bounds what is kept). The first load then sends about a third of the bytes."""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

# Text formats that shrink; images other than SVG and fonts are compressed already.
COMPRESSIBLE_SUFFIXES: frozenset[str] = frozenset({".js", ".mjs", ".css", ".svg", ".json", ".map", ".txt", ".wasm"})
MIN_SIZE = 1024  # below this the gzip header and a second round trip of decoding are not worth it
LEVEL = 9  # once per file per build, so the slowest, smallest setting


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header admits gzip: named (or ``*``) with a quality above zero, and not
    refused by name when ``*`` admits it."""
    named: float | None = None
    star: float | None = None
    for item in accept_encoding.split(","):
        coding, _, params = item.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        coding = coding.strip().lower()
        if coding in ("gzip", "x-gzip"):
            named = quality
        elif coding == "*":
            star = quality
    if named is not None:
        return named > 0
    return star is not None and star > 0


def is_compressible(path: str | os.PathLike[str], size: int) -> bool:
    return size >= MIN_SIZE and Path(path).suffix.lower() in COMPRESSIBLE_SUFFIXES


class GzipCache:
    """Compressed bodies of files, keyed by (path, mtime_ns, size); at most ``budget`` bytes kept, the oldest
    entries dropped first."""

    def __init__(self, budget: int = 64 * 1024 * 1024) -> None:
        self._budget = budget
        self._bodies: dict[tuple[str, int, int], bytes] = {}
        self._kept = 0
        self._lock = threading.Lock()

    def body(self, path: str | os.PathLike[str], stat: os.stat_result) -> bytes:
        """The gzip body of the file (compressed now when not kept yet). Blocking: call it from a worker thread."""
        key = (os.fspath(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            kept = self._bodies.get(key)
        if kept is not None:
            return kept
        # mtime=0: the same file always compresses to the same bytes.
        body = gzip.compress(Path(path).read_bytes(), compresslevel=LEVEL, mtime=0)
        with self._lock:
            if key not in self._bodies:
                self._bodies[key] = body
                self._kept += len(body)
                while self._kept > self._budget and len(self._bodies) > 1:
                    oldest = next(iter(self._bodies))
                    self._kept -= len(self._bodies.pop(oldest))
        return body

    @property
    def kept_bytes(self) -> int:
        return self._kept
