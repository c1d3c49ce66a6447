"""The website served on a loopback port, tested as its clients use it: browsers, agents, crawlers."""

from __future__ import annotations

import hashlib
import json
import re
import socket
from collections.abc import Iterator
from xml.etree import ElementTree

import httpx
import pytest
from openapi_spec_validator import validate

import hangar
from hangar.site.slugs import COMPARE_TOOLS, SKILLS, page_slugs, twin_path_of
from tests.integration.site_env import RunningSite, serve_site

LINK = '</.well-known/api-catalog>; rel="api-catalog"'


@pytest.fixture(scope="module")
def site() -> Iterator[RunningSite]:
    with serve_site() as running:
        yield running


@pytest.fixture(scope="module")
def client(site: RunningSite) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, timeout=10) as c:
        yield c


def test_healthz(client: httpx.Client) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": hangar.__version__}


@pytest.mark.parametrize("slug", page_slugs())
def test_every_page_in_both_representations(client: httpx.Client, site: RunningSite, slug: str) -> None:
    path = "/" + slug
    html = client.get(path)
    assert html.status_code == 200
    assert html.headers["content-type"] == "text/html; charset=utf-8"
    assert "Accept" in html.headers["vary"]
    assert html.headers["link"] == LINK
    assert f'<link rel="canonical" href="{site.url}{path}">' in html.text
    assert 'name="viewport"' in html.text

    negotiated = client.get(path, headers={"Accept": "text/markdown"})
    twin = client.get(twin_path_of(slug))
    for md in (negotiated, twin):
        assert md.status_code == 200
        assert md.headers["content-type"] == "text/markdown; charset=utf-8"
        assert "Accept" in md.headers["vary"]
        assert md.headers["link"] == LINK
    assert negotiated.content == twin.content
    lines = twin.text.splitlines()
    assert lines[0].startswith("# ") and lines[2].startswith("> ")
    assert lines[-1] == f"Canonical URL: {site.url}{path}"


def test_conditional_get_and_head(client: httpx.Client) -> None:
    first = client.get("/manual/install")
    again = client.get("/manual/install", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == first.headers["etag"]
    head = client.head("/manual/install")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(first.content))


def test_the_request_origin_is_used_for_canonical_urls(client: httpx.Client) -> None:
    r = client.get("/about.md", headers={"Host": "docs.example.org:8080"})
    assert r.text.endswith("Canonical URL: http://docs.example.org:8080/about\n")
    hostile = client.get("/about.md", headers={"Host": 'x"><script>'})
    assert "<script>" not in hostile.text


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/manual/nope",
        "/compare/unknown-tool",
        "/manual/",
        "/about/",
        "/manual/install.md.md",
        "/static/missing.css",
        "/.well-known/agent-skills/unknown/SKILL.md",
        "/index",
        "/index.html",
    ],
)
def test_unpublished_paths_are_real_404s(client: httpx.Client, path: str) -> None:
    html = client.get(path)
    assert html.status_code == 404 and html.headers["content-type"].startswith("text/html")
    assert "Not found" in html.text
    md = client.get(path, headers={"Accept": "text/markdown"})
    assert md.status_code == 404 and md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# Not found") and "## Where to look next" in md.text
    js = client.get(path, headers={"Accept": "application/json"})
    assert js.status_code == 404 and js.headers["content-type"] == "application/json"
    _assert_envelope(js.json(), client)
    for r in (html, md, js):
        assert "Accept" in r.headers["vary"]


def _assert_envelope(body: dict[str, object], client: httpx.Client) -> None:
    error = body["error"]
    assert isinstance(error, dict)
    assert set(error) == {"code", "message", "hint", "status", "docs", "sitemap"}
    assert error["code"] == "not_found" and error["status"] == 404
    assert "sitemap" in str(error["hint"])
    assert str(error["docs"]).endswith("/openapi.json") and str(error["sitemap"]).endswith("/sitemap-index.xml")
    assert client.get(str(error["docs"])).status_code == 200
    assert client.get(str(error["sitemap"])).status_code == 200


