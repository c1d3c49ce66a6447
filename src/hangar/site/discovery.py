"""Agent-discovery documents and feeds: llms.txt, llms-full.txt, the RFC 9727 API catalog, the agent-skills index
(discovery 0.2.0), the SEP-2127 server card, the tool server's GET card, the sitemap and the RSS feed.

Everything is written against the stand-in ``ORIGIN`` (see ``hangar.site.render``), except the skills index,
whose digests cover the bytes served at one origin and so is built per origin in ``hangar.site.build``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any
from xml.sax.saxutils import escape

import hangar
from hangar.site.content import Page, Release
from hangar.site.render import ORIGIN
from hangar.site.slugs import COMPARE_TOOLS, MANUAL_SECTIONS, SKILLS, TOP_PAGES, twin_path_of

SITE_NAME = "Hangar"
SUMMARY = (
    "Hangar is a self-hosted control center where AI agents and people work together in workspaces: "
    "conversations with agents, durable pipelines, rigs (sandboxed machines agents drive), single sign-on, "
    "and an RPC socket with guardrails and an audit log."
)
MCP_PATHS = ("/mcp", "/.well-known/mcp")
MCP_SERVER_NAME = "hangar-docs"
# Protocol revisions the docs tool server answers over the initialize handshake (the official SDK's set).
SKILLS_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SERVER_CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _link(page: Page) -> str:
    return f"- [{page.title}]({ORIGIN}{twin_path_of(page.slug)}): {page.description}"


def llms_txt(pages: dict[str, Page]) -> str:
    out = [
        f"# {SITE_NAME}",
        "",
        f"> {SUMMARY}",
        "",
        "Every page below is linked as its markdown twin (`.md`); the same path without `.md` serves HTML, and "
        "`Accept: text/markdown` on any page URL returns the markdown too. The docs tool server at "
        f"{ORIGIN}/mcp (MCP, Streamable HTTP, JSON responses, no authentication) offers `list_pages`, "
        "`get_page_markdown` and `search_pages` over the same content.",
        "",
        "## When to use Hangar",
        "",
        "- You want agents and people to share workspaces, conversations and tickets on a server you run yourself.",
        "- You need agents to run commands in isolated machines (rigs) with an egress allowlist, and every action "
        "audited.",
        "- You want durable multi-step pipelines (shell, routing, agents, approvals) that survive restarts.",
        "- You need single sign-on (SAML 2.0, OIDC) and SCIM provisioning for the people who use it.",
        "",
        "Hangar is not a hosted service and not a library to embed in your own program: it is a server you run. "
        "For a pure agent-programming library or a hosted sandbox API, see the comparison pages.",
        "",
        "## Start here",
        "",
    ]
    for slug in ("", "manual", "manual/install", "manual/quick-start"):
        out.append(_link(pages[slug]))
    for key, label, slugs in MANUAL_SECTIONS:
        out += ["", f"## {label}", "", _link(pages[f"manual/{key}"])]
        out += [_link(pages[f"manual/{key}/{s}"]) for s in slugs]
    out += ["", "## Compare", "", _link(pages["compare"])]
    out += [_link(pages[f"compare/{t}"]) for t in COMPARE_TOOLS]
    out += ["", "## About", ""]
    out += [_link(pages[s]) for s in TOP_PAGES if s not in ("", "compare")]
    out += [
        "",
        "## Developer resources",
        "",
        f"- [OpenAPI description]({ORIGIN}/openapi.json): OpenAPI 3.1 document of every site endpoint and the "
        "docs tool server.",
        f"- [API catalog]({ORIGIN}/.well-known/api-catalog): RFC 9727 linkset of the site's APIs.",
        f"- [MCP server card]({ORIGIN}/.well-known/mcp/server-card.json): SEP-2127 card of the docs tool server.",
        f"- [Agent skills]({ORIGIN}/.well-known/agent-skills/index.json): discovery index 0.2.0 of the published "
        "SKILL.md files.",
        f"- [Full text]({ORIGIN}/llms-full.txt): overview, FAQ, comparison matrix, changelog and every manual page "
        "in one file.",
        f"- [Sitemap]({ORIGIN}/sitemap-index.xml): every published page.",
        f"- [Release notes feed]({ORIGIN}/rss.xml): RSS 2.0.",
        "",
    ]
    return "\n".join(out)


def llms_full_txt(pages: dict[str, Page], bodies: dict[str, str], faq: str, matrix: str, changelog: str) -> str:
    out = [
        f"# {SITE_NAME}: the full documentation",
        "",
        f"> {SUMMARY}",
        "",
        f"Source: {ORIGIN}/ · Index: {ORIGIN}/llms.txt",
        "",
        "## Overview",
        "",
        bodies[""].strip(),
        "",
        "## FAQ",
        "",
        faq.strip(),
        "",
        "## Comparison matrix",
        "",
        matrix.strip(),
        "",
        "## Changelog",
        "",
        changelog.strip(),
        "",
        "## Manual",
        "",
    ]
    for slug, page in pages.items():
        if not slug.startswith("manual"):
            continue
        # Demote the page's own headings by two levels so the file keeps one outline.
        body = "\n".join(("##" + line) if line.startswith("#") else line for line in bodies[slug].splitlines())
        out += [f"### {page.title}", "", f"URL: {ORIGIN}/{slug} · {page.description}", "", body.strip(), ""]
    return "\n".join(out) + "\n"


def api_catalog() -> dict[str, Any]:
    """RFC 9727 linkset: the catalog itself (items), then each API with its description and documentation."""
    desc = [{"href": f"{ORIGIN}/openapi.json", "type": "application/vnd.oai.openapi+json;version=3.1"}]
    doc = [{"href": f"{ORIGIN}/developers", "type": "text/html"}]
    return {
        "linkset": [
            {
                "anchor": f"{ORIGIN}/.well-known/api-catalog",
                "item": [{"href": f"{ORIGIN}/", "title": "Hangar website API"}]
                + [{"href": f"{ORIGIN}{p}", "title": "Hangar docs tool server (MCP)"} for p in MCP_PATHS],
            },
            {"anchor": f"{ORIGIN}/", "service-desc": desc, "service-doc": doc},
            *(
                {
                    "anchor": f"{ORIGIN}{p}",
                    "service-desc": desc,
                    "service-doc": doc,
                    "service-meta": [
                        {"href": f"{ORIGIN}/.well-known/mcp/server-card.json", "type": "application/json"}
                    ],
                }
                for p in MCP_PATHS
            ),
        ]
    }


def server_card(tools: Sequence[dict[str, Any]], protocol_versions: Sequence[str]) -> dict[str, Any]:
    return {
        "$schema": SERVER_CARD_SCHEMA,
        "name": "io.hangar/docs",
        "version": hangar.__version__,
        "title": "Hangar docs",
        "description": "Read-only MCP server over the Hangar manual: list pages, fetch a page as markdown, "
        "and search pages with ranked snippets.",
        "websiteUrl": f"{ORIGIN}/developers",
        "remotes": [
            {
                "type": "streamable-http",
                "url": f"{ORIGIN}{p}",
                "supportedProtocolVersions": list(protocol_versions),
                "authentication": {"required": False, "schemes": []},
            }
            for p in MCP_PATHS
        ],
        "capabilities": {"tools": {"listChanged": False}},
        "tools": list(tools),
    }


def mcp_get_card(tools: Sequence[dict[str, Any]], protocol_versions: Sequence[str]) -> dict[str, Any]:
    """What ``GET /mcp`` answers: the server's name and how to talk to it."""
    return {
        "name": MCP_SERVER_NAME,
        "title": "Hangar docs tool server",
        "version": hangar.__version__,
        "protocol": "Model Context Protocol (JSON-RPC 2.0 over HTTP POST, Streamable HTTP transport)",
        "endpoints": [f"{ORIGIN}{p}" for p in MCP_PATHS],
        "howToCall": {
            "method": "POST",
            "headers": {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            "example": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            "responses": "Always application/json; notifications answer 202 with an empty body.",
        },
        "methods": ["initialize", "ping", "tools/list", "tools/call", "notifications/initialized"],
        "tools": [t["name"] for t in tools],
        "protocolVersions": list(protocol_versions),
        "serverCard": f"{ORIGIN}/.well-known/mcp/server-card.json",
        "docs": f"{ORIGIN}/developers",
    }


def sitemap(paths: Iterable[str], lastmod: str) -> str:
    rows = "".join(f"  <url><loc>{escape(ORIGIN + p)}</loc><lastmod>{lastmod}</lastmod></url>\n" for p in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + rows + "</urlset>\n"
    )


def rss(releases: Sequence[Release], html_of: Any) -> str:
    items = []
    for r in releases:
        when = datetime.fromisoformat(r.date).replace(tzinfo=UTC)
        items.append(
            "    <item>\n"
            f"      <title>{escape(r.version + ': ' + r.title)}</title>\n"
            f"      <link>{ORIGIN}/changelog</link>\n"
            f'      <guid isPermaLink="false">hangar-release-{escape(r.version)}</guid>\n'
            f"      <pubDate>{format_datetime(when)}</pubDate>\n"
            f"      <description>{escape(html_of(r.notes))}</description>\n"
            "    </item>\n"
        )
    newest = releases[0].date if releases else "2026-01-01"
    built = format_datetime(datetime.fromisoformat(newest).replace(tzinfo=UTC))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">\n'
        "  <channel>\n"
        "    <title>Hangar release notes</title>\n"
        f"    <link>{ORIGIN}/changelog</link>\n"
        f'    <atom:link href="{ORIGIN}/rss.xml" rel="self" type="application/rss+xml"/>\n'
        "    <description>Every Hangar release, newest first.</description>\n"
        "    <language>en</language>\n"
        f"    <lastBuildDate>{built}</lastBuildDate>\n" + "".join(items) + "  </channel>\n</rss>\n"
    )


def changelog_markdown(releases: Sequence[Release]) -> str:
    out = []
    for r in releases:
        out += [f"## {r.version}: {r.title}", "", f"Released {r.date}.", "", r.notes.strip(), ""]
    return "\n".join(out)


def skills_index(skill_bytes: dict[str, bytes], descriptions: dict[str, str], origin: str) -> dict[str, Any]:
    import hashlib

    return {
        "$schema": SKILLS_SCHEMA,
        "skills": [
            {
                "name": name,
                "type": "skill-md",
                "description": descriptions[name],
                "url": f"{origin}/.well-known/agent-skills/{name}/SKILL.md",
                "digest": "sha256:" + hashlib.sha256(skill_bytes[name]).hexdigest(),
            }
            for name in SKILLS
        ],
    }
