"""The server serves the web client (CONTRACTS.md section 9): the app shell for every GET of a path that is not
reserved, hashed assets cached for a year, the reserved paths untouched, and the landing page (saying how to build
the client) when it is not built. A small stand-in build is used so this runs without node."""

from __future__ import annotations

import gzip
from pathlib import Path

import httpx
import pytest

from tests.integration.core_parts import PARTS
from tests.support.server import running_server

SHELL = '<!doctype html><html><head><script type="module" src="/assets/app-4f3a.js"></script></head></html>'


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    built = tmp_path / "dist"
    (built / "assets").mkdir(parents=True)
    (built / "index.html").write_text(SHELL)
    (built / "assets" / "app-4f3a.js").write_text("console.log('hangar')")
    return built


async def test_every_unreserved_get_answers_the_shell_under_a_strict_policy(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path / "data", parts=PARTS, web_dist=dist) as srv, httpx.AsyncClient() as http:
        port = srv.url.rsplit(":", 1)[1]
        for path in ("/", "/connect", "/workspaces/w1", "/workspaces/w1/spaces/s1", "/settings/server/sso", "/x.txt"):
            page = await http.get(srv.url + path)
            assert page.status_code == 200, path
            assert page.text == SHELL and page.headers["content-type"].startswith("text/html")
            assert page.headers["cache-control"] == "no-cache"
            csp = page.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src 'self';" in csp and "style-src 'self';" in csp
            assert "unsafe-inline" not in csp and "https:" not in csp
            assert f"connect-src 'self' ws://127.0.0.1:{port};" in csp
            assert "frame-ancestors 'none'" in csp
        asset = await http.get(f"{srv.url}/assets/app-4f3a.js")
        assert asset.status_code == 200 and asset.text == "console.log('hangar')"
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert "javascript" in asset.headers["content-type"] and asset.headers["x-content-type-options"] == "nosniff"
        assert (await http.get(f"{srv.url}/assets/app-0000.js")).status_code == 404
        assert (await http.get(f"{srv.url}/assets/..%2Findex.html")).status_code == 404
        # A rebuild while the server runs is served at the next load (new hashed names in a new shell).
        (dist / "index.html").write_text(SHELL.replace("4f3a", "77aa"))
        assert "app-77aa.js" in (await http.get(f"{srv.url}/workspaces/w1")).text


# A stand-in bundle that compresses like a real one (repetitive identifiers), large enough to be worth it.
BUNDLE = "".join(
    f"export function component{i}(props) {{ return render(props.value{i % 17}); }}\n" for i in range(4000)
)


