/** Live subscriptions: the one way a screen follows a watch op. `useWatch` opens the watch while the screen shows
 * it (again when its arguments change), hands its typed replies and events to the screen, and keeps the cached
 * reads fresh: a domain event (one with a `type`, from `events.watch` or `spaces.watch`) marks stale the reads
 * it changes (`invalidation.ts`), so a screen that shows a read needs no refresh counter of its own. */
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type { WatchOpName } from "../generated/ops";
import type { ArgsOf, EventOf, ResultOf, RpcClient, WatchHandle } from "../rpc/client";
import type { RpcError } from "../rpc/errors";
import { useRpc } from "../rpc/hooks";
import { invalidateAfterEvent, workspaceOf } from "./invalidation";

export interface Follow<N extends WatchOpName> {
  /** The first reply; again after every reconnect (the cached reads are fetched again then as well). */
  onReply?(result: ResultOf<N>): void;
  /** Each event, as the op declares it (a union a screen narrows by `type`). */
  onEvent?(event: EventOf<N>): void;
}

/** An event's `type`, when it has one (the domain events do; a roster or a run's step changes do not). */
function typeOf(event: unknown): string | null {
  return typeof event === "object" && event !== null && "type" in event && typeof event.type === "string"
    ? event.type
    : null;
}

/** Opens `op` with `args` on `client`: each domain event first marks stale the reads of its workspace it changes,
 * then reaches `follow` (which can read them fresh). The hook below is this in an effect; tests call it directly. */
export function openWatch<N extends WatchOpName>(
  client: RpcClient,
  queries: QueryClient,
  op: N,
  args: ArgsOf<N>,
  follow: Follow<N>,
  onError: (error: RpcError) => void,
): WatchHandle {
  const workspaceId = workspaceOf(args);
  return client.watch(op, args, {
    onReply: (result) => follow.onReply?.(result),
    onEvent: (event) => {
      const type = typeOf(event);
      if (workspaceId !== null && type !== null) void invalidateAfterEvent(queries, workspaceId, { type });
      follow.onEvent?.(event);
    },
    onError,
  });
}

/** Follows `op` with `args` while mounted; answers the refusal that ended it, if one did. The
 * handlers may change on every render: the latest are called, and the watch is not reopened for them. */
export function useWatch<N extends WatchOpName>(
  op: N,
  args: ArgsOf<N>,
  follow: Follow<N>,
): { error: RpcError | null } {
  const client = useRpc();
  const queries = useQueryClient();
  const [error, setError] = useState<RpcError | null>(null);
  const latest = useRef(follow);
  latest.current = follow;
  const argsText = JSON.stringify(args);
  useEffect(() => {
    let live = true;
    setError(null);
    const handle = openWatch(
      client,
      queries,
      op,
      JSON.parse(argsText) as ArgsOf<N>,
      {
        onReply: (result) => live && latest.current.onReply?.(result),
        onEvent: (event) => live && latest.current.onEvent?.(event),
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
      handle.close();
    };
  }, [client, queries, op, argsText]);
  return { error };
}

/** A watch whose reply and every event are the whole state again (the roster of linked members, the image packs):
 * the latest of them, as `pick` takes it; `set` shows the state a write answered until the next event. */
export function useWatchedState<N extends WatchOpName, T>(
  op: N,
  args: ArgsOf<N>,
  pick: (state: ResultOf<N> | EventOf<N>) => T,
): { data: T | undefined; error: RpcError | null; set(data: T): void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const { error } = useWatch(op, args, { onReply: (r) => setData(pick(r)), onEvent: (e) => setData(pick(e)) });
  return { data, error, set: setData };
}
