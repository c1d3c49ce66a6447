"""Code intelligence end to end: the ``code.index`` body run by a real pipeline on the real server indexes real
repositories (one in seven languages, and Hangar's own source) into the workspace code graph, and the ``code.*``
ops (over the RPC socket and as MCP tools) answer from it. Reindexing parses only what changed; a dry run writes
nothing; hostile files (binary, huge, a symlink out of the repo, a parse past its time) are skipped with notes; a
grammar that fails to resolve mid-run fails the step and leaves the earlier graph; every limit is tried at its
value and one past it."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import hangar
from hangar.codegraph import languages, store
from hangar.workspace import RepoService
from tests.integration.test_confined_user_code import finished, step
from tests.integration.test_workspace_repos import _git
from tests.support.mcp import mcp_session
from tests.support.mcp import payload as payload_of
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer
from tests.unit.agents.support import template, workspace_server

POLYGLOT = {
    "app/greet.py": '''import os
from app.base import Base


class Greeter(Base):
    """Says hello."""

    def greet(self, who):
        return format_name(who)


def format_name(who):
    return os.path.basename(who).title()


GREETING = "hello"
''',
    "app/base.py": "class Base:\n    pass\n",
    "web/widget.ts": """import { render } from "./render";

export interface Shape { area(): number }

export class Square implements Shape {
  constructor(private side: number) {}
  area(): number { return render(this.side * this.side); }
}

export function makeSquare(n: number): Square { return new Square(n); }
""",
    "web/render.js": "export function render(x) { return String(x); }\n",
    "svc/main.go": """package main

import "fmt"

type Store struct{ items []string }

type Reader interface{ Read() string }

func (s *Store) Add(item string) { s.items = append(s.items, item); announce(item) }

func announce(item string) { fmt.Println(item) }

func main() { s := &Store{}; s.Add("x") }
""",
    "core/lib.rs": """use std::fmt;

pub trait Shape { fn area(&self) -> f64; }

pub struct Circle { r: f64 }

impl Shape for Circle {
    fn area(&self) -> f64 { square(self.r) * 3.14 }
}

fn square(x: f64) -> f64 { x * x }
""",
    "jvm/Dog.java": """package zoo;

import java.util.List;

public class Dog extends Animal implements Pet {
    public void bark() { System.out.println(sound()); }
    private String sound() { return "woof"; }
}
""",
    "native/util.c": """#include <stdio.h>
#include "util.h"

struct point { int x; int y; };

static int twice(int v) { return v * 2; }

int main(void) { printf("%d", twice(2)); return 0; }
""",
    "README.md": "not code\n",
}


def commit_tree(repo: Path, files: dict[str, str | bytes], message: str = "change") -> None:
    for name, content in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def new_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    commit_tree(root, files, "first")
    return root


async def register(srv: RunningServer, c: RpcClient, ws: str, source: Path) -> tuple[str, str]:
    """Register ``source``; its id and the clone's path (what a template names as ``repo_local_path``)."""
    repo = await c.call("repos.register", workspace_id=ws, path=str(source))
    return repo["id"], str(srv.ctx.service(RepoService).clone_path(ws, repo["id"]))


async def refresh(srv: RunningServer, ws: str, repo_id: str) -> None:
    repos = srv.ctx.service(RepoService)
    await repos.refresh(ws, await repos.get(ws, repo_id))


_RUNS = itertools.count()


async def index(
    c: RpcClient, ws: str, repo_id: str, path: str, *, dry_run: bool = False, **extras: Any
) -> dict[str, Any]:
    """Run a pipeline whose one step is ``code.index``; the finished run."""
    tid = f"index-{next(_RUNS)}"
    config = {"extras": extras} if extras else {}
    raw = template({"id": "index", "body": "code.index", "config": config}, tid=tid)
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call(
        "pipelines.runs.start",
        workspace_id=ws,
        templateId=tid,
        payload={"repo_id": repo_id, "repo_local_path": path},
        dryRun=dry_run,
    )
    return await finished(c, ws, started["runId"])


def report(run: dict[str, Any]) -> dict[str, Any]:
    assert run["status"] == "completed", json.dumps(step(run, "index"))
    return dict(run["state"]["code_index"])


def names(symbols: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(s["name"], s["kind"], s["container"]) for s in symbols}


