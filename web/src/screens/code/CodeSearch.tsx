/** A repository's code search page (`/workspaces/<id>/repos/<repoId>/code`): the code graph's index status for the
 * repository, a symbol search (ranked by the server: exact, prefix, substring, letters in order), and the symbol or
 * file location the person jumped to: a symbol's definitions, callers, callees and references, or a file's outline
 * at a line. Every name and location is a link to its view (see `codeView.ts`), so jumps are the browser's history. */
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import type { EdgeView, SymbolView } from "../../generated/ops";
import { Link } from "../../Link";
import { navigate, pipelinesPath, workspaceSectionPath } from "../../router";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { NotAMember, WorkspaceHeader } from "../../components/WorkspaceHeader";
import { when } from "../../components/time";
import { useRead } from "../../data/queries";
import type { RpcError } from "../../rpc/errors";
import { useWorkspace } from "../../data/workspaces";
import {
  codePath,
  depth,
  enclosing,
  location,
  MAX_QUERY,
  parseCodeView,
  qualifiedName,
  sites,
  type CodeView,
} from "./codeView";
import "../workspace/workspace.css";
import "./code.css";

const RESULTS = 50;
const EDGES = 100;
// Typing waits this long for a pause before the URL (and so the search) follows it.
const TYPING_MS = 250;

interface Here {
  workspaceId: string;
  repoId: string;
  view: CodeView;
}

function symbolHref(here: Here, name: string, from: string | null): string {
  return codePath(here.workspaceId, here.repoId, { kind: "symbol", query: here.view.query, name, from });
}

function fileHref(here: Here, path: string, line: number | null): string {
  return codePath(here.workspaceId, here.repoId, { kind: "file", query: here.view.query, path, line });
}

