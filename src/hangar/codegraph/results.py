"""What the code ops answer: symbols (a definition's file and range) and edges (a site's file and line)."""

from __future__ import annotations

from pydantic import Field

from hangar.core.types import Timestamp
from hangar.rpc.registry import Result


class SymbolView(Result):
    repo_id: str
    path: str
    name: str
    kind: str = Field(description="class, function, method, struct, interface, trait, enum, type, variable, ...")
    container: str = Field(description="The qualified name of the definition around it; empty at file level")
    start_line: int = Field(description="1-based")
    start_col: int = Field(description="0-based, in bytes")
    end_line: int
    end_col: int
    score: float = Field(default=0.0, description="code.search's rank (higher is better); 0 elsewhere")


class CodeSymbols(Result):
    symbols: list[SymbolView]


class EdgeView(Result):
    repo_id: str
    path: str
    kind: str = Field(description="defines, imports, calls, references or inherits")
    source: str = Field(description="The qualified name of the symbol the edge leaves from; empty at file level")
    target: str = Field(description="The name it reaches")
    line: int = Field(description="1-based line of the site")


class CodeEdges(Result):
    edges: list[EdgeView]


class IndexedRepo(Result):
    repo_id: str
    repo_name: str
    commit_id: str
    indexed_at: Timestamp
    files: int
    symbols: int
    edges: int
    lines: int


class CodeStatus(Result):
    repos: list[IndexedRepo]
