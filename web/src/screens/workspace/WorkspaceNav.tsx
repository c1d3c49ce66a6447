/** The sections of a workspace, each at its own path (`/workspaces/<id>/<section>`), then the workspace's other
 * screens in a smaller row: a navigation landmark whose current entry says so (`aria-current="page"`). Links are
 * ordinary links, so Tab reaches each one and Enter follows it; on a phone the sections' row scrolls sideways
 * instead of wrapping. */
import { useEffect, useRef } from "react";
import { Link } from "../../Link";
import { auditPath, pipelinesPath, workspaceSectionPath, workspaceSettingsPath, type WorkspaceSection } from "../../router";

/** The name of each section, as the navigation and the page title say it. */
export const SECTION_LABEL: Record<WorkspaceSection, string> = {
  overview: "Overview",
  spaces: "Spaces",
  tickets: "Tickets",
  agents: "Agents and teams",
  skills: "Skills",
  meetings: "Meetings",
  repos: "Repositories",
  members: "Members",
};

const SECTIONS = Object.keys(SECTION_LABEL) as WorkspaceSection[];

export function WorkspaceNav(props: { workspaceId: string; section: WorkspaceSection; admin: boolean; member: boolean }) {
  const { workspaceId, section } = props;
  const list = useRef<HTMLUListElement>(null);
  // On a narrow screen the current section may sit past the edge of the row: bring it into view.
  useEffect(() => {
    list.current?.querySelector('[aria-current="page"]')?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  }, [section]);
  return (
    <nav aria-label="Workspace" className="subnav">
      <ul ref={list} className="sections">
        {SECTIONS.map((s) => (
          <li key={s}>
            <Link href={workspaceSectionPath(workspaceId, s)} aria-current={s === section ? "page" : undefined}>
              {SECTION_LABEL[s]}
            </Link>
          </li>
        ))}
      </ul>
      <ul className="more">
        <li>
          <Link href={pipelinesPath(workspaceId)}>Pipelines</Link>
        </li>
        <li>
          <Link href={workspaceSettingsPath(workspaceId)}>Settings</Link>
        </li>
        {props.member && (
          <li>
            <Link href={auditPath(workspaceId)}>{props.admin ? "Audit log and events" : "Events"}</Link>
          </li>
        )}
      </ul>
    </nav>
  );
}
