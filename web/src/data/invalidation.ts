/** Which cached reads a change makes stale: the one place that says so, for the server's events (the workspace's
 * event watch) and for the writes this client makes. A cached read is keyed `[op, args]` (see `queries.ts`); a rule
 * names the read ops it touches by prefix (`"spaces."` is every read of spaces), and a workspace-scoped change only
 * touches reads of that workspace. Only reads on screen are fetched again at once; the rest when next shown. */
import type { QueryClient, QueryKey } from "@tanstack/react-query";
import { EVENT_TYPES, OPS, type CallOpName, type EventType } from "../generated/ops";

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether `type` is one a part declares (an emitted event's may be anything). */
export function isEventType(type: string): type is EventType {
  return KNOWN_TYPES.has(type);
}

/** Read ops by prefix, for each event type the server publishes (its `type`, as `EVENT_TYPES` lists them). An event
 * type missing here (an agent's streamed turn, a pipeline's task) changes no list a screen caches. */
export const EVENT_READS: { readonly [T in EventType]?: readonly string[] } = {
  "identity.workspaceCreated": ["workspaces."],
  "identity.memberAdded": ["members.", "workspaces."],
  "identity.memberRoleChanged": ["members.", "workspaces."],
  "identity.memberRemoved": ["members.", "workspaces."],
  "workspace.spaceCreated": ["spaces."],
  "workspace.spaceUpdated": ["spaces."],
  "workspace.spaceProvisioningChanged": ["spaces."],
  "workspace.ticketChanged": ["tickets.", "orchestration."],
  "orchestration.changed": ["orchestration.", "tickets."],
  "orchestration.nodeApproved": ["orchestration."],
  "skills.changed": ["skills."],
  "agents.runStarted": ["runs."],
  "agents.runFinished": ["runs.", "orchestration."],
  "pipeline.runFinished": ["pipelines.runs."],
  "chat.userLinked": ["chat.", "members."],
  "chat.userUnlinked": ["chat.", "members."],
  "rigs.closed": ["rig_list", "rig.", "rigs."],
  "rigs.reaped": ["rig_list", "rig.", "rigs."],
  "rigs.controlChanged": ["rig_list", "rig."],
  "rigs.devDomainChanged": ["rig."],
};

/** Reads a write touches beyond its own family (a write `a.b.verb` always touches the reads `a.b.*`). */
const WRITE_ALSO: { readonly [N in CallOpName]?: readonly string[] } = {
  "agents.create": ["teams."],
  "meetings.actionItems.ticket": ["meetings.", "tickets."],
  "agents.update": ["teams."],
  "agents.delete": ["teams."],
  "members.setRole": ["workspaces."],
  "members.remove": ["workspaces."],
  "repos.register": ["worktrees."],
  "repos.remove": ["worktrees."],
  "worktrees.add": ["repos."],
  "worktrees.cleanup": ["repos."],
  "workspaces.create": ["members."],
  "workspaces.delete": ["users.me", "members."],
  "spaces.create": ["guardrails."],
  "devices.revoke": ["users.me"],
  "devices.rename": ["users.me"],
  "server.setWorkspaceCreators": ["server.", "workspaces."],
  "server.deactivateUser": ["server.", "members."],
  "rig.open": ["rig_list"],
  rig_close: ["rig_list"],
  "rig.takeControl": ["rig_list"],
  "rig.releaseControl": ["rig_list"],
  "rig.clipboardGrant": ["rig.clipboardGrants"],
  "rig.clipboardRevoke": ["rig.clipboardGrants"],
  "rigs.setMemoryBudget": ["rigs."],
  "rigs.buildPack": ["rigs."],
  "chat.unlinkUser": ["members."],
  "pipelines.templates.delete": ["pipelines.triggers."],
  "orchestration.editDag": ["tickets."],
  "orchestration.approve": ["tickets."],
  "orchestration.start": ["tickets."],
};

/** Writes whose own family is not what they change: the reads they touch instead (none for a short-lived address
 * minted; an agent's run changes the runs, not the agents). */
const WRITE_ONLY: { readonly [N in CallOpName]?: readonly string[] } = {
  "rig.terminalUrl": [],
  "agents.run": ["runs."],
  "agents.runMany": ["runs."],
};

/** The family of an op: its name without the last part (`pipelines.templates.create` → `pipelines.templates.`). */
export function familyOf(op: string): string {
  const dot = op.lastIndexOf(".");
  return dot < 0 ? op : op.slice(0, dot + 1);
}

/** The read prefixes a write of `op` makes stale. */
export function readsAfterWrite(op: CallOpName): readonly string[] {
  const only = WRITE_ONLY[op];
  if (only) return only;
  return [familyOf(op), ...(WRITE_ALSO[op] ?? [])];
}

/** Whether a cached read (its key) is one of `prefixes` and, when a workspace is named, of that workspace. */
export function touches(key: QueryKey, prefixes: readonly string[], workspaceId: string | null): boolean {
  const [op, args] = key;
  if (typeof op !== "string" || !prefixes.some((p) => op === p || op.startsWith(p))) return false;
  if (workspaceId === null || typeof args !== "object" || args === null) return true;
  const ws = (args as { workspace_id?: unknown }).workspace_id;
  return ws === undefined || ws === workspaceId;
}

function invalidate(queries: QueryClient, prefixes: readonly string[], workspaceId: string | null): Promise<void> {
  if (prefixes.length === 0) return Promise.resolve();
  return queries.invalidateQueries({ predicate: (q) => touches(q.queryKey, prefixes, workspaceId) });
}

/** A domain event of `workspaceId` arrived (another person, an agent or this client changed something). */
export function invalidateAfterEvent(queries: QueryClient, workspaceId: string, event: { type: string }): Promise<void> {
  return invalidate(queries, isEventType(event.type) ? (EVENT_READS[event.type] ?? []) : [], workspaceId);
}

/** This client's call of `op` with `args` succeeded: unless the op only reads, what it changed is stale. */
export function invalidateAfterWrite(queries: QueryClient, op: CallOpName, args: unknown): Promise<void> {
  if (OPS[op].kind === "read") return Promise.resolve();
  return invalidate(queries, readsAfterWrite(op), workspaceOf(args));
}

/** The workspace a call's arguments name, if they name one. */
export function workspaceOf(args: unknown): string | null {
  const ws = typeof args === "object" && args !== null ? (args as { workspace_id?: unknown }).workspace_id : undefined;
  return typeof ws === "string" ? ws : null;
}
