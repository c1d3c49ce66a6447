/** The signed-in shell: one RPC client for the credential, a header with the person and the connection's state,
 * and the screen of the current path. */
import { useEffect, useState } from "react";
import { RpcClient, rpcUrlFor } from "./rpc/client";
import { RpcContext, useCall, useConnectionState, useRpc } from "./rpc/hooks";
import { Link } from "./Link";
import { markFirstRender } from "./perf";
import type { Route } from "./router";
import { Home } from "./screens/Home";
import { NotFound } from "./screens/NotFound";
import { Workspace } from "./screens/Workspace";
import { Space } from "./screens/space";

const STATE_TEXT = {
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  unauthenticated: "Signed out",
  closed: "Disconnected",
} as const;

function Header({ onSignOut }: { onSignOut(deviceId: string | null): void }) {
  const me = useCall("users.me", {});
  const state = useConnectionState();
  return (
    <header className="top">
      <Link href="/" className="brand">
        Hangar
      </Link>
      <p className="status" role="status" data-state={state}>
        <span className="dot" aria-hidden="true" />
        {STATE_TEXT[state]}
      </p>
      <p className="me">
        {me.data && (
          <>
            <span className="name">{me.data.displayName}</span>
            {me.data.isServerOwner && <span className="badge">server owner</span>}
          </>
        )}
      </p>
      <button type="button" className="secondary" onClick={() => onSignOut(me.data?.deviceId ?? null)}>
        Sign out
      </button>
    </header>
  );
}

function Screen({ route }: { route: Route }) {
  useEffect(() => markFirstRender(), []);
  switch (route.name) {
    case "workspace":
      return <Workspace workspaceId={route.workspaceId} />;
    case "space":
    case "rig":
      return <Space route={route} />;
    case "notFound":
      return <NotFound path={route.path} />;
    default:
      return <Home />;
  }
}

function Body({ route, onSignedOut }: { route: Route; onSignedOut(): void }) {
  const client = useRpc();
  const signOut = (deviceId: string | null) => {
    // The credential stops working on the server too, not only in this browser; signing out never waits on it.
    if (deviceId) client.call("devices.revoke", { deviceId }).catch(() => undefined).finally(onSignedOut);
    else onSignedOut();
  };
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Header onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        <Screen route={route} />
      </main>
    </>
  );
}

export function SignedIn(props: { token: string; route: Route; onSignedOut(): void; onRejected(): void }) {
  const { token, onRejected } = props;
  const [client, setClient] = useState<RpcClient | null>(null);
  useEffect(() => {
    const c = new RpcClient({ url: rpcUrlFor(window.location), token, onUnauthenticated: () => onRejected() });
    setClient(c);
    return () => c.close();
  }, [token, onRejected]);
  if (!client) return null;
  return (
    <RpcContext.Provider value={client}>
      <Body route={props.route} onSignedOut={props.onSignedOut} />
    </RpcContext.Provider>
  );
}