async def test_a_repo_in_seven_languages_is_indexed_and_every_code_op_answers(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "poly", dict(POLYGLOT))
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        run = await index(c, ws, repo_id, clone)
        found = report(run)
        assert found["filesParsed"] == 8 and found["skippedCount"] == 0 and found["previousCommitId"] is None
        assert step(run, "index")["progress"]["phase"] == "done"

        outline = (await c.call("code.outline", workspace_id=ws, repoId=repo_id, path="app/greet.py"))["symbols"]
        assert [(s["name"], s["kind"], s["container"], s["startLine"]) for s in outline] == [
            ("Greeter", "class", "", 5),
            ("greet", "method", "Greeter", 8),
            ("format_name", "function", "", 12),
            ("GREETING", "variable", "", 16),
        ]

        async def symbols_of(path: str) -> set[tuple[str, str, str]]:
            return names((await c.call("code.outline", workspace_id=ws, repoId=repo_id, path=path))["symbols"])

        assert {("Shape", "interface", ""), ("Square", "class", ""), ("area", "method", "Square"),
                ("makeSquare", "function", "")} <= await symbols_of("web/widget.ts")  # fmt: skip
        assert {("Store", "struct", ""), ("Reader", "interface", ""), ("Add", "method", ""),
                ("announce", "function", "")} <= await symbols_of("svc/main.go")  # fmt: skip
        assert {("Shape", "trait", ""), ("Circle", "struct", ""), ("area", "method", "Circle"),
                ("square", "function", "")} <= await symbols_of("core/lib.rs")  # fmt: skip
        assert {("Dog", "class", ""), ("bark", "method", "Dog"), ("sound", "method", "Dog")} <= await symbols_of(
            "jvm/Dog.java"
        )
        assert {("point", "struct", ""), ("twice", "function", ""), ("main", "function", "")} <= await symbols_of(
            "native/util.c"
        )
        assert ("render", "function", "") in await symbols_of("web/render.js")

        def edges(result: dict[str, Any]) -> set[tuple[str, str, str, str]]:
            return {(e["path"], e["kind"], e["source"], e["target"]) for e in result["edges"]}

        inherits = edges(await c.call("code.references", workspace_id=ws, name="Base", kinds=["inherits"]))
        assert inherits == {("app/greet.py", "inherits", "Greeter", "Base")}
        assert ("jvm/Dog.java", "inherits", "Dog", "Animal") in edges(
            await c.call("code.references", workspace_id=ws, name="Animal")
        )
        assert ("core/lib.rs", "inherits", "Circle", "Shape") in edges(
            await c.call("code.references", workspace_id=ws, name="Shape", kinds=["inherits"])
        )
        assert ("web/widget.ts", "inherits", "Square", "Shape") in edges(
            await c.call("code.references", workspace_id=ws, name="Shape", kinds=["inherits"])
        )
        callers = edges(await c.call("code.callers", workspace_id=ws, name="format_name"))
        assert callers == {("app/greet.py", "calls", "Greeter.greet", "format_name")}
        assert ("svc/main.go", "calls", "Add", "announce") in edges(
            await c.call("code.callers", workspace_id=ws, name="announce")
        )
        assert ("native/util.c", "calls", "main", "twice") in edges(
            await c.call("code.callers", workspace_id=ws, name="twice")
        )
        callees = {e["target"] for e in (await c.call("code.callees", workspace_id=ws, name="Circle.area"))["edges"]}
        assert callees == {"square"}
        imports = edges(await c.call("code.references", workspace_id=ws, name="os", kinds=["imports"]))
        assert imports == {("app/greet.py", "imports", "", "os")}
        assert ("web/widget.ts", "imports", "", "./render") in edges(
            await c.call("code.references", workspace_id=ws, name="./render", kinds=["imports"])
        )
        assert ("svc/main.go", "imports", "", "fmt") in edges(
            await c.call("code.references", workspace_id=ws, name="fmt", kinds=["imports"])
        )
        refs = edges(await c.call("code.references", workspace_id=ws, name="GREETING", kinds=["references"]))
        assert refs == set()  # defined, never used
        defines = edges(await c.call("code.references", workspace_id=ws, name="greet", kinds=["defines"]))
        assert defines == {("app/greet.py", "defines", "Greeter", "greet")}

        definition = (await c.call("code.definition", workspace_id=ws, name="Square.area"))["symbols"]
        assert [(d["path"], d["startLine"]) for d in definition] == [("web/widget.ts", 7)]
        both = (await c.call("code.definition", workspace_id=ws, name="area", path="core/lib.rs"))["symbols"]
        assert both[0]["path"] == "core/lib.rs" and {d["path"] for d in both} == {"core/lib.rs", "web/widget.ts"}

        # Ranked: the exact name first, then prefixes, then letters in order (fuzzy).
        ranked = (await c.call("code.search", workspace_id=ws, query="square"))["symbols"]
        assert [s["name"] for s in ranked[:2]] == ["square", "Square"] and ranked[0]["kind"] == "function"
        assert "makeSquare" in [s["name"] for s in ranked]
        fuzzy = [s["name"] for s in (await c.call("code.search", workspace_id=ws, query="fmtnm"))["symbols"]]
        assert fuzzy == ["format_name"]
        prefix = [s["name"] for s in (await c.call("code.search", workspace_id=ws, query="ann"))["symbols"]]
        assert prefix[0] == "announce"
        only = (await c.call("code.search", workspace_id=ws, query="a", kinds=["trait"], repoId=repo_id))["symbols"]
        assert [s["name"] for s in only] == ["Shape"]

        status = (await c.call("code.status", workspace_id=ws))["repos"]
        assert [(r["repoId"], r["files"], r["symbols"] > 20) for r in status] == [(repo_id, 8, True)]

        # Agents get the ops as tools: the MCP endpoint lists them and answers the same.
        async with mcp_session(srv, srv.owner_token) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"code.search", "code.definition", "code.references", "code.callers", "code.callees",
                    "code.outline"} <= tools  # fmt: skip
            answer = await session.call_tool("code.search", {"workspace_id": ws, "query": "Greeter"})
            assert payload_of(answer)["symbols"][0]["path"] == "app/greet.py"


