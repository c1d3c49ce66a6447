/** Revoking a credential nobody will use: the one a sign-in link's code was redeemed for, declined on the
 * confirmation (`signinLink.ts`). */
import { rpcUrlFor, RpcClient } from "../rpc/client";

/** Best effort, never waited on by the person: the server may be gone, or the credential already is. */
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
