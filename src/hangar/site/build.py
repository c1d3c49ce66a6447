"""Building the site once: every page, twin, discovery document and feed rendered to bytes with its headers.

Bodies are rendered against the stand-in ``ORIGIN``. ``SiteBuild.resources(origin)`` swaps in the real origin
and computes ETags once per origin (a small bounded cache), so serving is a dictionary lookup. With a configured
base URL there is exactly one origin.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import hangar
from hangar.site import discovery, reference
from hangar.site.content import (
    CONTENT_DIR,
    MANUAL_IMAGES_PATH,
    Page,
    load_pages,
    load_releases,
    load_skills,
    manual_images,
)
from hangar.site.openapi import SITE_ENDPOINTS, openapi_document
from hangar.site.render import ORIGIN, Renderer, page_markdown
from hangar.site.search import Doc
from hangar.site.slugs import MANUAL_SECTIONS, SKILLS, twin_path_of

API_CATALOG_LINK = b'</.well-known/api-catalog>; rel="api-catalog"'
HTML = "text/html; charset=utf-8"
MARKDOWN = "text/markdown; charset=utf-8"
PLAIN = "text/plain; charset=utf-8"
JSON = "application/json"
_MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
_ORIGIN_B = ORIGIN.encode()
MAX_CACHED_ORIGINS = 16


@dataclass(frozen=True)
class Resource:
    """A response ready to send: body bytes and raw ASGI headers (content-length and ETag included)."""

    body: bytes
    headers: tuple[tuple[bytes, bytes], ...]
    etag: bytes


@dataclass(frozen=True)
class Template:
    body: bytes  # with ORIGIN as a stand-in
    media_type: str
    page: bool = False  # a content page or twin: Vary: Accept and the api-catalog Link
    cache: bytes = b"public, max-age=300"
    binary: bool = False  # an image: served byte for byte (no origin stand-in to replace)

    def materialize(self, origin: bytes) -> Resource:
        body = self.body.replace(_ORIGIN_B, origin) if not self.binary and _ORIGIN_B in self.body else self.body
        etag = b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"'
        headers = [
            (b"content-type", self.media_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"etag", etag),
            (b"cache-control", self.cache),
            (b"x-content-type-options", b"nosniff"),
        ]
        if self.page:
            headers += [(b"vary", b"Accept"), (b"link", API_CATALOG_LINK)]
        return Resource(body, tuple(headers), etag)


class Origin:
    """Everything served at one origin, materialized on first use of each resource and kept."""

    def __init__(self, build: SiteBuild, key: bytes) -> None:
        self._build = build
        self.key = key
        self._resources: dict[str, Resource] = {}
        self._pages: dict[str, tuple[Resource, Resource]] = {}
        self._not_found: dict[str, tuple[bytes, bytes]] = {}

    def resource(self, path: str) -> Resource | None:
        found = self._resources.get(path)
        if found is not None:
            return found
        if path == SKILLS_INDEX:
            found = self._skills_index()
        else:
            tpl = self._build.templates.get(path)
            if tpl is None:
                return None
            found = tpl.materialize(self.key)
        self._resources[path] = found
        return found

    def warm(self) -> None:
        """Materialize everything now (with a fixed base URL, at build time rather than on first requests)."""
        for path in [*self._build.templates, SKILLS_INDEX]:
            self.resource(path)
        for path in self._build.page_paths:
            self.page(path)

    def page(self, path: str) -> tuple[Resource, Resource] | None:
        """A content page's (HTML, markdown twin), or None when ``path`` is not a page."""
        found = self._pages.get(path)
        if found is None:
            paths = self._build.page_paths.get(path)
            if paths is None:
                return None
            html, twin = self.resource(paths[0]), self.resource(paths[1])
            assert html is not None and twin is not None
            found = self._pages[path] = (html, twin)
        return found

    def not_found(self, media: str) -> tuple[bytes, bytes]:
        """The 404 body for ``media``, split where the request path goes."""
        found = self._not_found.get(media)
        if found is None:
            body = self._build.not_found_templates[media].replace(_ORIGIN_B, self.key)
            head, _sep, tail = body.partition(NOT_FOUND_PATH.encode())
            found = self._not_found[media] = (head, tail)
        return found

    def _skills_index(self) -> Resource:
        skill_bytes = {}
        for name in SKILLS:
            res = self.resource(f"/.well-known/agent-skills/{name}/SKILL.md")
            assert res is not None
            skill_bytes[name] = res.body
        descriptions = skill_descriptions(self._build.skills_text)
        index = discovery.skills_index(skill_bytes, descriptions, self.key.decode())
        return Template(discovery.dumps(index).encode(), JSON).materialize(self.key)


