/** A space (`/workspaces/<id>/spaces/<spaceId>`, and `/workspaces/<id>/rigs/<rigId>` for one of its rigs): the
 * live conversation with its composer, the provisioning banner, and the space's rigs as tabs (or one of them beside
 * the conversation: `SplitView`). */
import { lazy, Suspense, useCallback, useEffect, useMemo, useState, type KeyboardEvent } from "react";
import type { Provisioning, RigRow, SpaceView } from "../../generated/ops";
import { Link } from "../../Link";
import { navigate, rigPath, spacePath, workspacePath } from "../../router";
import { useRead } from "../../data/queries";
import { Composer } from "./Composer";
import { engineLabel } from "./rigs/engines";
import { OpenRig } from "./rigs/OpenRig";
import { SplitToggle, SplitView, useSplit } from "./SplitView";
import { foldRun } from "./stream";
import { Timeline } from "./Timeline";
import { useSpaceStream } from "../../data/spaceStream";
import { PullRequestPanel } from "../forges/PullRequestPanel";
import "./space.css";
import "./phone.css";

const RigPanel = lazy(() => import("./rigs/RigPanel").then((m) => ({ default: m.RigPanel })));

export type SpaceRoute =
  | { name: "space"; workspaceId: string; spaceId: string }
  | { name: "rig"; workspaceId: string; rigId: string };

const STEP_TEXT: Record<string, string> = {
  repo: "checking out a repository",
  prCheckout: "checking out the pull request",
  script: "running the setup script",
  agent: "starting the agent",
};

function ProvisioningBanner({ provisioning }: { provisioning: Provisioning }) {
  if (provisioning.state === "ready") return null;
  const [step, detail] = (provisioning.step ?? "").split(/:\s(.*)/s);
  const doing = [STEP_TEXT[step ?? ""] ?? step, detail].filter(Boolean).join(": ");
  if (provisioning.state === "provisioning") {
    return (
      <div className="banner" role="status" data-state="provisioning">
        <progress aria-label="Setting up the space" />
        <span>Setting up this space{doing ? ` — ${doing}` : ""}…</span>
      </div>
    );
  }
  return (
    <div className="banner" role="alert" data-state={provisioning.state}>
      {provisioning.state === "failed" ? "Setting up this space failed" : "Setting up this space was cancelled"}
      {provisioning.error ? `: ${provisioning.error}` : "."}
    </div>
  );
}

/** The rig id of a `/rigs/<rigId>` link resolved to its space. */
function useRigSpace(route: SpaceRoute): { spaceId: string | null; error: string | null } {
  const rigId = route.name === "rig" ? route.rigId : null;
  const list = useRead("rig_list", { workspace_id: route.workspaceId, includeClosed: true }, { enabled: rigId !== null });
  if (route.name === "space") return { spaceId: route.spaceId, error: null };
  if (list.error) return { spaceId: null, error: list.error.message };
  if (list.data === undefined) return { spaceId: null, error: null };
  const row = list.data.find((r) => r.rigId === rigId);
  return row ? { spaceId: row.spaceId, error: null } : { spaceId: null, error: "not found" };
}

export function SpaceScreen({ route }: { route: SpaceRoute }) {
  const rig = useRigSpace(route);
  if (rig.error) {
    return (
      <>
        <p className="crumbs">
          <Link href={workspacePath(route.workspaceId)}>Workspace</Link>
        </p>
        <h1>Rig not found</h1>
        <p role="alert">This rig does not exist in this workspace, or you cannot see it ({rig.error}).</p>
      </>
    );
  }
  if (!rig.spaceId) return <p role="status">Opening the rig…</p>;
  return (
    <Space
      workspaceId={route.workspaceId}
      spaceId={rig.spaceId}
      tab={route.name === "rig" ? route.rigId : null}
    />
  );
}

interface Rigs {
  rigs: RigRow[];
  loaded: boolean;
  refresh(): void;
  error: string | null;
}

/** A rig's tab: its terminal, a browser rig's live view (named with its engine), a desktop or a phone. */
function tabName(rig: RigRow): string {
  if (rig.surface === "terminal") return "Terminal";
  if (rig.surface === "computer") return "Desktop";
  if (rig.surface === "mobile") return "Phone";
  return rig.surface === "browser" ? `Live view (${engineLabel(rig.engine)})` : rig.surface;
}

/** Left and right arrows move between tabs (the ARIA tabs pattern); the tab that gets focus is selected. */
function moveBetweenTabs(e: KeyboardEvent<HTMLDivElement>) {
  if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
  const tabs = [...e.currentTarget.querySelectorAll<HTMLButtonElement>('[role="tab"]')];
  const at = tabs.findIndex((t) => t === document.activeElement);
  const next = tabs[(at + (e.key === "ArrowRight" ? 1 : -1) + tabs.length) % tabs.length];
  if (!next) return;
  e.preventDefault();
  next.focus();
  next.click();
}

function useRigs(workspaceId: string, spaceId: string): Rigs {
  const list = useRead("rig_list", { workspace_id: workspaceId });
  const rigs = list.data?.filter((r) => r.spaceId === spaceId && r.status !== "closed");
  // Guests may not list rigs: the conversation works without them.
  return { rigs: rigs ?? [], loaded: rigs !== undefined, refresh: list.reload, error: list.error?.message ?? null };
}

