/** The audit log and the domain events of a workspace (`/workspaces/<id>/audit`; section 9 names no path for them).
 * The audit log is filtered on the server by action, principal, target, door and time, newest first; the events by
 * type and time, following new ones live. */
import { useId, useState, type FormEvent } from "react";
import type { AuditListArgs } from "../../generated/ops";
import { IdDetails } from "../../IdDetails";
import { RECORD_KINDS, splitRef, workspaceRoleLabel } from "../../labels";
import { Link } from "../../Link";
import { workspacePath, workspaceSettingsPath } from "../../router";
import { Refusal } from "../../components/Outcome";
import { NotAMember, WorkspaceHeader } from "../../components/WorkspaceHeader";
import { when } from "../../components/time";
import { useRead } from "../../data/queries";
import { isAdmin, useWorkspace } from "../../data/workspaces";
import { EventLine, useEventNames } from "./eventLine";
import { useWorkspaceEvents } from "../../data/events";
import { RecordName, useNames, type NameKind, type Names } from "./names";
import "./workspace.css";

const PAGE = 200;
const EVENTS_SHOWN = 200;

interface AuditFilter {
  action: string;
  principal: string;
  target: string;
  door: string;
  since: string;
  until: string;
}

const NO_FILTER: AuditFilter = { action: "", principal: "", target: "", door: "", since: "", until: "" };

/** A `datetime-local` value (the person's local time) as the instant the server compares with. */
export function instant(local: string): string | null {
  if (!local) return null;
  const t = new Date(local);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}

/** Whether a window typed as local times holds no instant (its end not after its start). */
export function emptyWindow(since: string, until: string): boolean {
  const from = instant(since);
  const to = instant(until);
  return from !== null && to !== null && Date.parse(to) <= Date.parse(from);
}

export function auditArgs(workspaceId: string, f: AuditFilter): AuditListArgs {
  return {
    workspace_id: workspaceId,
    action: f.action.trim() || null,
    principal: f.principal || null,
    target: f.target.trim() || null,
    door: f.door === "socket" || f.door === "mcp" || f.door === "none" ? f.door : null,
    since: instant(f.since),
    until: instant(f.until),
    limit: PAGE,
    newest: true,
  };
}

/** The kinds of record audit rows name (as principals and targets), looked up by name. */
const AUDIT_KINDS: NameKind[] = ["user", "agent", "team", "space", "ticket", "repo", "pipeline-template", "workspace"];

/** The name a row recorded for its target (`agents.create` records the agent's name, `spaces.create` the title). */
function recordedName(details: Record<string, unknown>): string | null {
  const name = details["name"] ?? details["title"];
  return typeof name === "string" && name ? name : null;
}

/** A row's target by name: the record's name today, else the name a row of the page recorded for it (a record since
 * deleted: `agents.delete` names it by the row of its `agents.create`), else its kind and the start of its id. */
function TargetName({ target, recorded, names }: { target: string; recorded: string | null; names: Names }) {
  const { kind } = splitRef(target);
  return (
    <>
      {kind && <span className="hint">{RECORD_KINDS[kind]} </span>}
      <RecordName refText={target} names={names} fallback={recorded} />
    </>
  );
}

function AuditLog({ workspaceId }: { workspaceId: string }) {
  const id = useId();
  const [draft, setDraft] = useState<AuditFilter>(NO_FILTER);
  const [filter, setFilter] = useState<AuditFilter>(NO_FILTER);
  const rows = useRead("audit.list", auditArgs(workspaceId, filter));
  const names = useNames(workspaceId, AUDIT_KINDS);
  // Applying (or clearing) the filters reads the log and the names again, even when the filters are the same.
  const reread = () => {
    rows.reload();
    names.reload();
  };
  // Newest first: the latest name each target was recorded under.
  const recorded = new Map<string, string>();
  for (const r of rows.data ?? []) {
    const name = recordedName(r.details);
    if (name && !recorded.has(r.target)) recorded.set(r.target, name);
  }
  const who = new Map<string, string>([
    ...names.list("user"),
    ...names.list("agent").map(([ref, name]): [string, string] => [ref, `${name} (agent)`]),
  ]);
  const set = (key: keyof AuditFilter) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.target.value }));
  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilter(draft);
    reread();
  };
  return (
    <section aria-labelledby="audit-title" className="panel" id="audit">
      <h2 id="audit-title">Audit log</h2>
      <form className="filters" onSubmit={apply} aria-label="Filter the audit log">
        <div className="field">
          <label htmlFor={`${id}-action`}>Action</label>
          <input
            id={`${id}-action`}
            value={draft.action}
            placeholder="spaces.create"
            onChange={set("action")}
            data-shortcut-focus
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-who`}>Principal</label>
          <select id={`${id}-who`} value={draft.principal} onChange={set("principal")}>
            <option value="">Anyone</option>
            {[...who].map(([key, name]) => (
              <option key={key} value={key}>
                {name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-target`}>Target</label>
          <input id={`${id}-target`} value={draft.target} placeholder="space:…" onChange={set("target")} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-door`}>Door</label>
          <select id={`${id}-door`} value={draft.door} onChange={set("door")}>
            <option value="">Any</option>
            <option value="socket">socket (apps and this client)</option>
            <option value="mcp">mcp (MCP clients)</option>
            <option value="none">none (the server's own work)</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-since`}>From</label>
          <input id={`${id}-since`} type="datetime-local" value={draft.since} onChange={set("since")} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-until`}>Until</label>
          <input id={`${id}-until`} type="datetime-local" value={draft.until} onChange={set("until")} />
        </div>
        <div className="filter-buttons">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setDraft(NO_FILTER);
              setFilter(NO_FILTER);
              reread();
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <Refusal error={rows.error} />
      {rows.data === undefined ? (
        !rows.error && <p aria-busy="true">Loading the audit log…</p>
      ) : rows.data.length === 0 ? (
        <p>No audit rows match.</p>
      ) : (
        <>
          <p className="hint" aria-live="polite">
            {rows.data.length === PAGE ? `The newest ${PAGE} rows that match` : `${rows.data.length} rows`}, newest
            first.
          </p>
          <div className="scroll" role="region" aria-label="Audit rows" tabIndex={0}>
            <table className="table audit-table">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Principal</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Door</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {rows.data.map((r) => (
                  <tr key={`${r.target}#${r.seq}`}>
                    <td>
                      <time dateTime={r.at}>{when(r.at)}</time>
                    </td>
                    <td>
                      <RecordName refText={r.principal} names={names} />
                    </td>
                    <td>
                      <code>{r.action}</code>
                    </td>
                    <td>
                      <TargetName
                        target={r.target}
                        recorded={recordedName(r.details) ?? recorded.get(r.target) ?? null}
                        names={names}
                      />
                    </td>
                    <td>{r.door ?? "none"}</td>
                    <td>
                      {Object.keys(r.details).length > 0 && <code className="wrap">{JSON.stringify(r.details)}</code>}
                      <IdDetails
                        items={[
                          ["Principal", r.principal],
                          ["Target", r.target],
                        ]}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

