import { describe, expect, it } from "vitest";
import type { EdgeView, SymbolView } from "../src/generated/ops";
import { parseRoute } from "../src/router";
import {
  codePath,
  codeViewSearch,
  depth,
  enclosing,
  MAX_PATH,
  MAX_QUERY,
  parseCodeView,
  qualifiedName,
  sites,
  type CodeView,
} from "../src/screens/code/codeView";

function symbol(name: string, container: string, startLine: number, endLine: number): SymbolView {
  return { repoId: "r", path: "a.py", name, kind: "function", container, startLine, startCol: 0, endLine, endCol: 0, score: 0 };
}

function edge(path: string, line: number, source = "f"): EdgeView {
  return { repoId: "r", path, kind: "calls", source, target: "g", line };
}

describe("the code search page's path", () => {
  it("is under the workspace's repository and carries its view in the query", () => {
    const path = codePath("w 1", "r/2", { kind: "symbol", query: "gre", name: "Greeter.greet", from: "app/greet.py" });
    expect(path).toBe("/workspaces/w%201/repos/r%2F2/code?q=gre&symbol=Greeter.greet&from=app%2Fgreet.py");
    const url = new URL(path, "http://x");
    expect(parseRoute(url.pathname, url.search)).toEqual({
      name: "code",
      workspaceId: "w 1",
      repoId: "r/2",
      search: url.search,
    });
    expect(parseRoute("/workspaces/w/repos/r/code/")).toMatchObject({ name: "code", repoId: "r" });
    expect(parseRoute("/workspaces/w/repos/r")).toEqual({ name: "notFound", path: "/workspaces/w/repos/r" });
    expect(parseRoute("/workspaces/w/repos/r/code/x")).toMatchObject({ name: "notFound" });
    expect(codePath("w", "r")).toBe("/workspaces/w/repos/r/code");
  });

  it("reads back every view it writes", () => {
    const views: CodeView[] = [
      { kind: "search", query: "" },
      { kind: "search", query: "prs pl&x=1" },
      { kind: "symbol", query: "", name: "parse", from: null },
      { kind: "symbol", query: "q", name: "Parser.parse", from: "src/p.py" },
      { kind: "file", query: "q", path: "web/widget.ts", line: 7 },
      { kind: "file", query: "", path: "a b/c?.py", line: null },
    ];
    for (const view of views) expect(parseCodeView(codeViewSearch(view))).toEqual(view);
    expect(codeViewSearch({ kind: "search", query: "" })).toBe("");
  });

  it("takes a symbol before a file, and a line only when it is a line number", () => {
    expect(parseCodeView("?symbol=a&file=b.py")).toEqual({ kind: "symbol", query: "", name: "a", from: null });
    expect(parseCodeView("?symbol=%20%20&file=b.py")).toMatchObject({ kind: "file", path: "b.py" });
    for (const bad of ["0", "-3", "x", "1.5", "1e3", "", "12345678901"]) {
      expect(parseCodeView(`?file=b.py&line=${bad}`)).toEqual({ kind: "file", query: "", path: "b.py", line: null });
    }
    expect(parseCodeView("?file=b.py&line=123456789")).toMatchObject({ line: 123456789 });
  });

  it("never asks past the server's limits, nor with a NUL", () => {
    const at = "a".repeat(MAX_QUERY);
    expect(parseCodeView(`?q=${at}`)).toEqual({ kind: "search", query: at });
    expect(parseCodeView(`?q=${at}b`)).toEqual({ kind: "search", query: at });
    const path = "p".repeat(MAX_PATH);
    expect(parseCodeView(`?file=${path}x`)).toMatchObject({ path });
    expect(parseCodeView("?symbol=a%00b")).toMatchObject({ name: "ab" });
  });
});

describe("the code views' pieces", () => {
  it("names a symbol by its container", () => {
    expect(qualifiedName(symbol("greet", "Greeter", 1, 2))).toBe("Greeter.greet");
    expect(qualifiedName(symbol("main", "", 1, 2))).toBe("main");
    expect(depth(symbol("x", "", 1, 1))).toBe(0);
    expect(depth(symbol("x", "A.B", 1, 1))).toBe(2);
  });

  it("finds the innermost symbol around a line", () => {
    const outer = symbol("Greeter", "", 5, 20);
    const inner = symbol("greet", "Greeter", 8, 10);
    const outline = [outer, inner, symbol("other", "", 22, 30)];
    expect(enclosing(outline, 9)).toBe(inner);
    expect(enclosing(outline, 8)).toBe(inner);
    expect(enclosing(outline, 11)).toBe(outer);
    expect(enclosing(outline, 21)).toBeNull();
    expect(enclosing(outline, null)).toBeNull();
  });

  it("lists each edge site once, by file and line", () => {
    const listed = sites([edge("b.py", 3), edge("a.py", 9), edge("a.py", 2), edge("a.py", 9), edge("a.py", 9, "h")]);
    expect(listed.map((e) => `${e.path}:${e.line}:${e.source}`)).toEqual(["a.py:2:f", "a.py:9:f", "a.py:9:h", "b.py:3:f"]);
  });
});
