"""Custom machine images (``rigs.microvm.execImage``, ``rigs.microvm.browserImage``): registry references only.

A value must name an image in a registry, in the usual reference grammar:
``[registry[:port]/]repository[:tag][@sha256:<64 hex>]`` with a lower-case repository path. Local paths,
archives (``.tar``, ``.qcow2``...), URL schemes and transport prefixes (``file:``, ``docker-archive:``...) and
flag-like strings (leading ``-``) are refused: at the settings field (``validate_image_ref`` raising
``InvalidArgs``) and again at boot (``boot_image``), where an invalid stored value is ignored with a loud log
notice and the default image boots.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from hangar.core.settings import SettingSpec
from hangar.errors import InvalidArgs

log = logging.getLogger("hangar.rigs.images.settings")

EXEC_IMAGE_KEY = "rigs.microvm.execImage"
BROWSER_IMAGE_KEY = "rigs.microvm.browserImage"
DEFAULT_REGISTRY = "docker.io"

_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*"
_REGISTRY = re.compile(rf"^(?:{_HOST}(?::[0-9]{{1,5}})?|\[[0-9a-fA-F:]+\](?::[0-9]{{1,5}})?)$")
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".zip", ".qcow2", ".img", ".iso", ".raw", ".oci")
_TRANSPORTS = ("file:", "docker-archive:", "oci-archive:", "oci:", "dir:", "containers-storage:", "docker-daemon:")

# Blob-CDN companions of the major public registries: pulls redirect there, so the gate admits them too.
CDN_COMPANIONS: dict[str, tuple[str, ...]] = {
    "docker.io": ("registry-1.docker.io", "auth.docker.io", "production.cloudflare.docker.com"),
    "ghcr.io": ("pkg-containers.githubusercontent.com",),
    "quay.io": ("cdn.quay.io", "cdn01.quay.io", "cdn02.quay.io", "cdn03.quay.io"),
    "gcr.io": ("storage.googleapis.com",),
    "registry.k8s.io": ("*.pkg.dev", "storage.googleapis.com"),
    "public.ecr.aws": ("*.cloudfront.net",),
    "mcr.microsoft.com": ("*.data.mcr.microsoft.com",),
}


@dataclass(frozen=True)
class ImageRef:
    registry: str
    repository: str
    tag: str | None
    digest: str | None

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    @property
    def egress_hosts(self) -> frozenset[str]:
        """The registry and its known blob CDNs: what the egress gate admits for the pull only."""
        host = self.registry.rsplit(":", 1)[0] if not self.registry.startswith("[") else self.registry
        return frozenset((host, *CDN_COMPANIONS.get(host, ())))


def validate_image_ref(value: object, field: str = EXEC_IMAGE_KEY) -> ImageRef:
    """Parse a registry reference; ``InvalidArgs`` naming ``field`` and saying why when it is not one."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgs("an image must be a non-empty registry reference", field=field)
    text = value.strip()

    def refuse(why: str) -> InvalidArgs:
        return InvalidArgs(f"{text!r} is not a registry image reference: {why}", field=field)

    if text.startswith("-"):
        raise refuse("it looks like a command-line flag")
    if any(c.isspace() for c in text) or "\x00" in text:
        raise refuse("it contains whitespace")
    if text.startswith(("/", "./", "../", "~", ".")) or "/../" in text or "\\" in text:
        raise refuse("local paths are not allowed")
    lowered = text.lower()
    if "://" in text or lowered.startswith(_TRANSPORTS):
        raise refuse("URLs, archives and local transports are not allowed")
    if lowered.split("@", 1)[0].endswith(_ARCHIVES):
        raise refuse("archives are not allowed")
    if len(text) > 512:
        raise refuse("it is longer than 512 characters")
    rest, digest = text, None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not _DIGEST.match(digest):
            raise refuse("the digest must be sha256:<64 lower-case hex digits>")
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG.match(tag):
            raise refuse(f"bad tag {tag!r}")
    parts = rest.split("/")
    registry = DEFAULT_REGISTRY
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry = parts.pop(0)
        if not _REGISTRY.match(registry):
            raise refuse(f"bad registry host {registry!r}")
    if not parts or not all(_COMPONENT.match(p) for p in parts):
        raise refuse("the repository must be lower-case path components of letters, digits and . _ -")
    if registry == DEFAULT_REGISTRY and len(parts) == 1:
        parts = ["library", *parts]
    return ImageRef(registry, "/".join(parts), tag, digest)


def boot_image(stored: object, field: str = EXEC_IMAGE_KEY) -> ImageRef | None:
    """The custom image to boot, or None for the default. An invalid stored value is checked again here,
    ignored with a loud notice, and the default boots."""
    if stored is None or stored == "":
        return None
    try:
        return validate_image_ref(stored, field)
    except InvalidArgs as exc:
        log.error("IGNORING invalid %s %r: %s; booting the default image instead", field, stored, exc.message)
        return None


IMAGE_SETTINGS = [
    SettingSpec(
        EXEC_IMAGE_KEY,
        "Terminal rig image: a registry reference (host/repo:tag or @sha256 digest); local paths, archives and "
        "flag-like strings are refused",
        lambda v: str(validate_image_ref(v, EXEC_IMAGE_KEY)),
    ),
    SettingSpec(
        BROWSER_IMAGE_KEY,
        "Browser rig image for engine A: a registry reference, refused like the terminal image",
        lambda v: str(validate_image_ref(v, BROWSER_IMAGE_KEY)),
    ),
]
