/** Ending a credential on the server, best effort and never waited on by the person: signing out revokes this
 * browser's device, and a sign-in link's credential declined on the confirmation (`auth/signinLink.ts`) is revoked
 * so no unused device of the owner is left behind. Neither marks a cached read stale: the shell that cached them is
 * going away (a read made again with the revoked credential would only be refused). */
import { useCallback } from "react";
import { rpcUrlFor, RpcClient } from "../rpc/client";
import { useRpc } from "../rpc/hooks";

/** Revokes a device of the signed-in person; settles either way (the server may be gone, or the device already). */
export function useRevokeDevice(): (deviceId: string) => Promise<void> {
  const client = useRpc();
  return useCallback(
    (deviceId: string) => client.call("devices.revoke", { deviceId }).then(
      () => undefined,
      () => undefined,
    ),
    [client],
  );
}

/** Revokes the credential `token` is (outside the signed-in shell: its own short-lived connection). */
export async function discardCredential(token: string): Promise<void> {
  const client = new RpcClient({ url: rpcUrlFor(window.location), token });
  try {
    const me = await client.call("users.me");
    if (me.deviceId) await client.call("devices.revoke", { deviceId: me.deviceId });
  } catch {
    /* nothing more to do */
  } finally {
    client.close();
  }
}
