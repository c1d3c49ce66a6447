/** The web client's data layer: every RPC read a screen shows is a cached query (TanStack Query) keyed by its op and
 * arguments, fetched again when it goes stale: after a write this client made, after a server event that changes it
 * (both in `invalidation.ts`), and after every reconnect (so a server restart leaves nothing stale). */
import { keepPreviousData, QueryClient, QueryClientProvider, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState, type ReactNode } from "react";
import type { CallOpName } from "../generated/ops";
import type { ArgsOf, ResultOf, RpcClient } from "../rpc/client";
import { RpcError } from "../rpc/errors";
import { RpcContext, useRpc } from "../rpc/hooks";

export function asRpcError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  // Another failure (a rig lane's refusal, a broken response) keeps its own words.
  return new RpcError("internal", error instanceof Error ? error.message : String(error));
}

/** The cache key of a read: the op, then its arguments (the invalidation rules match on both). */
export function readKey<N extends CallOpName>(op: N, args: ArgsOf<N>): readonly [N, ArgsOf<N>] {
  return [op, args];
}

function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        // The RPC client queues calls while the socket is down; the browser's online flag says nothing about it.
        networkMode: "always",
        // A refusal is the answer; a call cut off by a lost connection is made again after the reconnect.
        retry: false,
        refetchOnWindowFocus: false,
        refetchOnReconnect: false,
      },
      mutations: { networkMode: "always", retry: false },
    },
  });
}

/** After each reconnect (not the first connection) every cached read is stale: what changed meanwhile is fetched. */
function useRefetchAfterReconnect(client: RpcClient, queries: QueryClient): void {
  useEffect(() => {
    let seen = client.epoch;
    return client.subscribe(() => {
      if (client.epoch === seen) return;
      const reconnect = seen > 0;
      seen = client.epoch;
      if (reconnect) void queries.invalidateQueries();
    });
  }, [client, queries]);
}

/** The signed-in shell's data: the RPC client and a cache of its reads, both for this credential only. */
export function DataProvider({ client, children }: { client: RpcClient; children: ReactNode }) {
  const [queries] = useState(newQueryClient);
  useRefetchAfterReconnect(client, queries);
  useEffect(() => () => queries.clear(), [queries]);
  return (
    <RpcContext.Provider value={client}>
      <QueryClientProvider client={queries}>{children}</QueryClientProvider>
    </RpcContext.Provider>
  );
}

export interface Read<N extends CallOpName> {
  data: ResultOf<N> | undefined;
  /** The server's refusal; a lost connection is not one (the read is made again once the socket is back). */
  error: RpcError | undefined;
  loading: boolean;
  /** Fetch it again now (a change this screen cannot name by op, or one it made through another door). */
  reload(): void;
  /** Replace the cached result with one a write answered (it is the fresh state already), or change it as an event
   * says (`update` gets the cached result, undefined while there is none, and answers the new one). */
  set(data: ResultOf<N>): void;
  update(change: (old: ResultOf<N> | undefined) => ResultOf<N> | undefined): void;
}

/** The query of `op` with `args` (for `useRead`, or `useQueries` where a screen reads a list of them). */
export function readQuery<N extends CallOpName>(client: RpcClient, op: N, args: ArgsOf<N>) {
  return {
    queryKey: readKey(op, args),
    queryFn: (): Promise<ResultOf<N>> => {
      // The rest-parameter signature of `call` does not narrow for a generic N; the arguments are N's all the same.
      const call = client.call.bind(client) as (op: N, args: ArgsOf<N>) => Promise<ResultOf<N>>;
      return call(op, args).catch((e: unknown) => {
        throw asRpcError(e);
      });
    },
  };
}

/** `readQuery` with the shell's client, for `useQueries` where a screen reads a list of reads known at run time. */
export function useReadQuery() {
  const client = useRpc();
  return <N extends CallOpName>(op: N, args: ArgsOf<N>) => readQuery(client, op, args);
}

export interface ReadOptions {
  /** Read only when true (default true). */
  enabled?: boolean;
  /** Read again every so many milliseconds while the tab is visible (a state no event announces); off by default. */
  everyMs?: number | false;
}

/** A read a screen shows: `op` with `args`, cached and shared by every screen that reads the same. */
export function useRead<N extends CallOpName>(op: N, args: ArgsOf<N>, options: ReadOptions = {}): Read<N> {
  const client = useRpc();
  const queries = useQueryClient();
  const query = useQuery<ResultOf<N>, RpcError>({
    ...readQuery(client, op, args),
    enabled: options.enabled ?? true,
    refetchInterval: options.everyMs ?? false,
    // New arguments (a filter changed) keep the last result on screen until theirs arrives.
    placeholderData: keepPreviousData,
  });
  const cut = query.error?.code === "unavailable";
  const keyText = JSON.stringify(readKey(op, args));
  const reload = useCallback(
    () => void queries.invalidateQueries({ queryKey: JSON.parse(keyText) as unknown[], exact: true }),
    [queries, keyText],
  );
  const set = useCallback(
    (data: ResultOf<N>) => queries.setQueryData(JSON.parse(keyText) as unknown[], data),
    [queries, keyText],
  );
  const update = useCallback(
    (change: (old: ResultOf<N> | undefined) => ResultOf<N> | undefined) =>
      queries.setQueryData<ResultOf<N>>(JSON.parse(keyText) as unknown[], change),
    [queries, keyText],
  );
  return {
    data: query.data,
    error: cut ? undefined : (query.error ?? undefined),
    loading: query.isFetching || cut,
    reload,
    set,
    update,
  };
}