SKILLS_INDEX = "/.well-known/agent-skills/index.json"
NOT_FOUND_PATH = "HANGARNOTFOUNDPATH"  # replaced by the escaped request path


class SiteBuild:
    def __init__(self, base_url: str | None = None, sources: reference.Sources | None = None) -> None:
        self.sources = sources or reference.Sources()
        self.base_url = base_url.rstrip("/") if base_url else None
        self.pages: dict[str, Page] = load_pages()
        self.renderer = Renderer(self.pages)
        self.releases = load_releases()
        self.skills_text = load_skills()
        self.bodies: dict[str, str] = {slug: self._body(page) for slug, page in self.pages.items()}
        self.twins: dict[str, str] = {s: page_markdown(p, self.bodies[s]) for s, p in self.pages.items()}
        self.templates: dict[str, Template] = {}
        self.page_paths: dict[str, tuple[str, str]] = {}
        self._origins: dict[bytes, Origin] = {}
        self.not_found_templates: dict[str, bytes] = {}
        self.tools: list[dict[str, Any]] = []
        self.protocol_versions: list[str] = []

    # -- content -----------------------------------------------------------------------------------------------

    def _body(self, page: Page) -> str:
        body = page.body
        if page.slug == "changelog":
            body = body.rstrip() + "\n\n" + discovery.changelog_markdown(self.releases)
        if page.generate:
            keys = [k.strip() for k in page.generate.split(",") if k.strip()]
            for key in keys:
                text = self._generated(key)
                marker = f"<!-- generated: {key} -->"
                body = body.replace(marker, text) if marker in body else body.rstrip() + "\n\n" + text
        if _MARKER.search(body):
            raise ValueError(f"/{page.slug}: a generated marker has no `generate` entry: {_MARKER.search(body)}")
        return body

    def _generated(self, key: str) -> str:
        if key == "site-routes":
            rows = "".join(f"| {m} | `{p}` | {d} |\n" for m, p, d in SITE_ENDPOINTS)
            return "| Method | Path | Purpose |\n|---|---|---|\n" + rows
        if key.startswith("index-"):
            return self._section_index(key.removeprefix("index-"))
        return reference.generate(key, self.sources)

    def _section_index(self, section: str) -> str:
        """The list of a manual section's pages with their descriptions, in the spec's order."""
        for key, _label, slugs in MANUAL_SECTIONS:
            if key == section:
                pages = [self.pages[f"manual/{key}/{s}"] for s in slugs]
                return "".join(f"- [{p.title}]({p.path}): {p.description}\n" for p in pages)
        raise ValueError(f"unknown manual section {section!r}")

    def search_docs(self) -> list[Doc]:
        return [Doc(s, p.title, p.description, self.bodies[s]) for s, p in self.pages.items()]

    # -- rendering ---------------------------------------------------------------------------------------------

    def render(self, tools: list[dict[str, Any]], protocol_versions: list[str]) -> None:
        """Render every resource against the stand-in origin. ``tools`` describe the docs tool server."""
        self.tools, self.protocol_versions = tools, protocol_versions
        t = self.templates
        for slug, page in self.pages.items():
            html = self.renderer.page_html(page, self.bodies[slug])
            t[page.path] = Template(html.encode(), HTML, page=True)
            t[twin_path_of(slug)] = Template(self.twins[slug].encode(), MARKDOWN, page=True)
            self.page_paths[page.path] = (page.path, twin_path_of(slug))
        t["/llms.txt"] = Template(discovery.llms_txt(self.pages).encode(), PLAIN)
        faq = (CONTENT_DIR / "llms" / "faq.md").read_text(encoding="utf-8")
        full = discovery.llms_full_txt(
            self.pages, self.bodies, faq, self.bodies["compare"], discovery.changelog_markdown(self.releases)
        )
        t["/llms-full.txt"] = Template(full.encode(), PLAIN)
        t["/openapi.json"] = Template(discovery.dumps(openapi_document(SKILLS)).encode(), JSON)
        t["/.well-known/api-catalog"] = Template(
            discovery.dumps(discovery.api_catalog()).encode(),
            # RFC 9727 section 4.2: the linkset is marked with the api-catalog profile.
            'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"',
        )
        for name, text in self.skills_text.items():
            t[f"/.well-known/agent-skills/{name}/SKILL.md"] = Template(text.encode(), MARKDOWN)
        card = discovery.dumps(discovery.server_card(tools, protocol_versions)).encode()
        t["/.well-known/mcp/server-card.json"] = Template(card, JSON)
        t["/.well-known/mcp/server-card"] = Template(card, JSON)
        get_card = discovery.dumps(discovery.mcp_get_card(tools, protocol_versions)).encode()
        for p in discovery.MCP_PATHS:
            t[p] = Template(get_card, JSON)
        newest = self.releases[0].date if self.releases else "2026-01-01"
        t["/sitemap-index.xml"] = Template(
            discovery.sitemap([p.path for p in self.pages.values()], newest).encode(), "application/xml"
        )
        t["/rss.xml"] = Template(
            discovery.rss(self.releases, self.renderer.html_of_markdown).encode(), "application/rss+xml"
        )
        t["/static/site.css"] = Template(self.renderer.css, "text/css; charset=utf-8", cache=b"public, max-age=86400")
        for name, data in manual_images().items():
            t[f"{MANUAL_IMAGES_PATH}/{name}"] = Template(data, "image/png", cache=b"public, max-age=86400", binary=True)
        health = json.dumps({"status": "ok", "version": hangar.__version__}).encode()
        t["/healthz"] = Template(health, JSON, cache=b"no-store")
        self.not_found_templates = self._render_not_found()

    def _render_not_found(self) -> dict[str, bytes]:
        md = not_found_markdown()
        html = self.renderer.not_found_html(md)
        envelope = {
            "error": {
                "code": "not_found",
                "message": f"Nothing is published at {NOT_FOUND_PATH}.",
                "hint": f"Every published route is listed in the sitemap ({ORIGIN}/sitemap-index.xml) and "
                f"described in the OpenAPI document ({ORIGIN}/openapi.json); pages are under /manual.",
                "status": 404,
                "docs": f"{ORIGIN}/openapi.json",
                "sitemap": f"{ORIGIN}/sitemap-index.xml",
            }
        }
        return {
            "text/html": html.encode(),
            "text/markdown": md.encode(),
            "application/json": (json.dumps(envelope) + "\n").encode(),
        }

    # -- serving -----------------------------------------------------------------------------------------------

    def origin(self, origin: str) -> Origin:
        """The resources at ``origin`` (the base URL when one is configured). A bounded number of origins is
        kept; a request from yet another origin (any Host header can be sent) materializes only what it asks
        for, so odd hosts cost one resource each, never the whole site."""
        key = (self.base_url or origin).encode()
        found = self._origins.get(key)
        if found is None:
            found = Origin(self, key)
            if len(self._origins) < MAX_CACHED_ORIGINS:
                self._origins[key] = found
        return found

    def published(self, path: str) -> bool:
        return path in self.templates or path == SKILLS_INDEX


