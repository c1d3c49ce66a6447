/** The signed-in shell: one RPC client for the credential, a header with the person and the connection's state,
 * and the screen of the current path. */
import { lazy, Suspense, useCallback, useEffect, useState } from "react";
import { RpcClient, rpcUrlFor } from "./rpc/client";
import { useConnectionState } from "./rpc/hooks";
import { useRevokeDevice } from "./data/credentials";
import { DataProvider, useRead } from "./data/queries";
import { HeaderMenu } from "./HeaderMenu";
import { Link } from "./Link";
import { markFirstRender } from "./perf";
import type { Route } from "./router";
import { Home } from "./screens/Home";
import { NotFound } from "./screens/NotFound";
import { useShortcuts } from "./shortcuts";
import { ShortcutsDialog } from "./ShortcutsDialog";

// The workspace screens load with the first visit to one of them, keeping the first load small.
const WorkspaceHome = lazy(() => import("./screens/workspace/WorkspaceHome"));
const TicketPage = lazy(() => import("./screens/workspace/TicketPage"));
const WorkspaceSettings = lazy(() => import("./screens/workspace/WorkspaceSettings"));
const AuditPage = lazy(() => import("./screens/workspace/AuditPage"));
const CodeSearch = lazy(() => import("./screens/code/CodeSearch"));

// The pipelines screens (their canvas, editor and YAML parser) load with the first visit to them, not before.
const Pipelines = lazy(() => import("./screens/pipelines/Pipelines").then((m) => ({ default: m.Pipelines })));
const RunMonitor = lazy(() => import("./screens/pipelines/RunMonitor").then((m) => ({ default: m.RunMonitor })));

function Loading() {
  return <p aria-busy="true">Loading…</p>;
}

// Settings screens load with their own chunk, only when opened.
const ServerSettings = lazy(() => import("./screens/settings/ServerSettings"));
const Devices = lazy(() => import("./screens/settings/Devices"));
import { Space } from "./screens/space";

const STATE_TEXT = {
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  unauthenticated: "Signed out",
  closed: "Disconnected",
} as const;

function Header({ onSignOut }: { onSignOut(deviceId: string | null): void }) {
  const me = useRead("users.me", {});
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
      <HeaderMenu>
        <p className="me">
          {me.data && (
            <>
              <span className="name">{me.data.displayName}</span>
              {me.data.isServerOwner && <span className="badge">server owner</span>}
            </>
          )}
        </p>
        <nav className="settings-links" aria-label="Settings">
          <Link href="/settings/devices">Devices</Link>
          {me.data?.isServerOwner && <Link href="/settings/server/sso">Server settings</Link>}
        </nav>
        <button type="button" className="secondary" onClick={() => onSignOut(me.data?.deviceId ?? null)}>
          Sign out
        </button>
      </HeaderMenu>
    </header>
  );
}

function Screen({ route }: { route: Route }) {
  useEffect(() => markFirstRender(), []);
  switch (route.name) {
    case "workspace":
      return <WorkspaceHome workspaceId={route.workspaceId} section={route.section} />;
    case "ticket":
      return <TicketPage workspaceId={route.workspaceId} ticketId={route.ticketId} />;
    case "workspaceSettings":
      return <WorkspaceSettings workspaceId={route.workspaceId} />;
    case "audit":
      return <AuditPage workspaceId={route.workspaceId} />;
    case "code":
      return <CodeSearch workspaceId={route.workspaceId} repoId={route.repoId} search={route.search} />;
    case "pipelines":
      return (
        <Suspense fallback={<Loading />}>
          <Pipelines workspaceId={route.workspaceId} />
        </Suspense>
      );
    case "pipelineRun":
      return (
        <Suspense fallback={<Loading />}>
          <RunMonitor workspaceId={route.workspaceId} runId={route.runId} />
        </Suspense>
      );
    case "serverSettings":
      return (
        <Suspense fallback={<p aria-busy="true">Loading settings…</p>}>
          <ServerSettings section={route.section} />
        </Suspense>
      );
    case "devices":
      return (
        <Suspense fallback={<p aria-busy="true">Loading devices…</p>}>
          <Devices />
        </Suspense>
      );
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
  const revoke = useRevokeDevice();
  const [helpOpen, setHelpOpen] = useState(false);
  useShortcuts(route, useCallback(() => setHelpOpen(true), []));
  const signOut = (deviceId: string | null) => {
    // The credential stops working on the server too, not only in this browser; signing out never waits on it.
    if (deviceId) void revoke(deviceId).finally(onSignedOut);
    else onSignedOut();
  };
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Header onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <Screen route={route} />
        </Suspense>
      </main>
      <ShortcutsDialog open={helpOpen} onClose={() => setHelpOpen(false)} />
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
    <DataProvider client={client}>
      <Body route={props.route} onSignedOut={props.onSignedOut} />
    </DataProvider>
  );
}
