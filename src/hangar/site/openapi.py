"""The OpenAPI 3.1 description of the website: every endpoint it serves and the docs tool server."""

from __future__ import annotations

from typing import Any

from hangar.site.content import manual_images
from hangar.site.render import ORIGIN
from hangar.site.slugs import COMPARE_TOOLS, MANUAL_ROOTS, MANUAL_SECTIONS, TOP_PAGES

OPENAPI_VERSION = "v0.0.1-rc.1"

_PAGE_HEADERS = {
    "Vary": {"description": "Always includes `Accept`.", "schema": {"type": "string"}},
    "Link": {
        "description": 'Points at the API catalog: `</.well-known/api-catalog>; rel="api-catalog"`.',
        "schema": {"type": "string"},
    },
    "ETag": {"description": "Strong validator of the exact bytes.", "schema": {"type": "string"}},
}
_ACCEPT = {
    "name": "Accept",
    "in": "header",
    "required": False,
    "description": "`text/html` (default) or `text/markdown` for the markdown twin.",
    "schema": {"type": "string"},
}
_TEXT = {"schema": {"type": "string"}}


def _not_found() -> dict[str, Any]:
    return {
        "description": "Not published. HTML for browsers, a markdown recovery map for `Accept: text/markdown`, "
        "the JSON error envelope for `Accept: application/json` and under `/api/`.",
        "headers": {"Vary": _PAGE_HEADERS["Vary"]},
        "content": {
            "text/html": _TEXT,
            "text/markdown": _TEXT,
            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}},
        },
    }


def _page_op(summary: str, params: list[dict[str, Any]], *, negotiated: bool = True) -> dict[str, Any]:
    content = {"text/html": _TEXT, "text/markdown": _TEXT} if negotiated else {"text/markdown": _TEXT}
    return {
        "get": {
            "summary": summary,
            "tags": ["pages"],
            "parameters": [*params, *([_ACCEPT] if negotiated else [])],
            "responses": {
                "200": {"description": "The page.", "headers": _PAGE_HEADERS, "content": content},
                "404": _not_found(),
            },
        }
    }


def _enum_param(name: str, values: list[str], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "enum": values},
    }


def _image_op() -> dict[str, Any]:
    """The manual's screenshots, one path per PNG of its image folder."""
    op = _plain("A screenshot of the manual's guides (PNG).", "image/png", tag="assets")
    names = sorted(manual_images())
    op["get"]["parameters"] = [_enum_param("name", names, "File name of the screenshot.")]
    return op


def _plain(summary: str, media: str, schema: dict[str, Any] | None = None, tag: str = "discovery") -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "tags": [tag],
            "responses": {
                "200": {
                    "description": summary,
                    "headers": {"ETag": _PAGE_HEADERS["ETag"]},
                    "content": {media: {"schema": schema or {"type": "string"}}},
                }
            },
        }
    }


def _rpc_error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcResponse"}}},
    }


def _mcp_path() -> dict[str, Any]:
    return {
        "get": {
            "summary": "Discovery card of the docs tool server: its name and how to POST to it.",
            "tags": ["mcp"],
            "responses": {
                "200": {
                    "description": "The card.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/McpCard"}}},
                }
            },
        },
        "post": {
            "summary": "Docs tool server (MCP over Streamable HTTP, stateless, JSON responses).",
            "description": "Methods: `initialize`, `ping`, `tools/list`, `tools/call` (tools `list_pages`, "
            "`get_page_markdown`, `search_pages`) and `notifications/initialized`. Unknown methods answer the "
            "JSON-RPC error -32601, bad tool arguments -32602. No authentication.",
            "tags": ["mcp"],
            "parameters": [
                {
                    "name": "Accept",
                    "in": "header",
                    "required": True,
                    "description": "Must include `application/json` (clients send "
                    "`application/json, text/event-stream`).",
                    "schema": {
                        "type": "string",
                        "pattern": "^application/json(, text/event-stream)?$",
                        "example": "application/json, text/event-stream",
                    },
                }
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcRequest"}}},
            },
            "responses": {
                "200": _rpc_error_response("JSON-RPC response (a result or a JSON-RPC error)."),
                "202": {"description": "A notification was accepted; the body is empty."},
                "400": _rpc_error_response("Malformed body or JSON-RPC envelope (-32700 or -32600)."),
                "406": _rpc_error_response("The `Accept` header does not include `application/json`."),
                "413": _rpc_error_response("The body is larger than 1 MiB."),
                "415": _rpc_error_response("The body is not `application/json`."),
            },
        },
    }