def skill_descriptions(skills: dict[str, str]) -> dict[str, str]:
    """The ``description`` of each SKILL.md's front matter (the index repeats it)."""
    import yaml

    out = {}
    for name, text in skills.items():
        meta: Any = yaml.safe_load(text.split("---", 2)[1])
        if not isinstance(meta, dict) or meta.get("name") != name or not isinstance(meta.get("description"), str):
            raise ValueError(f"skills/{name}/SKILL.md: front matter needs name: {name} and a description")
        out[name] = " ".join(meta["description"].split())
    return out


def not_found_markdown() -> str:
    return (
        "# Not found\n\n"
        f"Nothing is published at `{NOT_FOUND_PATH}` on this site. The path may be mistyped, or the page may "
        "never have existed: every published path is listed below.\n\n"
        "## Where to look next\n\n"
        f"- [Manual]({ORIGIN}/manual): install, quick start, tutorials, guides, concepts and reference.\n"
        f"- [Sitemap]({ORIGIN}/sitemap-index.xml): every published page.\n"
        f"- [llms.txt]({ORIGIN}/llms.txt): every page with a one-line description.\n"
        f"- [OpenAPI]({ORIGIN}/openapi.json): every endpoint of this site.\n"
        f"- [Docs tool server]({ORIGIN}/mcp): `search_pages` finds a page by words.\n"
        f"- [Home]({ORIGIN}/)\n"
    )
