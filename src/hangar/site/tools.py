"""The three tools of the docs tool server, as plain functions over the built site.

Arguments are pydantic models with strict types and no extra fields, so a wrong type or an unknown argument
is refused naming the field (the server turns that into JSON-RPC error -32602).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, model_validator

from hangar.site.build import SiteBuild
from hangar.site.render import section_of
from hangar.site.search import SearchIndex
from hangar.site.slugs import MANUAL_SECTIONS, twin_path_of

Section = Literal["all", "top", "compare", "manual", "tutorials", "guides", "concepts", "reference"]


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ListPagesArgs(ToolArgs):
    section: Section = Field(
        "all", description="Limit to one part of the site: top, compare, manual, or one manual section."
    )


class GetPageMarkdownArgs(ToolArgs):
    slug: StrictStr | None = Field(
        None, max_length=200, description="Page slug, e.g. `manual/install` (empty string for the landing page)."
    )
    path: StrictStr | None = Field(None, max_length=200, description="Page path, e.g. `/manual/install`.")

    @model_validator(mode="after")
    def _one(self) -> GetPageMarkdownArgs:
        if (self.slug is None) == (self.path is None):
            raise ValueError("give exactly one of `slug` or `path`")
        return self


class SearchPagesArgs(ToolArgs):
    query: StrictStr = Field(..., min_length=1, max_length=500, description="Words to search for.")
    limit: StrictInt = Field(5, ge=1, le=25, description="Maximum number of results (1 to 25).")


class ToolNotFound(LookupError):
    """A well-formed call naming something that does not exist (reported as a tool error, not -32602)."""


def describe_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"`{loc}`: {err['msg']}")
    return "; ".join(parts)


def _in_section(slug: str, section: str) -> bool:
    if section == "all":
        return True
    if section in ("top", "compare", "manual"):
        return section_of(slug) == section
    return slug.startswith(f"manual/{section}/") or slug == f"manual/{section}"


class DocsTools:
    def __init__(self, site: SiteBuild) -> None:
        self.site = site
        self.index = SearchIndex(site.search_docs())

    def _entry(self, slug: str, origin: str) -> dict[str, Any]:
        page = self.site.pages[slug]
        return {
            "slug": slug,
            "path": page.path,
            "title": page.title,
            "description": page.description,
            "url": origin + page.path,
            "markdownUrl": origin + twin_path_of(slug),
        }

    def list_pages(self, args: ListPagesArgs, origin: str) -> dict[str, Any]:
        pages = [self._entry(s, origin) for s in self.site.pages if _in_section(s, args.section)]
        return {"section": args.section, "count": len(pages), "pages": pages}

    def resolve(self, args: GetPageMarkdownArgs) -> str:
        raw = (args.slug if args.slug is not None else args.path) or ""
        key = raw.strip().strip("/")
        if key.endswith(".md"):
            key = key[:-3]
        if key == "index":
            key = ""
        if key not in self.site.pages:
            raise ToolNotFound(f"no published page has the slug {key!r}; call list_pages for the slugs")
        return key

    def get_page_markdown(self, args: GetPageMarkdownArgs, origin: str) -> tuple[str, dict[str, Any]]:
        slug = self.resolve(args)
        twin = self.site.origin(origin).resource(twin_path_of(slug))
        assert twin is not None
        text = twin.body.decode()
        return text, {**self._entry(slug, origin), "markdown": text}

    def search_pages(self, args: SearchPagesArgs, origin: str) -> dict[str, Any]:
        hits = self.index.search(args.query, args.limit)
        return {
            "query": args.query,
            "count": len(hits),
            "results": [
                {**self._entry(h.slug, origin), "snippet": h.snippet, "score": round(h.score, 4)} for h in hits
            ],
        }


TOOL_SPECS: tuple[tuple[str, str, str, type[ToolArgs]], ...] = (
    (
        "list_pages",
        "List pages",
        "List the site's published pages (slug, title, description, URLs), optionally one section: "
        + ", ".join(k for k, _l, _s in MANUAL_SECTIONS)
        + ", manual, compare or top.",
        ListPagesArgs,
    ),
    (
        "get_page_markdown",
        "Get a page as markdown",
        "Return one page's markdown twin (title, description, body, canonical URL) by slug or path.",
        GetPageMarkdownArgs,
    ),
    (
        "search_pages",
        "Search pages",
        "Full-text search over every page, ranked (bm25, title weighted) with a highlighted snippet each.",
        SearchPagesArgs,
    ),
)


def tool_descriptions() -> list[dict[str, Any]]:
    """The tools as MCP ``Tool`` objects (JSON), for tools/list and the server card."""
    out = []
    for name, title, description, model in TOOL_SPECS:
        schema = model.model_json_schema()
        schema.pop("title", None)
        out.append(
            {
                "name": name,
                "title": title,
                "description": description,
                "inputSchema": schema,
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
            }
        )
    return out
