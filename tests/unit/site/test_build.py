from __future__ import annotations

import hashlib
import json

import pytest

from hangar.cli.website import build_site
from hangar.site.build import Origin, Resource, SiteBuild
from hangar.site.render import ORIGIN
from hangar.site.slugs import SKILLS, page_slugs, twin_path_of


def _res(origin: Origin, path: str) -> Resource:
    res = origin.resource(path)
    assert res is not None, path
    return res


@pytest.fixture(scope="module")
def site() -> SiteBuild:
    return build_site(None).state.site  # type: ignore[no-any-return]


def test_origin_is_substituted_everywhere(site: SiteBuild) -> None:
    origin = site.origin("https://docs.example.org")
    for path in [*site.templates, "/.well-known/agent-skills/index.json"]:
        res = origin.resource(path)
        assert res is not None and ORIGIN.encode() not in res.body, path
    for media in ("text/html", "text/markdown", "application/json"):
        assert ORIGIN.encode() not in b"".join(origin.not_found(media))
    assert b'<link rel="canonical" href="https://docs.example.org/manual/install">' in (
        _res(origin, "/manual/install").body
    )
    assert _res(origin, "/manual/install.md").body.endswith(b"Canonical URL: https://docs.example.org/manual/install\n")


def test_etag_is_the_hash_of_the_served_bytes(site: SiteBuild) -> None:
    a = _res(site.origin("http://a.test"), "/about")
    b = _res(site.origin("http://b.test"), "/about")
    assert a.etag != b.etag
    assert a.etag == b'"' + hashlib.sha256(a.body).hexdigest()[:32].encode() + b'"'
    assert (b"content-length", str(len(a.body)).encode()) in a.headers


def test_every_page_has_both_representations(site: SiteBuild) -> None:
    origin = site.origin("http://x.test")
    for slug in page_slugs():
        pair = origin.page("/" + slug)
        assert pair is not None
        html, md = pair
        assert html.body.startswith(b"<!doctype html>")
        assert md is origin.resource(twin_path_of(slug))
        assert md.body.startswith(b"# ")


def test_skills_index_digests_cover_the_served_bytes(site: SiteBuild) -> None:
    origin = site.origin("http://x.test")
    index = json.loads(_res(origin, "/.well-known/agent-skills/index.json").body)
    assert [s["name"] for s in index["skills"]] == list(SKILLS)
    for entry in index["skills"]:
        body = _res(origin, f"/.well-known/agent-skills/{entry['name']}/SKILL.md").body
        assert entry["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()


def test_a_fixed_base_url_wins_over_the_request_origin() -> None:
    site = build_site("https://docs.hangar.example").state.site
    assert _res(site.origin("http://evil.test"), "/llms.txt").body.count(b"https://docs.hangar.example/") > 100


def test_base_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="base_url"):
        build_site("docs.example.org")


def test_generated_reference_sections_are_filled(site: SiteBuild) -> None:
    route_map = site.bodies["manual/reference/route-map"]
    assert "`workspaces.create`" in route_map and "`/auth/pair`" in route_map
    assert "`/openapi.json`" in route_map
    cli = site.bodies["manual/reference/server-cli"]
    assert "### `hangar serve`" in cli and "`--site-port`" in cli
    assert "`shell.run`" in site.bodies["manual/reference/pipeline-steps"]
    assert "<!-- generated" not in "".join(site.bodies.values())


def test_unbounded_hosts_do_not_grow_the_cache(site: SiteBuild) -> None:
    for i in range(100):
        assert _res(site.origin(f"http://h{i}.test"), "/about").body
    assert len(site._origins) <= 16


def test_every_internal_link_resolves(site: SiteBuild) -> None:
    import re

    origin = site.origin("http://x.test")
    broken = []
    for slug, body in site.bodies.items():
        for target in re.findall(r"\]\((/[^)\s]*)\)", body):
            path = target.split("#")[0]
            if origin.page(path) is None and origin.resource(path) is None:
                broken.append(f"/{slug} -> {target}")
    for name, text in site.skills_text.items():
        for target in re.findall(r"https://origin\.hangar\.invalid(/[^\s)`]*)", text):
            path = target.rstrip(".:,")
            if origin.resource(path) is None and origin.page(path) is None:
                broken.append(f"skill {name} -> {target}")
    assert broken == []
