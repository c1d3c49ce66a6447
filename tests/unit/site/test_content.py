from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hangar.site.content import CONTENT_DIR, ContentError, load_pages, load_releases, load_skills, parse_page
from hangar.site.slugs import COMPARE_TOOLS, MANUAL_SECTIONS, SKILLS, manual_slugs, page_slugs

PLANNED_AREAS = (
    "manual/concepts/calendar",
    "manual/concepts/evals-replay",
    "manual/concepts/memory-knowledge",
    "manual/guides/connect-calendar",
)


def test_the_fixed_slug_set() -> None:
    slugs = manual_slugs()
    assert len(slugs) == len(set(slugs)) == 118
    assert len(COMPARE_TOOLS) == 9
    assert sum(len(s) for _k, _l, s in MANUAL_SECTIONS) == 111


def test_every_page_exists_with_title_description_and_a_real_body() -> None:
    pages = load_pages()
    assert set(pages) == set(page_slugs())
    for slug, page in pages.items():
        assert page.title and page.description, slug
        words = len(page.body.split())
        assert words >= 40 or page.generate or slug == "changelog", f"/{slug} has only {words} words"


def test_no_stray_content_files() -> None:
    expected = {("index" if s == "" else s) + ".md" for s in page_slugs()}
    found = {
        str(p.relative_to(CONTENT_DIR))
        for p in CONTENT_DIR.rglob("*.md")
        if not str(p.relative_to(CONTENT_DIR)).startswith(("skills/", "llms/"))
    }
    assert found == expected


@pytest.mark.parametrize("slug", PLANNED_AREAS)
def test_planned_areas_say_planned(slug: str) -> None:
    page = load_pages()[slug]
    assert "Status: planned" in page.body, slug
    assert page.description.startswith("Planned"), slug


BUILT_AREAS = (
    "manual/concepts/chat-bridges",
    "manual/tutorials/first-chat-bridge",
    "manual/reference/chat-bridge",
    "manual/reference/slash-commands",
    "manual/guides/chatprovider-integration",
    "manual/guides/customize-chat-bot",
    "manual/guides/link-chat-account",
    "manual/guides/repo-scripts",
    "manual/guides/connect-forges",
    "manual/guides/forge-app",
    "manual/guides/forge-integration",
    "manual/guides/forge-pr-conversations",
    "manual/concepts/pr-conversations",
    "manual/concepts/ai-review",
    "manual/guides/ai-review",
    "manual/guides/dispatch-reviewers",
    "manual/guides/review-merge-pr",
    "manual/concepts/code-intelligence",
    "manual/guides/code-search",
    "manual/guides/manage-skills",
    "manual/concepts/meetings",
    "manual/guides/record-meeting",
)


@pytest.mark.parametrize("slug", BUILT_AREAS)
def test_built_areas_do_not_say_planned(slug: str) -> None:
    page = load_pages()[slug]
    assert "planned" not in page.body.lower(), slug
    assert not page.description.startswith("Planned"), slug


def test_no_page_pretends_or_leaves_a_placeholder() -> None:
    for slug, page in load_pages().items():
        low = page.body.lower()
        for bad in ("lorem ipsum", "todo", "tbd", "coming soon", "not implemented"):
            assert bad not in low, f"/{slug} contains {bad!r}"


def test_skills_front_matter_matches_their_names() -> None:
    skills = load_skills()
    assert set(skills) == set(SKILLS)
    for name, text in skills.items():
        meta = yaml.safe_load(text.split("---", 2)[1])
        assert meta["name"] == name
        assert 20 < len(meta["description"]) <= 1024


def test_releases_newest_first() -> None:
    releases = load_releases()
    assert [r.version for r in releases] == ["v0.1.0", "v0.0.1-rc.1"]
    assert [r.date for r in releases] == sorted((r.date for r in releases), reverse=True)


def test_every_release_is_a_commit_of_the_upgrade_fixtures_and_says_what_it_migrates() -> None:
    """The changelog's releases are the ones scripts/upgrade_fixtures/releases.toml pins to commits (and whose data
    directories the upgrade tests open), and each names its commit and what it migrates."""
    import tomllib
    from pathlib import Path

    with open(Path(__file__).resolve().parents[3] / "scripts" / "upgrade_fixtures" / "releases.toml", "rb") as f:
        pinned = tomllib.load(f)["release"]
    releases = {r.version: r for r in load_releases()}
    assert sorted(releases) == sorted(p["changelog"] for p in pinned)
    for p in pinned:
        release = releases[p["changelog"]]
        assert release.date == p["date"] and f"`{p['commit'][:7]}`" in release.notes
        assert "**Migrates" in release.notes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter", "must start with"),
        ("---\ntitle: x\n", "not closed"),
        ("---\n- a\n---\nbody", "must be a mapping"),
        ("---\ntitle: x\n---\nbody", "`description`"),
        ("---\ntitle: x\ndescription: y\nextra: z\n---\nbody", "unknown front matter keys"),
    ],
)
def test_malformed_front_matter_is_named(text: str, message: str) -> None:
    with pytest.raises(ContentError, match=message):
        parse_page("x", text, where="x.md")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ContentError, match=r"missing content file index\.md for /"):
        load_pages(tmp_path)
