/** A workspace's home (`/workspaces/<id>`): spaces, the tickets board, agents, teams, repositories and worktrees,
 * members and invites, and the live activity. The activity's events also tell the lists when another person or
 * an agent changed something, so they are fetched again. */
import { useCallback, useState } from "react";
import type { EventView } from "../../generated/ops";
import { workspaceRoleLabel } from "../../labels";
import { Link } from "../../Link";
import { auditPath, pipelinesPath, workspaceSettingsPath } from "../../router";
import { Activity } from "./Activity";
import { Agents } from "./Agents";
import { isAdmin, NotAMember, useWorkspace, WorkspaceHeader } from "./common";
import { useWorkspaceEvents } from "./events";
import { InviteForm, MemberList } from "./Members";
import { Repos } from "./Repos";
import { Spaces } from "./Spaces";
import { Teams } from "./Teams";
import { TicketsBoard } from "./TicketsBoard";
import "./workspace.css";

const ACTIVITY_SHOWN = 50;

/** Which list an event changes, by its type's prefix. */
const CHANGES: ReadonlyArray<readonly [string, "spaces" | "tickets" | "members"]> = [
  ["workspace.space", "spaces"],
  ["workspace.ticket", "tickets"],
  ["identity.member", "members"],
];

function useChanges(): [Record<"spaces" | "tickets" | "members", number>, (e: EventView) => void] {
  const [counts, setCounts] = useState({ spaces: 0, tickets: 0, members: 0 });
  const seen = useCallback((e: EventView) => {
    const list = CHANGES.find(([prefix]) => e.type.startsWith(prefix))?.[1];
    if (list) setCounts((c) => ({ ...c, [list]: c[list] + 1 }));
  }, []);
  return [counts, seen];
}

function Home({ workspaceId, role }: { workspaceId: string; role: string }) {
  const admin = isAdmin(role);
  const member = role !== "guest";
  const [changes, seen] = useChanges();
  const [agentsChanged, setAgentsChanged] = useState(0);
  const activity = useWorkspaceEvents(workspaceId, { shown: ACTIVITY_SHOWN, onChange: seen });
  return (
    <>
      <nav aria-label="Workspace" className="subnav">
        <a href="#spaces">Spaces</a>
        <a href="#tickets">Tickets</a>
        <a href="#agents">Agents</a>
        <a href="#teams">Teams</a>
        <a href="#repos">Repositories</a>
        <a href="#members">Members</a>
        <Link href={pipelinesPath(workspaceId)}>Pipelines</Link>
        <Link href={workspaceSettingsPath(workspaceId)}>Settings</Link>
        {member && <Link href={auditPath(workspaceId)}>{admin ? "Audit log and events" : "Events"}</Link>}
      </nav>
      <Spaces workspaceId={workspaceId} refresh={changes.spaces} canChange={member} />
      <TicketsBoard workspaceId={workspaceId} refresh={changes.tickets} canChange={member} />
      <Agents workspaceId={workspaceId} admin={admin} onChanged={() => setAgentsChanged((n) => n + 1)} />
      <Teams workspaceId={workspaceId} agentsChanged={agentsChanged} canChange={member} />
      <Repos workspaceId={workspaceId} admin={admin} member={member} />
      <section aria-labelledby="members-title" className="panel" id="members">
        <h2 id="members-title">Members and invites</h2>
        <MemberList workspaceId={workspaceId} refresh={changes.members} />
        {admin && <InviteForm workspaceId={workspaceId} myRole={role} />}
        <p>
          <Link href={workspaceSettingsPath(workspaceId)}>Change roles and guardrails in the settings</Link>
        </p>
      </section>
      {member && <Activity workspaceId={workspaceId} {...activity} />}
    </>
  );
}

export default function WorkspaceHome({ workspaceId }: { workspaceId: string }) {
  const { workspace, missing, error } = useWorkspace(workspaceId);
  return (
    <div className="ws">
      <WorkspaceHeader
        workspaceId={workspaceId}
        workspace={workspace}
        title={workspace ? undefined : missing ? "Workspace not found" : "Workspace"}
      >
        {workspace && (
          <p className="hint">
            Your role: <span className="badge">{workspaceRoleLabel(workspace.role)}</span>
          </p>
        )}
      </WorkspaceHeader>
      {error && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
      {missing && <NotAMember />}
      {workspace && <Home key={workspaceId} workspaceId={workspaceId} role={workspace.role} />}
    </div>
  );
}