async def raw_get(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
    """The response and its body exactly as sent (httpx would otherwise decode gzip)."""
    async with http.stream("GET", url, headers=headers) as response:
        return response, b"".join([chunk async for chunk in response.aiter_raw()])


async def test_text_assets_go_gzipped_to_a_client_that_accepts_it(tmp_path: Path, dist: Path) -> None:
    (dist / "assets" / "index-9c1d.js").write_text(BUNDLE)
    (dist / "assets" / "logo-1b2c.png").write_bytes(bytes(range(256)) * 16)
    url = "/assets/index-9c1d.js"
    async with running_server(tmp_path / "data", parts=PARTS, web_dist=dist) as srv, httpx.AsyncClient() as http:
        del http.headers["accept-encoding"]  # httpx asks for gzip by default; each request below says what it accepts
        zipped, body = await raw_get(http, srv.url + url, {"Accept-Encoding": "gzip, deflate, br"})
        assert zipped.status_code == 200
        assert zipped.headers["content-encoding"] == "gzip" and zipped.headers["vary"] == "Accept-Encoding"
        assert int(zipped.headers["content-length"]) == len(body) < len(BUNDLE) // 5
        assert gzip.decompress(body).decode() == BUNDLE
        assert "javascript" in zipped.headers["content-type"]
        assert zipped.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert zipped.headers["x-content-type-options"] == "nosniff"
        # Compressed once: the second answer is the kept body, byte for byte.
        assert (await raw_get(http, srv.url + url, {"Accept-Encoding": "gzip"}))[1] == body

        for refusing in ({}, {"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip;q=0, br"}):
            plain, raw = await raw_get(http, srv.url + url, refusing)
            assert plain.status_code == 200, refusing
            assert "content-encoding" not in plain.headers and raw.decode() == BUNDLE, refusing
            assert plain.headers["vary"] == "Accept-Encoding", refusing
            assert plain.headers["etag"] != zipped.headers["etag"], "two representations share a validator"
        assert (await raw_get(http, srv.url + url, {"Accept-Encoding": "*"}))[0].headers["content-encoding"] == "gzip"

        # Revalidation answers 304 for the representation the client holds.
        again = {"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["etag"]}
        assert (await raw_get(http, srv.url + url, again))[0].status_code == 304

        # Already compressed formats, and files too small to gain, go as they are.
        png, raw = await raw_get(http, f"{srv.url}/assets/logo-1b2c.png", {"Accept-Encoding": "gzip"})
        assert "content-encoding" not in png.headers and raw == bytes(range(256)) * 16
        tiny, raw = await raw_get(http, f"{srv.url}/assets/app-4f3a.js", {"Accept-Encoding": "gzip"})
        assert "content-encoding" not in tiny.headers and raw == b"console.log('hangar')"
        # A rebuilt file under the same name (a developer's rebuild) is compressed afresh.
        (dist / "assets" / "index-9c1d.js").write_text(BUNDLE + "export const rebuilt = 1;\n")
        _, body = await raw_get(http, srv.url + url, {"Accept-Encoding": "gzip"})
        assert gzip.decompress(body).decode().endswith("rebuilt = 1;\n")


async def test_reserved_paths_keep_their_routes(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path / "data", parts=PARTS, web_dist=dist) as srv, httpx.AsyncClient() as http:
        health = await http.get(f"{srv.url}/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert (await http.get(f"{srv.url}/auth/pair")).status_code == 405
        assert (await http.get(f"{srv.url}/auth/me")).status_code == 401
        paths = ("/rpc", "/mcp", "/mcp/", "/auth/nothing", "/saml/x", "/oidc/x", "/scim/v2/x", "/rig/x", "/open/x")
        for path in paths:
            answer = await http.get(srv.url + path)
            assert answer.status_code >= 300, path
            assert answer.text != SHELL, path
        assert (await http.get(f"{srv.url}/.well-known/nothing")).status_code == 404
        assert (await http.get(f"{srv.url}/.well-known/oauth-protected-resource")).status_code == 200
        # Only GET answers the shell.
        assert (await http.post(f"{srv.url}/workspaces/w1")).status_code == 405


async def test_without_a_built_client_the_root_says_how_to_build_it(tmp_path: Path) -> None:
    missing = tmp_path / "not-built"
    async with running_server(tmp_path / "data", parts=PARTS, web_dist=missing) as srv, httpx.AsyncClient() as http:
        for path in ("/", "/workspaces/w1"):
            page = await http.get(srv.url + path)
            assert page.status_code == 200
            assert "not built" in page.text and "npm ci &amp;&amp; npm run build" in page.text
            assert "make run" in page.text and "owner-token" in page.text
            assert "default-src 'none'" in page.headers["content-security-policy"]
        assert (await http.get(f"{srv.url}/assets/app.js")).status_code == 404
        # Built while the server runs: the next load is the app.
        (missing / "assets").mkdir(parents=True)
        (missing / "index.html").write_text(SHELL)
        (missing / "assets" / "app-4f3a.js").write_text("1")
        assert (await http.get(f"{srv.url}/")).text == SHELL
        assert (await http.get(f"{srv.url}/assets/app-4f3a.js")).status_code == 200


async def test_behind_a_public_url_the_policy_admits_its_socket_origin(tmp_path: Path, dist: Path) -> None:
    async with (
        running_server(tmp_path / "data", parts=PARTS, web_dist=dist, public_url="https://hangar.example") as srv,
        httpx.AsyncClient() as http,
    ):
        csp = (await http.get(f"{srv.url}/")).headers["content-security-policy"]
        assert "wss://hangar.example" in csp
        evil = await http.get(f"{srv.url}/", headers={"Host": "evil.example; script-src *"})
        assert "script-src *" not in evil.headers["content-security-policy"]