function IndexStatus({ workspaceId, repoId }: { workspaceId: string; repoId: string }) {
  const status = useRead("code.status", { workspace_id: workspaceId });
  if (status.error) return <Refusal error={status.error} />;
  if (!status.data) return <p aria-busy="true">Loading the index status…</p>;
  const indexed = status.data.repos.find((r) => r.repoId === repoId);
  if (!indexed) {
    return (
      <p className="notice">
        This repository is not indexed yet. Run a pipeline with a <code>code.index</code> step on it (
        <Link href={pipelinesPath(workspaceId)}>pipelines</Link>); searches answer from the index.
      </p>
    );
  }
  const count = (n: number) => n.toLocaleString();
  const figures: [string, ReactNode][] = [
    ["Commit", <code title={indexed.commitId}>{indexed.commitId.slice(0, 12)}</code>],
    ["Indexed", when(indexed.indexedAt)],
    ["Files", count(indexed.files)],
    ["Lines", count(indexed.lines)],
    ["Symbols", count(indexed.symbols)],
    ["Edges", count(indexed.edges)],
  ];
  return (
    <dl className="code-status" aria-label="Index status">
      {figures.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The search box: the URL follows what is typed (replacing, not adding, history), and the results follow the URL. */
function SearchBox({ here }: { here: Here }) {
  const [typed, setTyped] = useState(here.view.query);
  const shown = useRef(here.view.query);
  // Back and forward change the query under the box: it shows theirs.
  useEffect(() => {
    if (here.view.query !== shown.current) {
      shown.current = here.view.query;
      setTyped(here.view.query);
    }
  }, [here.view.query]);
  const follow = (query: string, replace: boolean) => {
    shown.current = query;
    navigate(codePath(here.workspaceId, here.repoId, { ...here.view, query }), replace);
  };
  useEffect(() => {
    if (typed === shown.current) return;
    const timer = window.setTimeout(() => follow(typed, true), TYPING_MS);
    return () => window.clearTimeout(timer);
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    follow(typed, true);
  };
  return (
    <form role="search" className="code-search" onSubmit={submit}>
      <label htmlFor="code-query">Symbol name</label>
      <div className="code-search-row">
        <input
          id="code-query"
          type="search"
          value={typed}
          maxLength={MAX_QUERY}
          autoComplete="off"
          spellCheck={false}
          aria-describedby="code-query-hint"
          data-shortcut-focus
          onChange={(e) => setTyped(e.target.value)}
        />
        <button type="submit">Search</button>
      </div>
      <p className="hint" id="code-query-hint">
        A name, its start, or its letters in order (<code>prspl</code> finds <code>ParserPool</code>).
      </p>
    </form>
  );
}

function Results({ here }: { here: Here }) {
  const query = here.view.query.trim();
  const found = useRead(
    "code.search",
    // An empty box asks nothing (`enabled`); the placeholder only keeps the arguments well formed.
    { workspace_id: here.workspaceId, repoId: here.repoId, query: query || "-", limit: RESULTS },
    { enabled: query !== "" },
  );
  if (!query) return null;
  return (
    <section aria-labelledby="code-results-title" className="panel">
      <h2 id="code-results-title">Results</h2>
      <LoadedList
        noun="results"
        items={found.data?.symbols}
        error={found.error}
        empty={<>No symbol matches “{query}”.</>}
        row={(s) => (
          <li key={`${s.path}:${s.startLine}:${s.startCol}:${s.name}`}>
            <SymbolLine here={here} symbol={s} />
          </li>
        )}
      />
    </section>
  );
}

/** A symbol as one row: its name (a link to it), kind, file and line (a link to the outline there), container. */
function SymbolLine({ here, symbol }: { here: Here; symbol: SymbolView }) {
  return (
    <div className="row-main">
      <Link href={symbolHref(here, qualifiedName(symbol), symbol.path)} className="code-name">
        {symbol.name}
      </Link>
      <span className="badge">{symbol.kind}</span>
      <Link href={fileHref(here, symbol.path, symbol.startLine)} className="code-loc">
        {location(symbol.path, symbol.startLine)}
      </Link>
      {symbol.container && <span className="hint">in {symbol.container}</span>}
    </div>
  );
}

/** An edge as one row: the symbol it names (a link to it, `via` says which end), then the site's file and line. */
function EdgeLine({ here, edge, via }: { here: Here; edge: EdgeView; via: "source" | "target" }) {
  const name = edge[via];
  return (
    <li>
      <div className="row-main">
        {name ? (
          <Link href={symbolHref(here, name, edge.path)} className="code-name">
            {name}
          </Link>
        ) : (
          <span className="hint">file level</span>
        )}
        {via === "source" && edge.kind !== "calls" && <span className="badge">{edge.kind}</span>}
        <Link href={fileHref(here, edge.path, edge.line)} className="code-loc">
          {location(edge.path, edge.line)}
        </Link>
      </div>
    </li>
  );
}

interface EdgesProps {
  here: Here;
  title: string;
  noun: string;
  read: { data?: { edges: EdgeView[] } | undefined; error: RpcError | undefined };
  via: "source" | "target";
  empty: string;
}

function Edges(props: EdgesProps) {
  const { here, read, via } = props;
  const edges = read.data?.edges;
  return (
    <>
      <h3>{props.title}</h3>
      <LoadedList
        noun={props.noun}
        items={edges && sites(edges)}
        error={read.error}
        empty={props.empty}
        row={(e) => (
          <EdgeLine key={`${e.path}:${e.line}:${e.kind}:${e.source}:${e.target}`} here={here} edge={e} via={via} />
        )}
      />
    </>
  );
}

/** Focus moves to a jump's heading, so the keyboard and a screen reader land where the link went. */
function useFocusOnJump(key: string) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
  }, [key]);
  return heading;
}

function SymbolPanel({ here, name, from }: { here: Here; name: string; from: string | null }) {
  const scope = { workspace_id: here.workspaceId, repoId: here.repoId, name };
  const definitions = useRead("code.definition", { ...scope, path: from, limit: RESULTS });
  const callers = useRead("code.callers", { ...scope, limit: EDGES });
  const callees = useRead("code.callees", { ...scope, limit: EDGES });
  const references = useRead("code.references", { ...scope, limit: EDGES });
  const heading = useFocusOnJump(`${name}\u0000${from ?? ""}`);
  return (
    <section aria-labelledby="code-symbol-title" className="panel code-detail">
      <h2 id="code-symbol-title" ref={heading} tabIndex={-1}>
        <code>{name}</code>
      </h2>
      <h3>Definition</h3>
      <LoadedList
        noun="definitions"
        items={definitions.data?.symbols}
        error={definitions.error}
        empty="Not defined in this repository's index (a library's name, or a name the parser does not see)."
        row={(s) => (
          <li key={`${s.path}:${s.startLine}:${s.startCol}`}>
            <SymbolLine here={here} symbol={s} />
          </li>
        )}
      />
      <Edges here={here} title="Callers" noun="callers" read={callers} via="source" empty="No calls of it." />
      <Edges here={here} title="Callees" noun="callees" read={callees} via="target" empty="It calls nothing." />
      <Edges here={here} title="References" noun="references" read={references} via="source" empty="Nothing uses it." />
    </section>
  );
}

/** A nested symbol of an outline sits further in, by its depth. */
function indent(symbol: SymbolView): string {
  return `${0.9 + depth(symbol) * 1.2}rem`;
}

function FilePanel({ here, path, line }: { here: Here; path: string; line: number | null }) {
  const outline = useRead("code.outline", { workspace_id: here.workspaceId, repoId: here.repoId, path });
  const heading = useFocusOnJump(`${path}\u0000${line ?? ""}`);
  const symbols = outline.data?.symbols;
  const inside = symbols ? enclosing(symbols, line) : null;
  const panel = useRef<HTMLElement>(null);
  useEffect(() => {
    panel.current?.querySelector('[aria-current="location"]')?.scrollIntoView({ block: "nearest" });
  }, [inside]);
  return (
    <section aria-labelledby="code-file-title" className="panel code-detail" ref={panel}>
      <h2 id="code-file-title" ref={heading} tabIndex={-1}>
        <code>{line === null ? path : location(path, line)}</code>
      </h2>
      {line !== null && symbols && (
        <p>
          {inside ? (
            <>
              Line {line} is in <code>{qualifiedName(inside)}</code> ({inside.kind}, lines {inside.startLine} to{" "}
              {inside.endLine}).
            </>
          ) : (
            <>Line {line} is at the file's top level.</>
          )}
        </p>
      )}
      <h3>Outline</h3>
      <LoadedList
        noun="outline"
        items={symbols}
        error={outline.error}
        empty="No symbols in this file's index (not indexed, skipped, or holding none)."
        row={(s) => {
          const here_ = s === inside;
          return (
            <li key={`${s.startLine}:${s.startCol}:${s.name}`} style={{ paddingInlineStart: indent(s) }}>
              <div className="row-main">
                <Link
                  href={symbolHref(here, qualifiedName(s), path)}
                  className="code-name"
                  aria-current={here_ ? "location" : undefined}
                >
                  {s.name}
                </Link>
                <span className="badge">{s.kind}</span>
                <Link href={fileHref(here, path, s.startLine)} className="code-loc">
                  line {s.startLine}
                </Link>
              </div>
            </li>
          );
        }}
      />
    </section>
  );
}

export default function CodeSearch(props: { workspaceId: string; repoId: string; search: string }) {
  const { workspaceId, repoId, search } = props;
  const { workspace, missing } = useWorkspace(workspaceId);
  const repos = useRead("repos.list", { workspace_id: workspaceId }, { enabled: workspace !== undefined });
  const repo = repos.data?.repos.find((r) => r.id === repoId);
  const view = parseCodeView(search);
  const here: Here = { workspaceId, repoId, view };
  return (
    <div className="ws code">
      <WorkspaceHeader
        workspaceId={workspaceId}
        workspace={workspace}
        title={repo ? `Code search: ${repo.name}` : "Code search"}
      />
      {missing && <NotAMember />}
      {workspace && (
        <>
          <nav aria-label="Workspace" className="subnav">
            <Link href={workspaceSectionPath(workspaceId, "repos")}>Repositories</Link>
          </nav>
          <Refusal error={repos.error} />
          {repos.data && !repo && <p role="alert">This workspace has no repository with this id.</p>}
          {repo && (
            <>
              <IndexStatus workspaceId={workspaceId} repoId={repoId} />
              <SearchBox here={here} />
              {view.kind === "symbol" && <SymbolPanel here={here} name={view.name} from={view.from} />}
              {view.kind === "file" && <FilePanel here={here} path={view.path} line={view.line} />}
              <Results here={here} />
            </>
          )}
        </>
      )}
    </div>
  );
}
