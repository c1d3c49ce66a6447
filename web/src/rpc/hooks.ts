/** React's view of the RPC client: the client of the signed-in shell, its connection state, and calls whose
 * results a screen shows (fetched again after every reconnect, so a server restart leaves nothing stale). */
import { createContext, useContext, useEffect, useState, useSyncExternalStore } from "react";
import type { CallOpName, OpName } from "../generated/ops";
import type { ArgsOf, ConnectionState, ResultOf, RpcClient } from "./client";
import { RpcError } from "./errors";

export const RpcContext = createContext<RpcClient | null>(null);

export function useRpc(): RpcClient {
  const client = useContext(RpcContext);
  if (!client) throw new Error("useRpc outside the signed-in shell");
  return client;
}

export function useConnectionState(): ConnectionState {
  const client = useRpc();
  return useSyncExternalStore(
    (listener) => client.subscribe(listener),
    () => client.state,
  );
}

/** How many times the socket has (re)connected: a dependency that re-runs an effect after each reconnect. */
export function useConnectionEpoch(): number {
  const client = useRpc();
  return useSyncExternalStore(
    (listener) => client.subscribe(listener),
    () => client.epoch,
  );
}

export interface CallState<N extends OpName> {
  data: ResultOf<N> | undefined;
  error: RpcError | undefined;
  loading: boolean;
}

/** `refresh`: any value that changes when the result should be fetched again (after a change the screen made). */
export function useCall<N extends CallOpName>(op: N, args: ArgsOf<N>, refresh: unknown = 0): CallState<N> {
  const client = useRpc();
  const epoch = useConnectionEpoch();
  const key = JSON.stringify(args);
  const [state, setState] = useState<CallState<N>>({ data: undefined, error: undefined, loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    // The rest-parameter signature of `call` does not narrow for a generic N; the arguments are N's all the same.
    const call = client.call.bind(client) as (op: N, args: ArgsOf<N>) => Promise<ResultOf<N>>;
    call(op, JSON.parse(key) as ArgsOf<N>).then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: unknown) => {
        if (!live) return;
        const err = error instanceof RpcError ? error : new RpcError("internal", String(error));
        // A call cut off by a lost connection is made again once the socket is back (the epoch changes).
        if (err.code === "unavailable") return;
        setState((s) => ({ data: s.data, error: err, loading: false }));
      },
    );
    return () => {
      live = false;
    };
  }, [client, op, key, epoch, refresh]);
  return state;
}
