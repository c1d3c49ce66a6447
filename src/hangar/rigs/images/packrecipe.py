"""What a pack holds (``PackRecipe``) and the terminal's recipe, apart from the builder: naming the packs (the help
of ``hangar rigs build-pack`` lists them) loads neither the builder nor what it stands on."""

from __future__ import annotations

from dataclasses import dataclass

RELEASE = "bookworm"
# What every pack holds besides its packages; part of every pack's name. base-v2: the rig user at RIG_UID and its
# group at RIG_GID (the packs before, named without it, had both at 1000, a host account's uid on most hosts).
BASE_REVISION = "base-v2"


@dataclass(frozen=True)
class PackRecipe:
    """What one pack holds. ``name`` is the directory and cache key; ``revision`` is what the marker must say
    for the pack to count as built; ``label`` is how progress names it ("terminal image")."""

    name: str
    revision: str
    surface: str
    label: str
    packages: tuple[str, ...]
    hooks: tuple[str, ...] = ()  # mmdebstrap customize hooks after the base ones ("$1" is the root)
    engine: str | None = None


TOOLSET_REVISION = "tools-v1"
PACK_NAME = f"terminal-{TOOLSET_REVISION}-{BASE_REVISION}"

# The CLI baseline of a hosted CI runner, from Debian packages; no container runtimes or language toolcaches.
PACKAGES: tuple[str, ...] = (
    "bash", "ca-certificates", "curl", "wget", "git", "openssh-client", "build-essential", "pkg-config",
    "python3", "python3-venv", "python3-pip", "jq", "rsync", "socat", "zip", "unzip", "xz-utils", "bzip2",
    "zstd", "gzip", "tar", "p7zip-full", "procps", "iproute2", "less", "file", "patch", "make", "nano",
    "vim-tiny", "sqlite3", "tree", "netcat-openbsd", "dnsutils", "locales", "tzdata",
)  # fmt: skip

TERMINAL = PackRecipe(PACK_NAME, TOOLSET_REVISION, "terminal", "terminal image", PACKAGES)