SCHEMAS: dict[str, Any] = {
    "ErrorEnvelope": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message", "hint", "status", "docs", "sitemap"],
                "properties": {
                    "code": {"type": "string", "description": "Stable machine code: `not_found`."},
                    "message": {"type": "string"},
                    "hint": {"type": "string"},
                    "status": {"type": "integer"},
                    "docs": {"type": "string", "format": "uri"},
                    "sitemap": {"type": "string", "format": "uri"},
                },
            }
        },
    },
    "JsonRpcRequest": {
        "type": "object",
        "required": ["jsonrpc", "method"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "method": {
                "type": "string",
                "enum": ["initialize", "ping", "tools/list", "tools/call", "notifications/initialized"],
            },
            "id": {"type": ["string", "integer", "null"]},
            "params": {"type": "object"},
        },
    },
    "JsonRpcResponse": {
        "type": "object",
        "required": ["jsonrpc"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"type": ["string", "number", "null"]},
            "result": {"type": "object"},
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
            },
        },
    },
    "McpCard": {
        "type": "object",
        "required": ["name", "endpoints", "howToCall", "tools"],
        "properties": {
            "name": {"type": "string"},
            "endpoints": {"type": "array", "items": {"type": "string", "format": "uri"}},
            "howToCall": {"type": "object"},
            "tools": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Health": {
        "type": "object",
        "required": ["status", "version"],
        "properties": {"status": {"const": "ok"}, "version": {"type": "string"}},
    },
    "Linkset": {"type": "object", "required": ["linkset"], "properties": {"linkset": {"type": "array"}}},
    "SkillsIndex": {
        "type": "object",
        "required": ["$schema", "skills"],
        "properties": {
            "$schema": {"type": "string", "format": "uri"},
            "skills": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "type", "description", "url", "digest"],
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"const": "skill-md"},
                        "description": {"type": "string"},
                        "url": {"type": "string", "format": "uri"},
                        "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
                    },
                },
            },
        },
    },
    "ServerCard": {
        "type": "object",
        "required": ["$schema", "name", "version", "remotes"],
        "properties": {
            "$schema": {"type": "string"},
            "name": {"type": "string"},
            "version": {"type": "string"},
            "remotes": {"type": "array"},
        },
    },
}


