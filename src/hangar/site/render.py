"""Rendering pages: markdown to HTML with markdown-it (CommonMark, tables, heading anchors), Jinja2 layout,
and the markdown twin.

Absolute URLs are written with ``ORIGIN`` as a stand-in origin; ``hangar.site.build`` swaps in the real one
(the configured base URL, or the request's own origin), so one rendering serves every origin.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin

import hangar
from hangar.site.content import Page
from hangar.site.slugs import MANUAL_ROOTS, MANUAL_SECTIONS, twin_path_of

ORIGIN = "https://origin.hangar.invalid"
STATIC_DIR = Path(__file__).parent / "static"


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def markdown_renderer() -> MarkdownIt:
    # Raw HTML in content is off: pages are markdown only, so nothing in a page can inject markup.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.use(anchors_plugin, min_level=2, max_level=3, slug_func=_slugify)
    return md


@dataclass(frozen=True)
class NavItem:
    slug: str
    label: str

    @property
    def path(self) -> str:
        return "/" + self.slug


@dataclass(frozen=True)
class NavGroup:
    key: str
    label: str
    items: tuple[NavItem, ...]
    open: bool = False


def section_of(slug: str) -> str:
    if slug.startswith("manual"):
        return "manual"
    if slug.startswith("compare"):
        return "compare"
    return "top"


class Renderer:
    def __init__(self, pages: dict[str, Page]) -> None:
        self.pages = pages
        self.md = markdown_renderer()
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("hangar.site", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.css = (STATIC_DIR / "site.css").read_bytes()
        self.css_version = hashlib.sha256(self.css).hexdigest()[:10]

    def html_of_markdown(self, text: str) -> str:
        return str(self.md.render(text))

    def _sidebar(self, slug: str) -> dict[str, Any]:
        def item(s: str) -> NavItem:
            return NavItem(s, self.pages[s].label)

        groups = []
        for key, label, slugs in MANUAL_SECTIONS:
            full = tuple(f"manual/{key}/{s}" for s in slugs)
            groups.append(NavGroup(key, label, tuple(item(s) for s in full), open=slug.startswith(f"manual/{key}")))
        return {"roots": [item(s) for s in MANUAL_ROOTS], "groups": groups}

    def _crumbs(self, slug: str) -> list[NavItem]:
        parts = slug.split("/")
        out = []
        for i in range(1, len(parts)):
            s = "/".join(parts[:i])
            if s in self.pages:
                out.append(NavItem(s, self.pages[s].label))
        return out

    def page_html(self, page: Page, body_md: str) -> str:
        section = section_of(page.slug)
        content = self.html_of_markdown(f"# {page.title}\n\n{body_md}")
        return self.env.get_template("base.html").render(
            title=page.title,
            description=page.description,
            canonical=ORIGIN + page.path,
            twin_path=twin_path_of(page.slug),
            slug=page.slug,
            section=section,
            body_class=f"section-{section}",
            sidebar=self._sidebar(page.slug) if section == "manual" else None,
            crumbs=self._crumbs(page.slug),
            content=content,
            version=hangar.__version__,
            css_version=self.css_version,
            not_found=False,
        )

    def not_found_html(self, body_md: str) -> str:
        return self.env.get_template("base.html").render(
            title="Page not found",
            description="This path is not published on the Hangar site.",
            canonical=ORIGIN + "/",
            twin_path="/index.md",
            slug="",
            section="top",
            body_class="section-404",
            sidebar=None,
            crumbs=[],
            content=self.html_of_markdown(body_md),
            version=hangar.__version__,
            css_version=self.css_version,
            not_found=True,
        )


def page_markdown(page: Page, body_md: str) -> str:
    """The markdown twin: title, description, body and a footer with the canonical URL."""
    return (
        f"# {page.title}\n\n> {page.description}\n\n{body_md.rstrip()}\n\n---\n\nCanonical URL: {ORIGIN}{page.path}\n"
    )