interface EventsFilter {
  types: string;
  since: string;
  until: string;
}

const NO_EVENTS_FILTER: EventsFilter = { types: "", since: "", until: "" };

/** The event types typed comma-separated, or null for every type. */
export function typesOf(text: string): string[] | null {
  const wanted = text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  return wanted.length ? wanted : null;
}

function Events({ workspaceId }: { workspaceId: string }) {
  const id = useId();
  const [draft, setDraft] = useState<EventsFilter>(NO_EVENTS_FILTER);
  const [filter, setFilter] = useState<EventsFilter>(NO_EVENTS_FILTER);
  const types = typesOf(filter.types);
  const since = instant(filter.since);
  const until = instant(filter.until);
  const bad = emptyWindow(draft.since, draft.until);
  const { events, loaded, error } = useWorkspaceEvents(workspaceId, { types, since, until, shown: EVENTS_SHOWN });
  const names = useEventNames(workspaceId, events);
  const set = (key: keyof EventsFilter) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [key]: e.target.value }));
  const apply = (e: FormEvent) => {
    e.preventDefault();
    if (!bad) setFilter(draft);
  };
  const narrowed = types !== null || since !== null || until !== null;
  return (
    <section aria-labelledby="events-title" className="panel" id="events">
      <h2 id="events-title">Domain events</h2>
      <form className="filters" onSubmit={apply} aria-label="Filter the domain events">
        <div className="field grow">
          <label htmlFor={`${id}-types`}>Event types (comma-separated)</label>
          <input
            id={`${id}-types`}
            value={draft.types}
            placeholder="workspace.spaceCreated, workspace.ticketChanged"
            onChange={set("types")}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-since`}>From</label>
          <input id={`${id}-since`} type="datetime-local" step={1} value={draft.since} onChange={set("since")} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-until`}>Until</label>
          <input
            id={`${id}-until`}
            type="datetime-local"
            step={1}
            value={draft.until}
            aria-invalid={bad ? true : undefined}
            aria-describedby={bad ? `${id}-bad` : undefined}
            onChange={set("until")}
          />
        </div>
        <div className="filter-buttons">
          <button type="submit" disabled={bad}>
            Apply filter
          </button>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setDraft(NO_EVENTS_FILTER);
              setFilter(NO_EVENTS_FILTER);
            }}
          >
            Clear
          </button>
        </div>
        {bad && (
          <p className="error" id={`${id}-bad`} role="alert">
            “Until” must be later than “From”.
          </p>
        )}
      </form>
      <Refusal error={error} />
      {!error &&
        (!loaded ? (
          <p aria-busy="true">Loading events…</p>
        ) : events.length === 0 ? (
          <p>
            No events{narrowed ? " match" : " yet"}
            {until === null ? "; new ones appear here as they happen." : "."}
          </p>
        ) : (
          <>
            <p className="hint" aria-live="polite">
              {events.length} event{events.length === 1 ? "" : "s"}
              {narrowed ? " that match" : ""} (the last {EVENTS_SHOWN} at most), newest first
              {until === null ? "; new ones appear as they happen." : "."}
            </p>
            <ol className="list events" aria-label="Domain events, newest first">
              {[...events].reverse().map((e) => (
                <li key={e.seq} data-seq={e.seq} data-type={e.type}>
                  <EventLine event={e} names={names} payload />
                </li>
              ))}
            </ol>
          </>
        ))}
    </section>
  );
}

export default function AuditPage({ workspaceId }: { workspaceId: string }) {
  const { workspace, missing } = useWorkspace(workspaceId);
  const admin = isAdmin(workspace?.role);
  return (
    <div className="ws">
      <WorkspaceHeader workspaceId={workspaceId} workspace={workspace} title="Audit log and events" />
      {missing && <NotAMember />}
      {workspace && (
        <>
          <nav aria-label="Workspace" className="subnav">
            <Link href={workspacePath(workspaceId)}>Workspace home</Link>
            <Link href={workspaceSettingsPath(workspaceId)}>Settings</Link>
          </nav>
          {admin ? (
            <AuditLog workspaceId={workspaceId} />
          ) : (
            <p className="notice">The audit log is for admins and owners; your role is {workspaceRoleLabel(workspace.role).toLowerCase()}.</p>
          )}
          {workspace.role !== "guest" && <Events workspaceId={workspaceId} />}
        </>
      )}
    </div>
  );
}