async def test_hangar_own_source_is_indexed_with_its_symbols_and_edges(tmp_path: Path) -> None:
    source = tmp_path / "hangar-src"
    shutil.copytree(Path(hangar.__file__).parent, source / "src" / "hangar", ignore=shutil.ignore_patterns("*.pyc"))
    _git(source, "init", "-q", "-b", "main")
    commit_tree(source, {}, "hangar")
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        found = report(await index(c, ws, repo_id, clone))
        assert found["filesParsed"] > 500 and found["linesParsed"] > 40_000 and found["skippedCount"] == 0

        body = "src/hangar/codegraph/body.py"
        hits = (await c.call("code.definition", workspace_id=ws, name="code_index"))["symbols"]
        assert (hits[0]["path"], hits[0]["kind"]) == (body, "function")  # before the table of that name
        parse = (await c.call("code.definition", workspace_id=ws, name="ParserPool.parse"))["symbols"]
        assert [(p["path"], p["kind"]) for p in parse] == [("src/hangar/codegraph/pool.py", "method")]
        callers = {
            (e["path"], e["source"])
            for e in (await c.call("code.callers", workspace_id=ws, name="index_commit"))["edges"]
        }
        assert (body, "code_index") in callers
        bases = await c.call("code.references", workspace_id=ws, name="Exception", kinds=["inherits"], limit=500)
        assert ("src/hangar/codegraph/pool.py", "GrammarFailed") in {(e["path"], e["source"]) for e in bases["edges"]}
        imports = await c.call("code.references", workspace_id=ws, name="hangar.codegraph.indexer", kinds=["imports"])
        assert body in {e["path"] for e in imports["edges"]}
        top = (await c.call("code.search", workspace_id=ws, query="RunningServ"))["symbols"]
        assert top == [] or top[0]["name"].startswith("RunningServ")  # tests are not in src/hangar
        ranked = (await c.call("code.search", workspace_id=ws, query="ParserPool"))["symbols"]
        assert ranked[0]["name"] == "ParserPool" and ranked[0]["kind"] == "class"


