/** What the code search page of a repository shows, kept in its URL's query (so a result, a symbol or a file
 * location is a link that opens in a new tab, and the browser's back button walks the jumps): `?q=` the search,
 * `?symbol=` a symbol by its qualified name (`Greeter.greet`) with `&from=` the file it was reached from (its
 * definitions there come first), `?file=` a file's outline with `&line=` the line jumped to. */
import type { EdgeView, SymbolView } from "../../generated/ops";
import { workspacePath } from "../../router";

export type CodeView =
  | { kind: "search"; query: string }
  | { kind: "symbol"; query: string; name: string; from: string | null }
  | { kind: "file"; query: string; path: string; line: number | null };

/** The longest name or path the server takes (`code.search`'s `query`, a path's 1024): longer is not asked for. */
export const MAX_QUERY = 200;
export const MAX_PATH = 1024;

function line(text: string | null): number | null {
  if (text === null || !/^[1-9][0-9]{0,8}$/.test(text)) return null;
  return Number(text);
}

function text(value: string | null, max: number): string {
  // A NUL is refused by the server and names nothing; a value past the limit is cut to it, not sent to be refused.
  return (value ?? "").replaceAll("\u0000", "").slice(0, max);
}

/** The view a URL's query string names: a symbol before a file, a file before the search alone. */
export function parseCodeView(search: string): CodeView {
  const params = new URLSearchParams(search);
  const query = text(params.get("q"), MAX_QUERY);
  const name = text(params.get("symbol"), MAX_QUERY).trim();
  if (name) {
    const from = text(params.get("from"), MAX_PATH);
    return { kind: "symbol", query, name, from: from || null };
  }
  const path = text(params.get("file"), MAX_PATH);
  if (path) return { kind: "file", query, path, line: line(params.get("line")) };
  return { kind: "search", query };
}

/** The query string of `view` (empty for an empty search), the inverse of `parseCodeView`. */
export function codeViewSearch(view: CodeView): string {
  const params = new URLSearchParams();
  if (view.query) params.set("q", view.query);
  if (view.kind === "symbol") {
    params.set("symbol", view.name);
    if (view.from) params.set("from", view.from);
  } else if (view.kind === "file") {
    params.set("file", view.path);
    if (view.line !== null) params.set("line", String(view.line));
  }
  const out = params.toString();
  return out ? `?${out}` : "";
}

/** The code search page of a workspace repository (under the workspace's repositories section). */
export function codePath(workspaceId: string, repoId: string, view?: CodeView): string {
  const base = `${workspacePath(workspaceId)}/repos/${encodeURIComponent(repoId)}/code`;
  return view ? base + codeViewSearch(view) : base;
}

/** The name a symbol is asked for by (`code.definition` narrows a qualified one to its container). */
export function qualifiedName(symbol: Pick<SymbolView, "name" | "container">): string {
  return symbol.container ? `${symbol.container}.${symbol.name}` : symbol.name;
}

/** `path:line`, how a location reads. */
export function location(path: string, at: number): string {
  return `${path}:${at}`;
}

/** The innermost symbol of an outline whose lines hold `at` (the one a jump to a line lands in), else null. */
export function enclosing(symbols: readonly SymbolView[], at: number | null): SymbolView | null {
  if (at === null) return null;
  let best: SymbolView | null = null;
  for (const s of symbols) {
    if (s.startLine > at || s.endLine < at) continue;
    if (!best || s.endLine - s.startLine <= best.endLine - best.startLine) best = s;
  }
  return best;
}

/** How deep a symbol of an outline sits: the number of its container's components. */
export function depth(symbol: Pick<SymbolView, "container">): number {
  return symbol.container ? symbol.container.split(".").length : 0;
}

/** Edges in the order a person reads them (by file, then line), each site once: an edge the server answered twice
 * for a plain and a qualified name is one row. */
export function sites(edges: readonly EdgeView[]): EdgeView[] {
  const seen = new Set<string>();
  const out: EdgeView[] = [];
  for (const e of edges) {
    const key = [e.repoId, e.path, e.line, e.kind, e.source, e.target].join("\u0000");
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
}
