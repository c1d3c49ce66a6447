"""Loading the site's markdown pages (front matter + body) from ``content/``.

A page's file is ``content/<slug>.md`` (``index.md`` for the landing page). Front matter holds ``title`` and
``description`` (both required) and optionally ``generate`` (a reference section produced from the code) and
``nav_title`` (a shorter label for the navigation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hangar.site.slugs import SKILLS, page_slugs

CONTENT_DIR = Path(__file__).parent / "content"
_FENCE = "---\n"


class ContentError(ValueError):
    """A content file is missing or malformed; the message names the file."""


@dataclass(frozen=True)
class Page:
    slug: str
    title: str
    description: str
    body: str
    generate: str | None = None
    nav_title: str | None = None

    @property
    def path(self) -> str:
        return "/" + self.slug

    @property
    def label(self) -> str:
        return self.nav_title or self.title


def parse_page(slug: str, text: str, *, where: str) -> Page:
    if not text.startswith(_FENCE):
        raise ContentError(f"{where}: must start with a '---' front matter block")
    end = text.find("\n---\n", len(_FENCE) - 1)
    if end < 0:
        raise ContentError(f"{where}: front matter block is not closed with '---'")
    meta: Any = yaml.safe_load(text[len(_FENCE) : end + 1])
    if not isinstance(meta, dict):
        raise ContentError(f"{where}: front matter must be a mapping")
    for key in ("title", "description"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise ContentError(f"{where}: front matter needs a non-empty `{key}`")
    unknown = set(meta) - {"title", "description", "generate", "nav_title"}
    if unknown:
        raise ContentError(f"{where}: unknown front matter keys {sorted(unknown)}")
    return Page(
        slug=slug,
        title=meta["title"].strip(),
        description=" ".join(meta["description"].split()),
        body=text[end + 5 :].strip() + "\n",
        generate=meta.get("generate"),
        nav_title=meta.get("nav_title"),
    )


# The manual's screenshots: PNG files taken by the web client's browser tests (``make manual-shots``), served
# at ``MANUAL_IMAGES_PATH/<name>`` and referenced from the guides as ``![alt](/manual/images/<name>)``.
MANUAL_IMAGES_DIR = CONTENT_DIR / "manual" / "images"
MANUAL_IMAGES_PATH = "/manual/images"


def manual_images(root: Path = MANUAL_IMAGES_DIR) -> dict[str, bytes]:
    """Every PNG of the manual's image folder by file name (none when the folder is missing)."""
    if not root.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(root.glob("*.png")) if p.is_file()}


def file_of(slug: str, root: Path = CONTENT_DIR) -> Path:
    return root / ("index.md" if slug == "" else f"{slug}.md")


def load_pages(root: Path = CONTENT_DIR) -> dict[str, Page]:
    """Every page of the fixed slug set, keyed by slug. A missing file is an error naming it."""
    pages: dict[str, Page] = {}
    for slug in page_slugs():
        path = file_of(slug, root)
        if not path.is_file():
            raise ContentError(f"missing content file {path.relative_to(root)} for /{slug}")
        pages[slug] = parse_page(slug, path.read_text(encoding="utf-8"), where=str(path.relative_to(root)))
    return pages


def load_skills(root: Path = CONTENT_DIR) -> dict[str, str]:
    """The SKILL.md text of every published skill, keyed by skill name."""
    out: dict[str, str] = {}
    for name in SKILLS:
        path = root / "skills" / name / "SKILL.md"
        if not path.is_file():
            raise ContentError(f"missing skill file skills/{name}/SKILL.md")
        out[name] = path.read_text(encoding="utf-8")
    return out


@dataclass(frozen=True)
class Release:
    version: str
    date: str  # ISO date
    title: str
    notes: str  # markdown


def load_releases(root: Path = CONTENT_DIR) -> list[Release]:
    """Release notes, newest first (``releases.yaml``)."""
    data: Any = yaml.safe_load((root / "releases.yaml").read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ContentError("releases.yaml must be a list of releases")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in Release.__annotations__):
            raise ContentError(f"releases.yaml[{i}] needs string fields version, date, title, notes")
        out.append(Release(**{k: item[k] for k in Release.__annotations__}))
    return sorted(out, key=lambda r: r.date, reverse=True)