def openapi_document(skills: tuple[str, ...]) -> dict[str, Any]:
    sections = [key for key, _label, _slugs in MANUAL_SECTIONS]
    section_pages = sorted({s for _k, _l, slugs in MANUAL_SECTIONS for s in slugs})
    roots = [r.removeprefix("manual/") for r in MANUAL_ROOTS if r != "manual"]
    tops = [t for t in TOP_PAGES if t]
    paths: dict[str, Any] = {
        "/": _page_op("Landing page.", []),
        "/{page}": _page_op(
            "About, contact, developers, changelog and the comparison matrix.",
            [_enum_param("page", tops, "A top-level page.")],
        ),
        "/compare/{tool}": _page_op(
            "Comparison against one tool.", [_enum_param("tool", list(COMPARE_TOOLS), "A compared tool.")]
        ),
        "/manual": _page_op("Manual home.", []),
        "/manual/{page}": _page_op(
            "Install, quick start and the section index pages of the manual.",
            [_enum_param("page", roots, "A root page of the manual.")],
        ),
        "/manual/{section}/{page}": _page_op(
            "One manual page: tutorial, guide, concept or reference.",
            [
                _enum_param("section", sections, "Manual section."),
                _enum_param("page", section_pages, "Page slug within the section (unknown pairs are 404)."),
            ],
        ),
        "/index.md": _page_op("Markdown twin of the landing page.", [], negotiated=False),
        "/{page}.md": _page_op(
            "Markdown twin of a top-level page.", [_enum_param("page", tops, "A top-level page.")], negotiated=False
        ),
        "/compare/{tool}.md": _page_op(
            "Markdown twin of a comparison.",
            [_enum_param("tool", list(COMPARE_TOOLS), "A compared tool.")],
            negotiated=False,
        ),
        "/manual.md": _page_op("Markdown twin of the manual home.", [], negotiated=False),
        "/manual/{page}.md": _page_op(
            "Markdown twin of a root manual page.",
            [_enum_param("page", roots, "A root page of the manual.")],
            negotiated=False,
        ),
        "/manual/{section}/{page}.md": _page_op(
            "Markdown twin of a manual page.",
            [
                _enum_param("section", sections, "Manual section."),
                _enum_param("page", section_pages, "Page slug within the section (unknown pairs are 404)."),
            ],
            negotiated=False,
        ),
        "/llms.txt": _plain("Curated index for language models (llmstxt.org).", "text/plain"),
        "/llms-full.txt": _plain("Overview, FAQ, comparison matrix, changelog and every manual page.", "text/plain"),
        "/openapi.json": _plain("This document.", "application/json", {"type": "object"}),
        "/.well-known/api-catalog": _plain(
            "RFC 9727 API catalog.", "application/linkset+json", {"$ref": "#/components/schemas/Linkset"}
        ),
        "/.well-known/agent-skills/index.json": _plain(
            "Agent skills discovery index 0.2.0.", "application/json", {"$ref": "#/components/schemas/SkillsIndex"}
        ),
        "/.well-known/agent-skills/{skill}/SKILL.md": {
            "get": {
                "summary": "One published skill; the index's digest covers these bytes.",
                "tags": ["discovery"],
                "parameters": [_enum_param("skill", list(skills), "Skill name.")],
                "responses": {
                    "200": {"description": "The skill.", "content": {"text/markdown": _TEXT}},
                    "404": _not_found(),
                },
            }
        },
        "/.well-known/mcp/server-card.json": _plain(
            "SEP-2127 server card of the docs tool server.",
            "application/json",
            {"$ref": "#/components/schemas/ServerCard"},
        ),
        "/.well-known/mcp/server-card": _plain(
            "The same server card.", "application/json", {"$ref": "#/components/schemas/ServerCard"}
        ),
        "/sitemap-index.xml": _plain("Every published page.", "application/xml"),
        "/rss.xml": _plain("Release notes as RSS 2.0.", "application/rss+xml"),
        "/static/site.css": _plain("The site's stylesheet.", "text/css", tag="assets"),
        "/manual/images/{name}": _image_op(),
        "/healthz": _plain("Liveness.", "application/json", {"$ref": "#/components/schemas/Health"}, tag="ops"),
        "/mcp": _mcp_path(),
        "/.well-known/mcp": _mcp_path(),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Hangar website",
            "version": OPENAPI_VERSION,
            "summary": "The public docs origin of Hangar: pages, markdown twins, discovery files and the docs "
            "tool server.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": ORIGIN}],
        "tags": [
            {"name": "pages", "description": "Content pages and their markdown twins."},
            {"name": "discovery", "description": "Agent-discovery documents and feeds."},
            {"name": "mcp", "description": "The docs tool server."},
            {"name": "assets", "description": "Static assets."},
            {"name": "ops", "description": "Operations."},
        ],
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }


SITE_ENDPOINTS: tuple[tuple[str, str, str], ...] = (
    ("GET", "/", "Landing page (HTML, or markdown with `Accept: text/markdown`)"),
    ("GET", "/about, /contact, /developers, /changelog, /compare", "Top-level pages"),
    ("GET", "/compare/{tool}", "Comparison against one of nine tools"),
    ("GET", "/manual/{page}", "Manual pages of the fixed slug set"),
    ("GET", "/index.md and <page>.md", "Markdown twin of any page"),
    ("GET", "/llms.txt, /llms-full.txt", "Indexes for language models"),
    ("GET", "/openapi.json", "OpenAPI 3.1 description of the site"),
    ("GET", "/.well-known/api-catalog", "RFC 9727 API catalog"),
    ("GET", "/.well-known/agent-skills/index.json", "Agent skills discovery index"),
    ("GET", "/.well-known/agent-skills/{skill}/SKILL.md", "One skill"),
    ("GET", "/.well-known/mcp/server-card.json, /.well-known/mcp/server-card", "MCP server card"),
    ("GET", "/sitemap-index.xml", "Sitemap"),
    ("GET", "/rss.xml", "Release notes feed"),
    ("GET", "/static/site.css", "Stylesheet"),
    ("GET", "/manual/images/{name}", "Screenshots of the manual's guides"),
    ("GET", "/healthz", "Liveness: status and version"),
    ("GET", "/mcp, /.well-known/mcp", "Discovery card of the docs tool server"),
    ("POST", "/mcp, /.well-known/mcp", "Docs tool server (MCP, JSON-RPC 2.0)"),
)
