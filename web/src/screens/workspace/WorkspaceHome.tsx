/** A workspace's home, in sections a person reaches directly: the overview at `/workspaces/<id>` (each section's
 * count and the live activity), and `/workspaces/<id>/spaces`, `/tickets` (the board), `/agents` (agents and
 * teams), `/repos` (repositories and worktrees) and `/members` (members and invites). The activity's events also
 * mark stale the cached lists another person or an agent changed (`data/invalidation.ts`), so they are fetched
 * again; the watch stays open while the person moves between sections. */
import { useEffect, useRef } from "react";
import { workspaceRoleLabel } from "../../labels";
import { Link } from "../../Link";
import {
  navigate,
  WORKSPACE_SECTIONS,
  workspaceSectionPath,
  workspaceSettingsPath,
  type WorkspaceSection,
} from "../../router";
import { Agents } from "./Agents";
import { NotAMember, WorkspaceHeader } from "../../components/WorkspaceHeader";
import { isAdmin, useWorkspace } from "../../data/workspaces";
import { useWorkspaceEvents } from "../../data/events";
import { InviteForm, MemberList } from "./Members";
import { Overview } from "./Overview";
import { Repos } from "./Repos";
import { Meetings } from "./Meetings";
import { Skills } from "./Skills";
import { Spaces } from "./Spaces";
import { Teams } from "./Teams";
import { TicketsBoard } from "./TicketsBoard";
import { SECTION_LABEL, WorkspaceNav } from "./WorkspaceNav";
import "./workspace.css";

const ACTIVITY_SHOWN = 50;

/** A link of the one long page this used to be (`/workspaces/<id>#tickets`) goes to the section's own path. */
function useOldAnchors(workspaceId: string, section: WorkspaceSection): void {
  useEffect(() => {
    const anchor = window.location.hash.slice(1);
    const target = WORKSPACE_SECTIONS.find((s) => s === (anchor === "teams" ? "agents" : anchor));
    if (section === "overview" && target && target !== "overview") {
      navigate(workspaceSectionPath(workspaceId, target), true);
    }
  }, [workspaceId, section]);
}

function Section(props: { workspaceId: string; section: WorkspaceSection; role: string }) {
  const { workspaceId, role } = props;
  const admin = isAdmin(role);
  const member = role !== "guest";
  switch (props.section) {
    case "spaces":
      return <Spaces workspaceId={workspaceId} canChange={member} />;
    case "tickets":
      return <TicketsBoard workspaceId={workspaceId} canChange={member} />;
    case "agents":
      return (
        <>
          <Agents workspaceId={workspaceId} admin={admin} />
          <Teams workspaceId={workspaceId} canChange={member} />
        </>
      );
    case "skills":
      return <Skills workspaceId={workspaceId} admin={admin} />;
    case "meetings":
      return <Meetings workspaceId={workspaceId} member={member} />;
    case "repos":
      return <Repos workspaceId={workspaceId} admin={admin} member={member} />;
    case "members":
      return (
        <section aria-labelledby="members-title" className="panel" id="members">
          <h2 id="members-title">Members and invites</h2>
          <MemberList workspaceId={workspaceId} />
          {admin && <InviteForm workspaceId={workspaceId} myRole={role} />}
          <p>
            <Link href={workspaceSettingsPath(workspaceId)}>Change roles and guardrails in the settings</Link>
          </p>
        </section>
      );
    default:
      return null;
  }
}

function Home(props: { workspaceId: string; name: string; role: string; section: WorkspaceSection }) {
  const { workspaceId, role, section } = props;
  const member = role !== "guest";
  // Following the activity also keeps the sections' reads fresh: each event marks stale the reads it changes.
  const activity = useWorkspaceEvents(workspaceId, { shown: ACTIVITY_SHOWN });
  const content = useRef<HTMLDivElement>(null);
  const first = useRef(true);
  useOldAnchors(workspaceId, section);
  useEffect(() => {
    document.title = `${section === "overview" ? props.name : `${SECTION_LABEL[section]} · ${props.name}`} · Hangar`;
    // Moving to another section puts the keyboard focus on it (not on the first load: focus starts at the top).
    if (first.current) first.current = false;
    else content.current?.focus({ preventScroll: true });
  }, [section, props.name]);
  return (
    <>
      <WorkspaceNav workspaceId={workspaceId} section={section} admin={isAdmin(role)} member={member} />
      <div ref={content} tabIndex={-1} className="ws-section" data-section={section}>
        {section === "overview" ? (
          <Overview workspaceId={workspaceId} member={member} activity={activity} />
        ) : (
          <Section key={section} workspaceId={workspaceId} section={section} role={role} />
        )}
      </div>
    </>
  );
}

export default function WorkspaceHome({ workspaceId, section }: { workspaceId: string; section: WorkspaceSection }) {
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
      {workspace && (
        <Home
          key={workspaceId}
          workspaceId={workspaceId}
          name={workspace.name}
          role={workspace.role}
          section={section}
        />
      )}
    </div>
  );
}
