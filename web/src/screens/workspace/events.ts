/** The workspace's domain events as a screen follows them: the last `shown` events (optionally of some types, and
 * only those that occurred in a time window), then each new one as it is published. The watch survives reconnects: after each one its first reply comes again
 * and what was missed meanwhile is fetched from the last event shown. */
import { useEffect, useRef, useState } from "react";
import type { EventView } from "../../generated/ops";
import { RpcError } from "../../rpc/errors";
import { useRpc } from "../../rpc/hooks";

/** Whether an event occurred in the window: at or after `since`, before `until` (instants; null leaves it open),
 * as the server's `events.list` reads the window. */
export function inWindow(occurredAt: string, since: string | null, until: string | null): boolean {
  const t = Date.parse(occurredAt);
  return (since === null || t >= Date.parse(since)) && (until === null || t < Date.parse(until));
}

export interface FollowOptions {
  types?: string[] | null;
  /** The time window, as instants (ISO 8601 with a zone); null leaves that end open. */
  since?: string | null;
  until?: string | null;
  shown: number;
  /** Each event that arrived after the first page (live, or fetched after a reconnect): something changed. */
  onChange?(event: EventView): void;
}

export function useWorkspaceEvents(
  workspaceId: string,
  { types = null, since = null, until = null, shown, onChange }: FollowOptions,
): { events: EventView[]; loaded: boolean; error: RpcError | null } {
  const client = useRpc();
  const [events, setEvents] = useState<EventView[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<RpcError | null>(null);
  const lastSeq = useRef(0);
  const changed = useRef(onChange);
  changed.current = onChange;
  const typesKey = JSON.stringify(types);

  useEffect(() => {
    let live = true;
    let firstPage = true;
    const wanted = JSON.parse(typesKey) as string[] | null;
    lastSeq.current = 0;
    setEvents([]);
    setLoaded(false);
    setError(null);
    const add = (found: EventView[], quiet: boolean) => {
      const fresh = found.filter((e) => e.seq > lastSeq.current && inWindow(e.occurredAt, since, until));
      if (!live || fresh.length === 0) return;
      lastSeq.current = Math.max(lastSeq.current, ...fresh.map((e) => e.seq));
      setEvents((old) => [...old, ...fresh].sort((a, b) => a.seq - b.seq).slice(-shown));
      if (!quiet) for (const e of fresh) changed.current?.(e);
    };
    const handle = client.watch(
      "events.watch",
      { workspace_id: workspaceId, types: wanted },
      {
        onReply: () => {
          const quiet = firstPage;
          firstPage = false;
          client
            .call("events.list", {
              workspace_id: workspaceId,
              afterSeq: lastSeq.current,
              last: shown,
              types: wanted,
              since,
              until,
            })
            .then(
              (found) => {
                add(found, quiet);
                if (live) setLoaded(true);
              },
              (e: unknown) => live && e instanceof RpcError && e.code !== "unavailable" && setError(e),
            );
        },
        onEvent: (event) => {
          add([event], false);
        },
        onError: (e) => live && setError(e),
      },
    );
    return () => {
      live = false;
      handle.close();
    };
  }, [client, workspaceId, typesKey, since, until, shown]);
  return { events, loaded, error };
}
