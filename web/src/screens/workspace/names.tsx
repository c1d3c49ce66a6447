/** Records shown by name where the wire names them by id (`user:<id>` on a ticket, `agent:<id>` in the audit log,
 * `space_id` in an event): the workspace's lists of the kinds a screen needs, fetched once (and again after a
 * reconnect or when the screen says something changed), and the pieces that show a name with its id at hand: on
 * hover (the title) and in a disclosure a keyboard or a screen reader opens (`IdDetails`). */
import { useEffect, useState } from "react";
import { RECORD_KINDS, splitRef } from "../../labels";
import { RpcError } from "../../rpc/errors";
import { useConnectionEpoch, useRpc } from "../../rpc/hooks";

export type NameKind = "user" | "agent" | "team" | "space" | "ticket" | "repo" | "pipeline-template" | "workspace";

export interface Names {
  /** The name of `<kind>:<id>`, or null when the workspace does not hold it (or it is not loaded yet). */
  of(ref: string): string | null;
  /** Every record of a kind asked for, as `[<kind>:<id>, name]`, in the order the server lists them. */
  list(kind: NameKind): Array<[string, string]>;
  loaded: boolean;
}

type Lookup = (workspaceId: string) => Promise<Array<[string, string]>>;

export function useNames(workspaceId: string, kinds: readonly NameKind[], refresh: unknown = 0): Names {
  const client = useRpc();
  const epoch = useConnectionEpoch();
  const [table, setTable] = useState<{ map: Map<string, string>; loaded: boolean }>({ map: new Map(), loaded: false });
  const wanted = [...new Set(kinds)].sort().join(",");

  useEffect(() => {
    let live = true;
    const ws = { workspace_id: workspaceId };
    const lookups: Record<NameKind, Lookup> = {
      user: async () => (await client.call("members.list", ws)).map((m) => [m.userId, m.displayName]),
      agent: async () => (await client.call("agents.list", ws)).agents.map((a) => [a.id, a.name]),
      team: async () => (await client.call("teams.list", ws)).teams.map((t) => [t.id, t.name]),
      space: async () =>
        (await client.call("spaces.list", { ...ws, includeArchived: true, includeHidden: true })).spaces.map((s) => [
          s.id,
          s.title,
        ]),
      ticket: async () => (await client.call("tickets.list", ws)).tickets.map((t) => [t.id, t.title]),
      repo: async () => (await client.call("repos.list", ws)).repos.map((r) => [r.id, r.name]),
      "pipeline-template": async () =>
        (await client.call("pipelines.templates.list", ws)).templates.map((t) => [t.id, t.name || t.id]),
      workspace: async () => (await client.call("workspaces.list", {})).map((w) => [w.id, w.name]),
    };
    const asked = wanted ? (wanted.split(",") as NameKind[]) : [];
    // A kind the caller may not read (a guest's audit page) leaves its ids as they are; the others still resolve.
    void Promise.all(
      asked.map((kind) =>
        lookups[kind](workspaceId).then(
          (rows) => rows.map(([id, name]): [string, string] => [`${kind}:${id}`, name]),
          (e: unknown) => {
            if (!(e instanceof RpcError)) throw e;
            return [];
          },
        ),
      ),
    ).then((found) => {
      if (live) setTable({ map: new Map(found.flat()), loaded: true });
    });
    return () => {
      live = false;
    };
  }, [client, workspaceId, wanted, epoch, refresh]);

  return {
    of: (ref) => table.map.get(ref) ?? null,
    list: (kind) => [...table.map].filter(([ref]) => ref.startsWith(`${kind}:`)),
    loaded: table.loaded,
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