async def test_a_reindex_parses_only_what_changed_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "poly", dict(POLYGLOT))
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        first = report(await index(c, ws, repo_id, clone))
        commit_tree(
            source,
            {
                "app/base.py": "class Base:\n    def hello(self):\n        pass\n",
                "app/new.py": "def fresh():\n    pass\n",
            },
        )
        (source / "native" / "util.c").unlink()
        commit_tree(source, {}, "drop util.c")
        await refresh(srv, ws, repo_id)

        dry = report(await index(c, ws, repo_id, clone, dry_run=True))
        assert (dry["dryRun"], dry["filesToParse"], dry["filesRemoved"], dry["filesParsed"]) == (True, 2, 1, 0)
        status = (await c.call("code.status", workspace_id=ws))["repos"][0]
        assert status["commitId"] == first["commitId"]  # the dry run wrote nothing
        assert (await c.call("code.definition", workspace_id=ws, name="fresh"))["symbols"] == []

        again = report(await index(c, ws, repo_id, clone))
        assert again["previousCommitId"] == first["commitId"] and again["commitId"] != first["commitId"]
        assert (again["filesToParse"], again["filesUnchanged"], again["filesRemoved"]) == (2, 6, 1)
        assert again["totalFiles"] == 8
        assert [s["path"] for s in (await c.call("code.definition", workspace_id=ws, name="fresh"))["symbols"]] == [
            "app/new.py"
        ]
        assert (await c.call("code.definition", workspace_id=ws, name="Base.hello"))["symbols"]
        assert (await c.call("code.definition", workspace_id=ws, name="twice"))["symbols"] == []
        assert (await c.call("code.outline", workspace_id=ws, repoId=repo_id, path="native/util.c"))["symbols"] == []
        # Unchanged files kept their rows.
        assert (await c.call("code.definition", workspace_id=ws, name="Greeter"))["symbols"]

        nothing = report(await index(c, ws, repo_id, clone))
        assert (nothing["filesToParse"], nothing["filesParsed"]) == (0, 0)

        # A repo removed from the workspace: its graph is read by no op, and the next index run drops its rows.
        other_id, other_clone = await register(
            srv, c, ws, new_repo(tmp_path / "other", {"o.py": "def o():\n    pass\n"})
        )
        report(await index(c, ws, other_id, other_clone))
        await c.call("repos.remove", workspace_id=ws, repoId=repo_id)
        assert [r["repoId"] for r in (await c.call("code.status", workspace_id=ws))["repos"]] == [other_id]
        assert (await c.call("code.definition", workspace_id=ws, name="Greeter"))["symbols"] == []
        engine = await srv.ctx.dbs.workspace(ws)
        assert {s.repo_id for s in await store.all_states(engine)} == {repo_id, other_id}
        report(await index(c, ws, other_id, other_clone))
        assert {s.repo_id for s in await store.all_states(engine)} == {other_id}
        assert await store.file_blobs(engine, repo_id) == {}


async def test_hostile_files_are_skipped_with_notes_and_every_limit_holds_on_both_sides(tmp_path: Path) -> None:
    body = "def f():\n    return 1\n"
    big = "x = 1\n" * 30_000
    source = new_repo(
        tmp_path / "hostile",
        {
            "ok.py": body,
            "exact.py": body + "#" * (100 - len(body) - 1) + "\n",  # 100 bytes: at the limit
            "over.py": body + "#" * (101 - len(body) - 1) + "\n",  # 101 bytes: one past
            "blob.c": b"int main(void) { return 0; }\n\0\x01\x02binary",
            "slow.py": big,
        },
    )
    os.symlink("/etc/passwd", source / "escape.py")
    commit_tree(source, {}, "a symlink out of the repo")
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        run = await index(c, ws, repo_id, clone, maxFileBytes=100)
        found = report(run)
        notes = {s["path"]: s["note"] for s in found["skipped"]}
        assert set(notes) == {"over.py", "blob.c", "slow.py", "escape.py"}
        assert notes["over.py"] == "too large: 101 bytes (the limit is 100)"
        assert notes["blob.c"] == "binary: not parsed"
        assert notes["escape.py"] == "symlink: not followed"
        assert found["filesParsed"] == 2
        assert (await c.call("code.outline", workspace_id=ws, repoId=repo_id, path="exact.py"))["symbols"]
        assert (await c.call("code.outline", workspace_id=ws, repoId=repo_id, path="escape.py"))["symbols"] == []

        # The time bound: a parse past timeoutMs is a note. Skipped files are tried again by every run.
        timed = report(await index(c, ws, repo_id, clone, timeoutMs=1, maxFileBytes=16 << 20))
        notes = {s["path"]: s["note"] for s in timed["skipped"]}
        assert notes["slow.py"].startswith("timeout: parsing took longer than")
        assert "over.py" not in notes and timed["filesToParse"] == 4  # the four skipped before
        whole = report(await index(c, ws, repo_id, clone, maxFileBytes=16 << 20))
        assert {s["path"]: s["note"] for s in whole["skipped"]} == {
            "blob.c": "binary: not parsed",
            "escape.py": "symlink: not followed",
        }
        slow = (await c.call("code.outline", workspace_id=ws, repoId=repo_id, path="slow.py"))["symbols"]
        assert len(slow) == 30_000 and slow[-1]["startLine"] == 30_000

        for extras, bad in (
            ({"maxFileBytes": 16 << 20}, None),
            ({"maxFileBytes": (16 << 20) + 1}, "maxFileBytes"),
            ({"timeoutMs": 60_000}, None),
            ({"timeoutMs": 60_001}, "timeoutMs"),
            ({"workers": 8}, None),
            ({"workers": 9}, "workers"),
            ({"workers": 0}, "workers"),
        ):
            run = await index(c, ws, repo_id, clone, **extras)
            if bad is None:
                assert run["status"] == "completed", extras
            else:
                assert (
                    run["status"] == "failed" and f"extras.{bad} must be a whole number" in step(run, "index")["error"]
                )


