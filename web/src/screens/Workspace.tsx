/** A workspace (`/workspaces/<id>`): its name and its live activity (the domain events), until the screens of
 * spaces, tickets and agents land here. The activity is a watch: after a reconnect its first reply comes again
 * and the events missed meanwhile are fetched from the last one shown. */
import { useEffect, useRef, useState } from "react";
import type { EventView } from "../generated/ops";
import { Link } from "../Link";
import { RpcError } from "../rpc/errors";
import { useCall, useRpc } from "../rpc/hooks";
import { pipelinesPath } from "../router";

const SHOWN = 50;

function isEvent(value: unknown): value is EventView {
  const v = value as Partial<EventView> | null;
  return typeof v === "object" && v !== null && typeof v.seq === "number" && typeof v.type === "string";
}

function useActivity(workspaceId: string): { events: EventView[]; error: RpcError | null } {
  const client = useRpc();
  const [events, setEvents] = useState<EventView[]>([]);
  const [error, setError] = useState<RpcError | null>(null);
  const lastSeq = useRef(0);

  useEffect(() => {
    let live = true;
    lastSeq.current = 0;
    setEvents([]);
    setError(null);
    const add = (found: EventView[]) => {
      const fresh = found.filter((e) => e.seq > lastSeq.current);
      if (!live || fresh.length === 0) return;
      lastSeq.current = Math.max(lastSeq.current, ...fresh.map((e) => e.seq));
      setEvents((old) => [...old, ...fresh].sort((a, b) => a.seq - b.seq).slice(-SHOWN));
    };
    const handle = client.watch(
      "events.watch",
      { workspace_id: workspaceId },
      {
        onReply: () => {
          client.call("events.list", { workspace_id: workspaceId, afterSeq: lastSeq.current, limit: 1000 }).then(
            add,
            (e: unknown) => live && e instanceof RpcError && e.code !== "unavailable" && setError(e),
          );
        },
        onEvent: (event) => {
          if (isEvent(event)) add([event]);
        },
        onError: (e) => live && setError(e),
      },
    );
    return () => {
      live = false;
      handle.close();
    };
  }, [client, workspaceId]);
  return { events, error };
}

export function Workspace({ workspaceId }: { workspaceId: string }) {
  const workspaces = useCall("workspaces.list", {});
  const activity = useActivity(workspaceId);
  const workspace = workspaces.data?.find((w) => w.id === workspaceId);
  const title = workspace?.name ?? (workspaces.data ? "Workspace not found" : "Workspace");
  return (
    <>
      <p className="crumbs">
        <Link href="/">Workspaces</Link>
      </p>
      <h1>{title}</h1>
      {workspaces.data && !workspace && (
        <p role="alert">This workspace does not exist, or you are not one of its members.</p>
      )}
      {workspace && (
        <p className="hint">
          Your role: <span className="badge">{workspace.role}</span>. Spaces, tickets, agents and pipelines will be
          shown here.
        </p>
      )}
      {workspace && (
        <p>
          <Link href={pipelinesPath(workspaceId)}>Pipelines</Link>
        </p>
      )}
      <section aria-labelledby="activity-title">
        <h2 id="activity-title">Activity</h2>
        {activity.error ? (
          <p className="error" role="alert">
            {activity.error.message}
          </p>
        ) : activity.events.length === 0 ? (
          <p>Nothing has happened here yet.</p>
        ) : (
          <ol className="list activity" aria-label="Recent events, newest first">
            {[...activity.events].reverse().map((e) => (
              <li key={e.seq} data-seq={e.seq}>
                <code>{e.type}</code>
                <time dateTime={e.occurredAt}>{new Date(e.occurredAt).toLocaleString()}</time>
              </li>
            ))}
          </ol>
        )}
      </section>
    </>
  );
}
