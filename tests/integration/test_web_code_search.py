"""The code search page of a repository end to end: Debian's Chromium, driven by Playwright, against a real server
(every part) serving the real build of ``web/``, with the repository indexed by a real pipeline run of the
``code.index`` body.

From the workspace's repositories the person opens a repository's code search page: it shows the index status (the
commit indexed and the counts), a search by letters in order finds ``format_name``, its page shows its definition
and its caller ``Greeter.greet``, the caller's link opens that symbol (its callees lead back), a definition's
location opens the file's outline with the symbol at that line marked, and the browser's back button walks the
jumps; a guest of the workspace follows the same links. A repository not indexed says so; an id that is no
repository of the workspace is said plainly. axe finds no serious or critical violation on the search, symbol and
file views, light and dark, desktop and phone; nothing scrolls sideways at phone width; no console error anywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.integration.test_code_graph import POLYGLOT, index, new_repo, register, report
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in, shot
from tests.unit.agents.support import server_parts

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
FILES = {name: POLYGLOT[name] for name in ("app/greet.py", "app/base.py")}


def panel(page: Any, heading: str) -> Any:
    """The page's section named by ``heading``."""
    return page.get_by_role("region", name=heading, exact=True)


async def settled(page: Any) -> None:
    await expect(page.locator('[aria-busy="true"]')).to_have_count(0)


