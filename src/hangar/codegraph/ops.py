"""The code ops, each also an MCP tool and so a tool of every agent: ``code.search`` (ranked, prefix and fuzzy),
``code.definition``, ``code.references``, ``code.callers``, ``code.callees``, ``code.outline`` and
``code.status`` (which repos are indexed, at which commit). All are reads any workspace guest may make; a
``repoId`` is a workspace repo (id or name), looked up, and without it every indexed repo of the workspace is
read. The graph is filled by the ``code.index`` pipeline body."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from hangar.codegraph import queries, store
from hangar.codegraph.queries import MAX_QUERY, Edge, Symbol
from hangar.codegraph.results import CodeEdges, CodeStatus, CodeSymbols, EdgeView, IndexedRepo, SymbolView
from hangar.core.part import OpFunction
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op
from hangar.workspace import RepoService

MAX_LIMIT = 500


def _no_nul(text: str) -> str:
    # No name or path holds one, and PostgreSQL refuses it in text: said plainly rather than failing in the query.
    if "\x00" in text:
        raise ValueError("must not contain a NUL character")
    return text


Text = Annotated[str, AfterValidator(_no_nul)]
EdgeKind = Literal["defines", "imports", "calls", "references", "inherits"]
_USES: tuple[EdgeKind, ...] = ("calls", "references", "imports", "inherits")


class _Scoped(Args):
    repo_id: Text | None = Field(
        default=None, description="A workspace repo (id or name); every indexed repo if absent"
    )
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT, description=f"At most this many answers (1 to {MAX_LIMIT})")


class SearchArgs(_Scoped):
    query: Text = Field(min_length=1, max_length=MAX_QUERY, description="A name, its prefix, or letters in order")
    kinds: list[Text] = Field(default_factory=list, max_length=20, description="Only symbols of these kinds")


class NameArgs(_Scoped):
    name: Text = Field(
        min_length=1, max_length=MAX_QUERY, description="A symbol's name, plain (parse) or qualified (Parser.parse)"
    )


class DefinitionArgs(NameArgs):
    path: Text | None = Field(default=None, max_length=1024, description="The file asked from: its definitions first")


class ReferencesArgs(NameArgs):
    kinds: list[EdgeKind] = Field(
        default_factory=lambda: list(_USES), description="Which edges count (default: every use, not defines)"
    )


class OutlineArgs(Args):
    repo_id: Text = Field(description="A workspace repo (id or name)")
    path: Text = Field(min_length=1, max_length=1024, description="A file's path in the repo")


async def _repo_ids(ctx: OpContext, ref: str | None) -> list[str]:
    repos = ctx.app.service(RepoService)
    if ref is not None:
        return [(await repos.get(ctx.ws, ref)).id]
    present = {r.id for r in await repos.all(ctx.ws)}  # a removed repo's graph is not read
    return [s.repo_id for s in await store.all_states(await ctx.db()) if s.repo_id in present]


def _symbols(found: Sequence[Symbol]) -> CodeSymbols:
    return CodeSymbols(symbols=[SymbolView.model_validate(s.__dict__) for s in found])


def _edges(found: Sequence[Edge]) -> CodeEdges:
    return CodeEdges(edges=[EdgeView.model_validate(e.__dict__) for e in found])


@op("code.search", kind="read", scope="workspace")
async def code_search(ctx: OpContext, args: SearchArgs) -> CodeSymbols:
    """Symbols whose name matches ``query``, best first: the exact name, then prefixes, substrings and names
    holding its letters in order (fuzzy)."""
    repos = await _repo_ids(ctx, args.repo_id)
    return _symbols(await queries.search(await ctx.db(), args.query, repos, args.limit, args.kinds))


@op("code.definition", kind="read", scope="workspace")
async def code_definition(ctx: OpContext, args: DefinitionArgs) -> CodeSymbols:
    """Where ``name`` is defined: its definitions (a qualified name narrows them to its container), those in
    ``path`` first."""
    repos = await _repo_ids(ctx, args.repo_id)
    return _symbols(await queries.definitions(await ctx.db(), args.name, repos, args.path, args.limit))


@op("code.references", kind="read", scope="workspace")
async def code_references(ctx: OpContext, args: ReferencesArgs) -> CodeEdges:
    """Where ``name`` is used: the calls, references, imports and inherits that reach it, by file and line."""
    repos = await _repo_ids(ctx, args.repo_id)
    return _edges(await queries.edges_to(await ctx.db(), args.name, repos, args.kinds, args.limit))


@op("code.callers", kind="read", scope="workspace")
async def code_callers(ctx: OpContext, args: NameArgs) -> CodeEdges:
    """The calls of ``name``: each edge's ``source`` is the calling symbol."""
    repos = await _repo_ids(ctx, args.repo_id)
    return _edges(await queries.edges_to(await ctx.db(), args.name, repos, ("calls",), args.limit))


@op("code.callees", kind="read", scope="workspace")
async def code_callees(ctx: OpContext, args: NameArgs) -> CodeEdges:
    """What ``name`` calls: each edge's ``target`` is a called name (``code.definition`` finds it)."""
    repos = await _repo_ids(ctx, args.repo_id)
    return _edges(await queries.edges_from(await ctx.db(), args.name, repos, ("calls",), args.limit))


@op("code.outline", kind="read", scope="workspace")
async def code_outline(ctx: OpContext, args: OutlineArgs) -> CodeSymbols:
    """A file's symbols in the order they appear, each with its container."""
    repo = await ctx.app.service(RepoService).get(ctx.ws, args.repo_id)
    return _symbols(await queries.outline(await ctx.db(), repo.id, args.path))


@op("code.status", kind="read", scope="workspace")
async def code_status(ctx: OpContext, args: Args) -> CodeStatus:
    """The workspace's indexed repos: the commit each graph is of, when it was indexed, and its counts."""
    repos = {r.id: r.name for r in await ctx.app.service(RepoService).all(ctx.ws)}
    states = await store.all_states(await ctx.db())
    return CodeStatus(
        repos=[
            IndexedRepo(repo_name=repos.get(s.repo_id, s.repo_id), **s.__dict__) for s in states if s.repo_id in repos
        ]
    )


CODE_OPS: list[OpFunction] = [
    code_search,
    code_definition,
    code_references,
    code_callers,
    code_callees,
    code_outline,
    code_status,
]
