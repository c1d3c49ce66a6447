"""Which Debian mirrors rig images are built from: the ones this machine's apt is configured with.

Read at run time from ``/etc/apt/sources.list`` and ``/etc/apt/sources.list.d/*`` (one-line ``.list`` and
deb822 ``.sources`` files), so the repository never hard-codes a host. The first ``deb`` entry serving a
Debian suite of the wanted release (not ``-security`` or ``-updates``) is the mirror; the release's
``-updates`` and ``-security`` suites come along wherever the machine configures them, so a pack's browsers and
tools carry the security fixes the host itself gets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from hangar.errors import Unavailable

APT_ROOT = Path("/etc/apt")


@dataclass(frozen=True)
class AptEntry:
    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


def _one_line_entries(text: str) -> Iterable[AptEntry]:
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        words = line.split()[1:]
        if words and words[0].startswith("["):  # options such as [signed-by=...]
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            yield AptEntry(words[0], (words[1],), tuple(words[2:]))


def _deb822_entries(text: str) -> Iterable[AptEntry]:
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for raw in stanza.splitlines():
            if raw.startswith("#") or ":" not in raw or raw[:1].isspace():
                continue
            key, value = raw.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            yield AptEntry(uri, tuple(fields.get("suites", "").split()), tuple(fields.get("components", "").split()))


def apt_entries(apt_root: Path = APT_ROOT) -> list[AptEntry]:
    files: list[Path] = []
    if (apt_root / "sources.list").is_file():
        files.append(apt_root / "sources.list")
    part_dir = apt_root / "sources.list.d"
    if part_dir.is_dir():
        files.extend(sorted(p for p in part_dir.iterdir() if p.suffix in (".list", ".sources")))
    entries: list[AptEntry] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        entries.extend(_deb822_entries(text) if path.suffix == ".sources" else _one_line_entries(text))
    return entries


def debian_mirror(release: str = "bookworm", apt_root: Path = APT_ROOT) -> str:
    """The URI of the configured mirror serving ``release`` itself; ``Unavailable`` when there is none."""
    for entry in apt_entries(apt_root):
        if release in entry.suites and entry.uri.startswith(("http://", "https://")):
            return entry.uri.rstrip("/")
    raise Unavailable(
        f"no apt source for Debian {release} is configured in {apt_root}/sources.list*; "
        "the terminal image is built from the machine's configured mirror"
    )


def debian_sources(release: str = "bookworm", apt_root: Path = APT_ROOT) -> list[str]:
    """One-line apt sources for the image: the release from its mirror, then its ``-updates`` and ``-security``
    suites from wherever the machine takes them (first configured wins), main component only."""
    lines = [f"deb {debian_mirror(release, apt_root)} {release} main"]
    for suite in (f"{release}-updates", f"{release}-security"):
        for entry in apt_entries(apt_root):
            if suite in entry.suites and entry.uri.startswith(("http://", "https://")):
                lines.append(f"deb {entry.uri.rstrip('/')} {suite} main")
                break
    return lines


def mirror_hosts(apt_root: Path = APT_ROOT) -> frozenset[str]:
    """Host names of every configured Debian-archive apt source (for the egress allowlist)."""
    hosts = set()
    for entry in apt_entries(apt_root):
        host = urlsplit(entry.uri).hostname
        if host and "debian" in entry.uri:
            hosts.add(host.lower())
    return frozenset(hosts)