async def test_a_grammar_that_fails_to_resolve_mid_run_fails_the_step_and_keeps_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = new_repo(tmp_path / "poly", dict(POLYGLOT))
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        first = report(await index(c, ws, repo_id, clone))
        commit_tree(source, {"app/base.py": "class Base:\n    def gone(self): pass\n", "svc/main.go": "package main\n"})
        await refresh(srv, ws, repo_id)
        # The Go grammar vanishes: Python files parse, then the first Go file cannot.
        broken = dataclasses.replace(languages.LANGUAGES["go"], grammar="tree_sitter_go_removed:language")
        monkeypatch.setitem(languages.LANGUAGES, "go", broken)
        run = await index(c, ws, repo_id, clone)
        assert run["status"] == "failed"
        error = step(run, "index")["error"]
        assert "the go grammar failed to resolve" in error and "keeps its earlier state" in error
        status = (await c.call("code.status", workspace_id=ws))["repos"][0]
        assert status["commitId"] == first["commitId"]
        assert (await c.call("code.definition", workspace_id=ws, name="Base.gone"))["symbols"] == []
        assert (await c.call("code.definition", workspace_id=ws, name="announce"))["symbols"]


async def test_the_state_keys_are_records_looked_up_never_paths_followed(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "poly", {"a.py": "def a():\n    pass\n"})
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        for rid, path, said in (
            (repo_id, str(source), "is neither repo"),  # the origin on disk: not a checkout Hangar keeps
            (repo_id, "/etc", "is neither repo"),
            (repo_id, clone + "/../../../..", "is neither repo"),
            ("no-such-repo", clone, "repo_id"),
            ("", clone, "repo_id must be a non-empty string"),
            ("a\x00b", clone, "repo_id must be a non-empty string without NUL"),
            (repo_id, clone + "\x00", "repo_local_path must be a non-empty string without NUL"),
        ):
            run = await index(c, ws, rid, path)
            assert run["status"] == "failed" and said in step(run, "index")["error"], (rid, path)
        tid = "no-keys"
        await c.call(
            "pipelines.templates.create",
            workspace_id=ws,
            template=template({"id": "index", "body": "code.index"}, tid=tid),
        )
        started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid, payload={})
        run = await finished(c, ws, started["runId"])
        assert "state has no repo_id" in step(run, "index")["error"]
        for op, args in (
            ("code.search", {"query": "a", "repoId": "nope"}),
            ("code.outline", {"repoId": "nope", "path": "a.py"}),
        ):
            with pytest.raises(RpcError) as refused:
                await c.call(op, workspace_id=ws, **args)
            assert refused.value.code == "not_found", op
        with pytest.raises(RpcError) as refused:
            await c.call("code.search", workspace_id=ws, query="a", limit=501)
        assert refused.value.code == "invalid_args" and "limit" in str(refused.value)
        assert (await c.call("code.search", workspace_id=ws, query="a", limit=500))["symbols"] == []


async def test_hostile_text_in_every_code_op_is_answered_never_internal(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "poly", {"a.py": "def a():\n    pass\n"})
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        report(await index(c, ws, repo_id, clone))
        for text in ("\x00", "\ud800", "%", "_", "\\", "a%_\\", "' OR 1=1 --", "é" * 200, "a" * 200):
            for op, args in (
                ("code.search", {"query": text}),
                ("code.search", {"query": text, "kinds": [text]}),
                ("code.definition", {"name": text, "path": text}),
                ("code.references", {"name": text}),
                ("code.callers", {"name": text}),
                ("code.callees", {"name": text}),
                ("code.outline", {"repoId": repo_id, "path": text}),
            ):
                try:
                    answer = await c.call(op, workspace_id=ws, **args)
                except RpcError as exc:
                    assert exc.code == "invalid_args", (op, text, exc)
                else:
                    assert answer.get("symbols", answer.get("edges")) == [], (op, text, answer)
        # The wildcards of LIKE are the query's own characters, not patterns.
        assert (await c.call("code.search", workspace_id=ws, query="%"))["symbols"] == []
        assert [s["name"] for s in (await c.call("code.search", workspace_id=ws, query="a"))["symbols"]] == ["a"]