@pytest.mark.parametrize("accept", ["text/html", "text/markdown", "*/*", None])
def test_everything_under_api_answers_json(client: httpx.Client, accept: str | None) -> None:
    headers = {"Accept": accept} if accept else {}
    r = client.get("/api/v1/pages", headers=headers)
    assert r.status_code == 404 and r.headers["content-type"] == "application/json"
    _assert_envelope(r.json(), client)


def _raw_get(site: RunningSite, raw_path: str, accept: str = "application/json") -> tuple[int, bytes]:
    """Send a path byte for byte (httpx would normalise dot segments)."""
    with socket.create_connection(("127.0.0.1", site.port), timeout=5) as s:
        s.sendall(
            f"GET {raw_path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status_line, _, body = data.partition(b"\r\n\r\n")
    return int(status_line.split(b" ")[1]), body


@pytest.mark.parametrize(
    "raw",
    [
        "/manual/../about",
        "/manual/..%2fabout",
        "/manual/%2e%2e/about",
        "/manual/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/static/../content/index.md",
        "/static/..%2f..%2fcontent.py",
        "//etc/passwd",
        "/manual/install%00.md",
        "/%2e%2e/%2e%2e/pyproject.toml",
    ],
)
def test_traversal_attempts_are_404(site: RunningSite, raw: str) -> None:
    status, body = _raw_get(site, raw)
    assert status == 404
    assert json.loads(body)["error"]["code"] == "not_found"


def test_404_html_escapes_the_path(client: httpx.Client) -> None:
    r = client.get("/<script>alert(1)</script>")
    assert r.status_code == 404
    assert "<script>alert(1)</script>" not in r.text and "&lt;script&gt;" in r.text
    md = client.get("/%60evil%60%0A", headers={"Accept": "text/markdown"})
    assert "`evil`" not in md.text


def test_other_methods(client: httpx.Client) -> None:
    r = client.post("/about", content=b"x")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert client.delete("/nope").status_code == 404


def test_sitemap_lists_every_page_and_every_url_answers(client: httpx.Client, site: RunningSite) -> None:
    r = client.get("/sitemap-index.xml")
    assert r.status_code == 200 and r.headers["content-type"] == "application/xml"
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    urls = [e.text or "" for e in ElementTree.fromstring(r.content).findall("s:url/s:loc", ns)]
    assert sorted(urls) == sorted(f"{site.url}/{s}" for s in page_slugs())
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_llms_txt_links_every_page_and_they_resolve(client: httpx.Client, site: RunningSite) -> None:
    r = client.get("/llms.txt")
    assert r.status_code == 200 and r.headers["content-type"] == "text/plain; charset=utf-8"
    text = r.text
    assert text.startswith("# Hangar\n\n> ")
    assert "## When to use Hangar" in text and "## Developer resources" in text
    links = re.findall(r"^- \[[^\]]+\]\(([^)]+)\): \S", text, re.MULTILINE)
    for slug in page_slugs():
        assert f"{site.url}{twin_path_of(slug)}" in links, slug
    for url in links:
        assert client.get(url).status_code == 200, url


def test_llms_full_txt(client: httpx.Client) -> None:
    r = client.get("/llms-full.txt")
    assert r.status_code == 200 and r.headers["content-type"] == "text/plain; charset=utf-8"
    for heading in ("## Overview", "## FAQ", "## Comparison matrix", "## Changelog", "## Manual"):
        assert f"\n{heading}\n" in r.text
    assert "### Pipelines" in r.text and "### Install" in r.text and "v0.0.1-rc.1" in r.text


def test_openapi_is_valid_3_1_and_covers_the_site(client: httpx.Client) -> None:
    r = client.get("/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    validate(doc)  # raises on any violation of the OpenAPI 3.1 schema
    assert doc["openapi"] == "3.1.0" and doc["info"]["version"] == "v0.0.1-rc.1"
    for path in ("/", "/compare/{tool}", "/manual/{section}/{page}", "/mcp", "/.well-known/mcp", "/llms.txt",
                 "/.well-known/api-catalog", "/sitemap-index.xml", "/rss.xml", "/healthz"):  # fmt: skip
        assert path in doc["paths"], path
    assert doc["paths"]["/compare/{tool}"]["get"]["parameters"][0]["schema"]["enum"] == list(COMPARE_TOOLS)


def test_api_catalog(client: httpx.Client, site: RunningSite) -> None:
    r = client.get("/.well-known/api-catalog")
    assert r.status_code == 200
    assert r.headers["content-type"] == 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
    linkset = r.json()["linkset"]
    anchors = {entry["anchor"]: entry for entry in linkset}
    for api in (f"{site.url}/", f"{site.url}/mcp"):
        entry = anchors[api]
        assert entry["service-desc"][0]["href"] == f"{site.url}/openapi.json"
        assert entry["service-doc"][0]["href"] == f"{site.url}/developers"
        for rel in ("service-desc", "service-doc"):
            assert client.get(entry[rel][0]["href"]).status_code == 200


def test_agent_skills_digests_match_the_served_bytes(client: httpx.Client) -> None:
    r = client.get("/.well-known/agent-skills/index.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    index = r.json()
    assert index["$schema"] == "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
    assert [s["name"] for s in index["skills"]] == list(SKILLS)
    for skill in index["skills"]:
        assert set(skill) == {"name", "type", "description", "url", "digest"} and skill["type"] == "skill-md"
        body = client.get(skill["url"])
        assert body.status_code == 200 and body.headers["content-type"].startswith("text/markdown")
        assert skill["digest"] == "sha256:" + hashlib.sha256(body.content).hexdigest()
        assert f"name: {skill['name']}" in body.text


def test_server_card(client: httpx.Client, site: RunningSite) -> None:
    a = client.get("/.well-known/mcp/server-card.json")
    b = client.get("/.well-known/mcp/server-card")
    assert a.status_code == b.status_code == 200 and a.content == b.content
    card = a.json()
    assert card["name"] == "io.hangar/docs" and card["version"] == hangar.__version__
    remotes = {r["url"]: r for r in card["remotes"]}
    assert set(remotes) == {f"{site.url}/mcp", f"{site.url}/.well-known/mcp"}
    for remote in remotes.values():
        assert remote["type"] == "streamable-http"
        assert "2025-06-18" in remote["supportedProtocolVersions"]
    assert {t["name"] for t in card["tools"]} == {"list_pages", "get_page_markdown", "search_pages"}


def test_rss(client: httpx.Client, site: RunningSite) -> None:
    r = client.get("/rss.xml")
    assert r.status_code == 200 and r.headers["content-type"] == "application/rss+xml"
    root = ElementTree.fromstring(r.content)
    assert root.tag == "rss" and root.attrib["version"] == "2.0"
    items = root.findall("channel/item")
    assert items and items[0].findtext("title", "").startswith("v0.1.0")
    assert items[-1].findtext("title", "").startswith("v0.0.1-rc.1")
    assert items[0].findtext("link") == f"{site.url}/changelog"


def test_mcp_get_card(client: httpx.Client) -> None:
    for path in ("/mcp", "/.well-known/mcp"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        card = r.json()
        assert card["name"] == "hangar-docs" and card["howToCall"]["method"] == "POST"


def test_stylesheet(client: httpx.Client) -> None:
    r = client.get("/static/site.css")
    assert r.status_code == 200 and r.headers["content-type"] == "text/css; charset=utf-8"
    assert "@media" in r.text


def test_404_html_claims_no_canonical_page(client: httpx.Client) -> None:
    r = client.get("/no/such/page")
    assert r.status_code == 404
    assert 'rel="canonical"' not in r.text and 'name="robots" content="noindex"' in r.text
