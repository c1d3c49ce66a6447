/** A workspace's overview (`/workspaces/<id>`): each section in a line (how many spaces, tickets and how many of
 * them are unfinished, agents and teams, repositories, members) with its link, and the live activity. */
import type { EventView } from "../../generated/ops";
import { Link } from "../../Link";
import type { RpcError } from "../../rpc/errors";
import { workspaceSectionPath, type WorkspaceSection } from "../../router";
import { Activity } from "./Activity";
import { SECTION_LABEL } from "./WorkspaceNav";
import { useRead } from "../../data/queries";

/** "1 space", "3 spaces"; null while the count is not known. */
export function counted(n: number | undefined, one: string, many = `${one}s`): string | null {
  return n === undefined ? null : `${n} ${n === 1 ? one : many}`;
}

const CLOSED = new Set(["done", "cancelled"]);

function Line(props: { workspaceId: string; section: WorkspaceSection; summary: Array<string | null>; error: RpcError | undefined }) {
  const known = props.summary.filter((s): s is string => s !== null);
  return (
    <li>
      <Link href={workspaceSectionPath(props.workspaceId, props.section)}>{SECTION_LABEL[props.section]}</Link>
      <span className="hint">
        {props.error ? "cannot be read" : known.length === props.summary.length ? known.join(", ") : "…"}
      </span>
    </li>
  );
}

export function Overview(props: {
  workspaceId: string;
  member: boolean;
  activity: { events: EventView[]; loaded: boolean; error: RpcError | null };
}) {
  const { workspaceId } = props;
  const ws = { workspace_id: workspaceId };
  const spaces = useRead("spaces.list", ws);
  const tickets = useRead("tickets.list", ws);
  const agents = useRead("agents.list", ws);
  const teams = useRead("teams.list", ws);
  const repos = useRead("repos.list", ws);
  const members = useRead("members.list", ws);
  const all = tickets.data?.tickets;
  const open = all?.filter((t) => !CLOSED.has(t.status)).length;
  return (
    <>
      <section aria-labelledby="overview-title" className="panel">
        <h2 id="overview-title">Overview</h2>
        <ul className="list overview" aria-label="Sections of this workspace">
          <Line
            workspaceId={workspaceId}
            section="spaces"
            summary={[counted(spaces.data?.spaces.length, "space")]}
            error={spaces.error}
          />
          <Line
            workspaceId={workspaceId}
            section="tickets"
            summary={[counted(all?.length, "ticket"), open === undefined ? null : `${open} unfinished`]}
            error={tickets.error}
          />
          <Line
            workspaceId={workspaceId}
            section="agents"
            summary={[counted(agents.data?.agents.length, "agent"), counted(teams.data?.teams.length, "team")]}
            error={agents.error ?? teams.error}
          />
          <Line
            workspaceId={workspaceId}
            section="repos"
            summary={[counted(repos.data?.repos.length, "repository", "repositories")]}
            error={repos.error}
          />
          <Line
            workspaceId={workspaceId}
            section="members"
            summary={[counted(members.data?.length, "member")]}
            error={members.error}
          />
        </ul>
      </section>
      {props.member && <Activity workspaceId={props.workspaceId} {...props.activity} />}
    </>
  );
}
