/** Records shown by name where the wire names them by id (`user:<id>` on a ticket, `agent:<id>` in the audit log,
 * `space_id` in an event): the workspace's lists of the kinds a screen needs, the cached reads the screens share
 * (fresh as they are: see `data/invalidation.ts`), and the pieces that show a name with its id at hand: on
 * hover (the title) and in a disclosure a keyboard or a screen reader opens (`IdDetails`). */
import { useQueries, useQueryClient } from "@tanstack/react-query";
import { readKey, useReadQuery } from "../../data/queries";
import type { CallOpName } from "../../generated/ops";
import { RECORD_KINDS, splitRef } from "../../labels";
import type { ArgsOf, ResultOf } from "../../rpc/client";

export type NameKind = "user" | "agent" | "team" | "space" | "ticket" | "repo" | "pipeline-template" | "workspace";

export interface Names {
  /** The name of `<kind>:<id>`, or null when the workspace does not hold it (or it is not loaded yet). */
  of(ref: string): string | null;
  /** Every record of a kind asked for, as `[<kind>:<id>, name]`, in the order the server lists them. */
  list(kind: NameKind): Array<[string, string]>;
  loaded: boolean;
}

/** The list a kind's names come from, and how to read `[id, name]` out of it. */
interface Lookup<N extends CallOpName> {
  op: N;
  args(ws: { workspace_id: string }): ArgsOf<N>;
  rows(result: ResultOf<N>): Array<[string, string]>;
}

function lookup<N extends CallOpName>(l: Lookup<N>): Lookup<CallOpName> {
  return l as unknown as Lookup<CallOpName>;
}

const LOOKUPS: Record<NameKind, Lookup<CallOpName>> = {
  user: lookup({ op: "members.list", args: (ws) => ws, rows: (r) => r.map((m) => [m.userId, m.displayName]) }),
  agent: lookup({ op: "agents.list", args: (ws) => ws, rows: (r) => r.agents.map((a) => [a.id, a.name]) }),
  team: lookup({ op: "teams.list", args: (ws) => ws, rows: (r) => r.teams.map((t) => [t.id, t.name]) }),
  space: lookup({
    op: "spaces.list",
    args: (ws) => ({ ...ws, includeArchived: true, includeHidden: true }),
    rows: (r) => r.spaces.map((s) => [s.id, s.title]),
  }),
  ticket: lookup({ op: "tickets.list", args: (ws) => ws, rows: (r) => r.tickets.map((t) => [t.id, t.title]) }),
  repo: lookup({ op: "repos.list", args: (ws) => ws, rows: (r) => r.repos.map((x) => [x.id, x.name]) }),
  "pipeline-template": lookup({
    op: "pipelines.templates.list",
    args: (ws) => ws,
    rows: (r) => r.templates.map((t) => [t.id, t.name || t.id]),
  }),
  workspace: lookup({ op: "workspaces.list", args: () => ({}), rows: (r) => r.map((w) => [w.id, w.name]) }),
};

/** The names of the kinds asked for, read from the same cached lists the screens show (so they are as fresh). */
export function useNames(workspaceId: string, kinds: readonly NameKind[]): Names & { reload(): void } {
  const query = useReadQuery();
  const queries = useQueryClient();
  const asked = [...new Set(kinds)].sort();
  const ws = { workspace_id: workspaceId };
  const reads = useQueries({
    queries: asked.map((kind) => {
      const { op, args } = LOOKUPS[kind];
      return { ...query(op, args(ws)), retry: false };
    }),
  });
  const map = new Map<string, string>();
  asked.forEach((kind, i) => {
    const data = reads[i]?.data;
    // A kind the caller may not read (a guest's audit page) leaves its ids as they are; the others still resolve.
    if (data !== undefined) for (const [id, name] of LOOKUPS[kind].rows(data)) map.set(`${kind}:${id}`, name);
  });
  return {
    of: (ref) => map.get(ref) ?? null,
    list: (kind) => [...map].filter(([ref]) => ref.startsWith(`${kind}:`)),
    loaded: reads.every((r) => !r.isPending),
    reload: () => {
      for (const kind of asked) {
        const { op, args } = LOOKUPS[kind];
        void queries.invalidateQueries({ queryKey: readKey(op, args(ws)), exact: true });
      }
    },
  };
}

/** What a person reads for a reference: its name, else its kind and the start of its id ("agent 3f2a9c1b"), else
 * the text as it is (a principal such as `hangar`). `fallback` is a name the caller knows from elsewhere (the
 * audit row's own details). */
export function displayName(ref: string, names: Names, fallback?: string | null): string {
  const name = names.of(ref) ?? fallback;
  if (name) return name;
  const { kind, id } = splitRef(ref);
  return kind ? `${RECORD_KINDS[kind]} ${id.length > 12 ? id.slice(0, 8) : id}` : ref;
}

/** A record named for people, its reference (`agent:<id>`) on hover. */
export function RecordName(props: { refText: string; names: Names; fallback?: string | null }) {
  return (
    <span className="record-name" title={props.refText}>
      {displayName(props.refText, props.names, props.fallback)}
    </span>
  );
}
