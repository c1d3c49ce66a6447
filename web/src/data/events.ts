/** The workspace's domain events as a screen follows them: the last `shown` events (optionally of some types, and
 * only those that occurred in a time window), then each new one as it is published. The watch survives reconnects: after each one its first reply comes again
 * and what was missed meanwhile is fetched from the last event shown. */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type { EventType, EventView } from "../generated/ops";
import { RpcError } from "../rpc/errors";
import { invalidateAfterEvent, isEventType } from "./invalidation";
import { useWrite } from "./mutations";
import { useWatch } from "./watch";

/** Whether an event occurred in the window: at or after `since`, before `until` (instants; null leaves it open),
 * as the server's `events.list` reads the window. */
export function inWindow(occurredAt: string, since: string | null, until: string | null): boolean {
  const t = Date.parse(occurredAt);
  return (since === null || t >= Date.parse(since)) && (until === null || t < Date.parse(until));
}

/** An event some part declares, as opposed to one a person or script emitted with `pipelines.emit` (`EmittedView`,
 * any type outside the parts' namespaces, the server refuses theirs, with the JSON object it was given as payload).
 * Narrowed by its `type`, it has that type's payload model. */
export type DeclaredEvent = Extract<EventView, { type: EventType }>;

/** Whether an event is one a part declares (its type is in the generated list); no cast, the list decides. */
export function isDeclared(event: EventView): event is DeclaredEvent {
  return isEventType(event.type);
}

export interface FollowOptions {
  types?: string[] | null;
  /** The time window, as instants (ISO 8601 with a zone); null leaves that end open. */
  since?: string | null;
  until?: string | null;
  shown: number;
}

/** The events as a screen shows them; each new one (live, or fetched after a reconnect) also marks stale the cached
 * reads it changes (the watch hook's rule), so a screen that shows the workspace's lists stays fresh by showing it. */
export function useWorkspaceEvents(
  workspaceId: string,
  { types = null, since = null, until = null, shown }: FollowOptions,
): { events: EventView[]; loaded: boolean; error: RpcError | null } {
  const write = useWrite();
  const queries = useQueryClient();
  const [events, setEvents] = useState<EventView[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<RpcError | null>(null);
  const lastSeq = useRef(0);
  const firstPage = useRef(true);
  // Which following this is: an answer for an earlier one (other arguments) is dropped.
  const following = useRef(0);
  const typesKey = JSON.stringify(types);
  const wanted = JSON.parse(typesKey) as string[] | null;
  // The watch's arguments, and those of the watch that last replied (a new window needs no new watch).
  const watchKey = JSON.stringify([workspaceId, typesKey]);
  const repliedFor = useRef<string | null>(null);

  const add = (now: number, found: EventView[], quiet: boolean) => {
    const fresh = found.filter((e) => e.seq > lastSeq.current && inWindow(e.occurredAt, since, until));
    if (now !== following.current || fresh.length === 0) return;
    lastSeq.current = Math.max(lastSeq.current, ...fresh.map((e) => e.seq));
    setEvents((old) => [...old, ...fresh].sort((a, b) => a.seq - b.seq).slice(-shown));
    // A live event was already marked by the watch; one fetched after a reconnect is marked here.
    if (!quiet) for (const e of fresh) void invalidateAfterEvent(queries, workspaceId, e);
  };
  /** The events after the last one shown (the last `shown` of them): the first page, or what a reconnect missed. */
  const fetchPage = () => {
    const now = following.current;
    const quiet = firstPage.current;
    firstPage.current = false;
    const args = { workspace_id: workspaceId, afterSeq: lastSeq.current, last: shown, types: wanted, since, until };
    write("events.list", args).then(
      (found) => {
        add(now, found, quiet);
        if (now === following.current) setLoaded(true);
      },
      (e: unknown) => now === following.current && e instanceof RpcError && e.code !== "unavailable" && setError(e),
    );
  };

  useEffect(() => {
    following.current += 1;
    firstPage.current = true;
    lastSeq.current = 0;
    setEvents([]);
    setLoaded(false);
    setError(null);
    // Another window of the same watch: its first page now (a new watch's reply asks for it).
    if (repliedFor.current === watchKey) fetchPage();
    // `fetchPage` is this render's; what decides is the window and the watch.
  }, [watchKey, since, until, shown]);

  const watch = useWatch(
    "events.watch",
    { workspace_id: workspaceId, types: wanted },
    {
      onReply: () => {
        repliedFor.current = watchKey;
        fetchPage();
      },
      onEvent: (event) => add(following.current, [event], true),
    },
  );
  return { events, loaded, error: error ?? watch.error };
}