async def test_search_a_symbol_follow_its_caller_and_jump_to_its_definition(tmp_path: Path, dist: Path) -> None:
    source = new_repo(tmp_path / "poly", dict(FILES))
    bare = new_repo(tmp_path / "bare", {"x.py": "def x():\n    pass\n"})
    async with running_server(tmp_path / "data", parts=server_parts(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Harbour")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            repo_id, clone = await register(srv, c, ws, source)
            found = report(await index(c, ws, repo_id, clone))
            bare_id, _clone = await register(srv, c, ws, bare)
        commit = found["commitId"]
        base = f"{srv.url}/workspaces/{ws}"
        code = f"{base}/repos/{repo_id}/code"

        page, console = await open_signed_in(browser, base + "/repos", srv.owner_token, viewport=DESKTOP)
        await page.get_by_role("link", name="Code search in poly").click()
        await page.wait_for_url(code)
        await page.get_by_role("heading", name="Code search: poly", level=1).wait_for()
        status = page.get_by_label("Index status")
        await expect(status).to_contain_text(commit[:12])
        await expect(status).to_contain_text(re.compile(r"Files\s*2\s*Lines\s*18\s*Symbols\s*5\s*Edges"))

        # `/` puts the focus in the search box; letters in order find the function; the URL follows what is typed.
        await page.locator("body").press("/")
        await expect(page.get_by_label("Symbol name")).to_be_focused()
        await page.keyboard.type("frmtnm")
        results = page.get_by_role("list", name="Results")
        await results.get_by_role("link", name="format_name", exact=True).wait_for()
        await page.wait_for_url(re.compile(r"\?q=frmtnm$"))
        await expect(results).to_contain_text("app/greet.py:12")
        await shot(page, "code-search")

        # Its page: the definition, and the caller.
        await results.get_by_role("link", name="format_name", exact=True).click()
        await page.wait_for_url(re.compile(r"symbol=format_name"))
        symbol = panel(page, "format_name")
        await symbol.wait_for()
        await expect(symbol.get_by_role("heading", level=2)).to_be_focused()
        definitions = symbol.get_by_role("list", name="Definitions")
        await expect(definitions.get_by_role("link", name="app/greet.py:12")).to_have_count(1)
        callers = symbol.get_by_role("list", name="Callers")
        await expect(callers).to_contain_text("app/greet.py:9")

        # The caller's link opens the calling method; its callees lead back to the function.
        await callers.get_by_role("link", name="Greeter.greet").click()
        await page.wait_for_url(re.compile(r"symbol=Greeter\.greet"))
        caller = panel(page, "Greeter.greet")
        await caller.get_by_role("list", name="Definitions").get_by_role("link", name="app/greet.py:8").wait_for()
        callees = caller.get_by_role("list", name="Callees")
        await expect(callees.get_by_role("link", name="format_name")).to_have_count(1)
        await expect(caller.get_by_role("list", name="Callers")).to_have_count(0)
        await expect(caller).to_contain_text("No calls of it.")
        await shot(page, "code-search-symbol")

        # Jump to the definition's location: the file's outline with the method marked.
        await caller.get_by_role("list", name="Definitions").get_by_role("link", name="app/greet.py:8").click()
        await page.wait_for_url(re.compile(r"file=app%2Fgreet\.py&line=8$"))
        outline = panel(page, "app/greet.py:8").get_by_role("list", name="Outline")
        marked = outline.get_by_role("link", name="greet", exact=True)
        await expect(marked).to_have_attribute("aria-current", "location")
        await expect(outline.locator('[aria-current="location"]')).to_have_count(1)
        await expect(panel(page, "app/greet.py:8")).to_contain_text("Line 8 is in Greeter.greet")
        names = await outline.locator(".code-name").all_inner_texts()
        assert names == ["Greeter", "greet", "format_name", "GREETING"]

        # Back walks the jumps: the caller, then the function, then the search (its results still there).
        await page.go_back()
        await panel(page, "Greeter.greet").wait_for()
        await page.go_back()
        await panel(page, "format_name").wait_for()
        await page.go_back()
        await results.get_by_role("link", name="format_name", exact=True).wait_for()
        await expect(page.get_by_label("Symbol name")).to_have_value("frmtnm")

        # A search that finds nothing says so.
        await page.get_by_label("Symbol name").fill("zzzq")
        await expect(page.get_by_text("No symbol matches “zzzq”.")).to_be_visible()

        # A repository not indexed says so, and searching it finds nothing; an id that is no repo is said plainly.
        await page.goto(f"{base}/repos/{bare_id}/code?q=x")
        await expect(page.get_by_text("This repository is not indexed yet")).to_be_visible()
        await expect(page.get_by_text("No symbol matches “x”.")).to_be_visible()
        await page.goto(f"{base}/repos/not-a-repo/code")
        await expect(page.get_by_role("alert")).to_have_text("This workspace has no repository with this id.")
        await page.goto(f"{srv.url}/workspaces/not-a-workspace/repos/{repo_id}/code")
        await expect(page.get_by_role("alert")).to_contain_text("not one of its members")
        assert console.errors == []

        # A guest reads the code graph too (every code op is a guest's read): the link jumps for them as well.
        guest = await srv.new_user_token(ws, "guest", name="Gale")
        seen, seen_console = await open_signed_in(browser, f"{code}?symbol=format_name", guest, viewport=DESKTOP)
        await (
            panel(seen, "format_name")
            .get_by_role("list", name="Callers")
            .get_by_role("link", name="Greeter.greet")
            .click()
        )
        await panel(seen, "Greeter.greet").get_by_role("list", name="Callees").wait_for()
        assert seen_console.errors == []
        await seen.context.close()

        # axe on the search, symbol and file views, light and dark, desktop and phone; nothing scrolls sideways.
        views = [
            ("search", "?q=gre", "Results"),
            ("symbol", "?q=gre&symbol=Greeter.greet&from=app%2Fgreet.py", "Greeter.greet"),
            ("file", "?file=app%2Fgreet.py&line=9", "app/greet.py:9"),
        ]
        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                other, other_console = await open_signed_in(
                    browser, code, srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                for view, query, heading in views:
                    await other.goto(code + query)
                    await other.get_by_role("heading", name=heading, exact=True).wait_for()
                    await settled(other)
                    where = f"{view} {scheme} {viewport['width']}"
                    assert await axe_violations(other) == [], where
                    overflow = await other.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                    assert overflow <= 0, f"{where} scrolls sideways"
                assert other_console.errors == []
                await other.context.close()