function Space({ workspaceId, spaceId, tab }: { workspaceId: string; spaceId: string; tab: string | null }) {
  const stream = useSpaceStream(workspaceId, spaceId);
  const agents = useRead("agents.list", { workspace_id: workspaceId });
  const workspaces = useRead("workspaces.list", {});
  const { rigs, loaded: rigsLoaded, refresh, error: rigsError } = useRigs(workspaceId, spaceId);
  // A rig's tab stays mounted once visited, so its terminal keeps its session while the conversation is shown.
  const [visited, setVisited] = useState<ReadonlySet<string>>(new Set());
  const split = useSplit();
  const names = useMemo(() => new Map((agents.data?.agents ?? []).map((a) => [a.id, a.name])), [agents.data]);
  const agentName = useCallback((id: string | null) => (id && names.get(id)) || "Agent", [names]);
  const working = useMemo(
    () => stream.liveRuns.filter((id) => foldRun(id, stream.runs[id] ?? []).status === "running").length,
    [stream.liveRuns, stream.runs],
  );

  const select = (rigId: string | null) =>
    navigate(rigId ? rigPath(workspaceId, rigId) : spacePath(workspaceId, spaceId), true);

  const space: SpaceView | null = stream.space;
  const workspace = workspaces.data?.find((w) => w.id === workspaceId);
  const archived = space?.archivedAt ? "This space is archived: it keeps its history and takes no new messages." : null;
  const guest = workspace?.role === "guest" ? "Guests read spaces; posting needs the member role." : null;
  const activeRig = rigs.find((r) => r.rigId === tab) ?? null;
  const current = activeRig ? activeRig.rigId : null;
  useEffect(() => {
    if (current !== null) setVisited((v) => (v.has(current) ? v : new Set([...v, current])));
  }, [current]);

  useEffect(() => {
    if (space) document.title = `${space.title} · Hangar`;
  }, [space]);

  if (stream.error && !space) {
    return (
      <>
        <p className="crumbs">
          <Link href={workspacePath(workspaceId)}>{workspace?.name ?? "Workspace"}</Link>
        </p>
        <h1>Space not found</h1>
        <p role="alert">{stream.error.message}</p>
      </>
    );
  }
  return (
    <div className="space">
      <p className="crumbs">
        <Link href={workspacePath(workspaceId)}>{workspace?.name ?? "Workspace"}</Link>
      </p>
      <div className="space-head">
        <h1>{space?.title ?? "Space"}</h1>
        {space && <span className="badge">{space.mode}</span>}
        <p className="run-summary" role="status">
          {working > 0 ? `${working} agent run${working === 1 ? "" : "s"} in progress` : ""}
        </p>
      </div>
      {space && <ProvisioningBanner provisioning={space.provisioning} />}
      {space?.mode === "review" && <PullRequestPanel workspaceId={workspaceId} spaceId={spaceId} />}
      <div className="tabs-row">
      <div className="tabs" role="tablist" aria-label="Conversation and rigs" onKeyDown={moveBetweenTabs}>
        <button
          type="button"
          role="tab"
          id="tab-conversation"
          aria-selected={current === null}
          tabIndex={current === null ? 0 : -1}
          aria-controls="panel-conversation"
          className="tab"
          onClick={() => select(null)}
        >
          Conversation
        </button>
        {rigs.map((r) => (
          <button
            type="button"
            role="tab"
            key={r.rigId}
            id={`tab-${r.rigId}`}
            aria-selected={current === r.rigId}
            tabIndex={current === r.rigId ? 0 : -1}
            aria-controls={`panel-${r.rigId}`}
            className="tab"
            data-phase={r.status}
            onClick={() => select(r.rigId)}
          >
            {tabName(r)} <span className="hint">{r.status}</span>
          </button>
        ))}
      </div>
        {!rigsError && rigsLoaded && (
          <OpenRig
            workspaceId={workspaceId}
            spaceId={spaceId}
            rigs={rigs}
            disabled={archived}
            onOpened={(rigId) => {
              refresh();
              select(rigId);
            }}
          />
        )}
        {rigs.length > 0 && <SplitToggle split={split} />}
      </div>
      <SplitView
        split={split}
        active={current !== null}
        conversation={
      <section
        className="panel conversation"
        role="tabpanel"
        id="panel-conversation"
        aria-labelledby="tab-conversation"
        hidden={current !== null && !split.on}
      >
        {stream.error && (
          <p className="error" role="alert">
            {stream.error.message}
          </p>
        )}
        {!stream.opened ? (
          <p role="status">Loading the conversation…</p>
        ) : (
          <Timeline
            workspaceId={workspaceId}
            messages={stream.messages}
            runs={stream.runs}
            records={stream.records}
            loadRecord={stream.loadRecord}
            liveRuns={stream.liveRuns}
            olderDone={stream.olderDone}
            loadOlder={stream.loadOlder}
            loadRun={stream.loadRun}
            agentName={agentName}
          />
        )}
        <Composer
          workspaceId={workspaceId}
          spaceId={spaceId}
          agents={agents.data?.agents ?? []}
          disabled={archived ?? guest}
        />
      </section>
        }
        rig={rigs.map((r) => (
        <section
          key={r.rigId}
          className="panel"
          role="tabpanel"
          id={`panel-${r.rigId}`}
          aria-labelledby={`tab-${r.rigId}`}
          hidden={current !== r.rigId}
        >
          {current === r.rigId || visited.has(r.rigId) ? (
            <Suspense fallback={<p role="status">Loading the rig…</p>}>
              <RigPanel workspaceId={workspaceId} rig={r} onChanged={refresh} />
            </Suspense>
          ) : null}
        </section>
      ))}
      />
      {tab !== null && !activeRig && rigsLoaded && (
        <p role="alert">This rig is closed or belongs to another space.</p>
      )}
    </div>
  );
}
