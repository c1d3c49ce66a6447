/** React's view of the RPC client: the client of the signed-in shell and its connection state. What a screen
 * reads and writes goes through the data layer (`../data/`), which caches reads and refreshes them. */
import { createContext, useContext, useSyncExternalStore } from "react";
import type { ConnectionState, RpcClient } from "./client";

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
