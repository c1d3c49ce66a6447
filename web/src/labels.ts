/** Words for people where the wire has names for programs: domain event types (`identity.workspaceCreated` →
 * "Workspace created"), roles (`chiefExecutive` → "Chief executive"), team dispatch modes, browser engines
 * (`engine-a` → "Chromium"), and the kinds of record an id names (`agent:<id>`). The wire values stay what they
 * are (filters, URLs and logs use them); only what a person reads changes.
 *
 * The event labels are keyed by the `EVENT_TYPES` the server declares (generated into `generated/ops.ts`), so a
 * type the server adds without a label here fails the type check and `test/labels.test.ts`. */
import type { EventType } from "./generated/ops";

export const EVENT_LABELS: Readonly<Record<EventType, string>> = {
  "agents.reasoningFinished": "Agent finished reasoning",
  "agents.reasoningStarted": "Agent started reasoning",
  "agents.runFinished": "Agent run finished",
  "agents.runStarted": "Agent run started",
  "agents.textDelta": "Agent wrote",
  "agents.toolCallFinished": "Agent tool call finished",
  "agents.toolCallStarted": "Agent tool call started",
  "agents.turnFinished": "Agent turn finished",
  "agents.turnStarted": "Agent turn started",
  "agents.turnWaiting": "Agent run waiting to start",
  "chat.userLinked": "Chat account linked",
  "chat.userUnlinked": "Chat account unlinked",
  "forge.pullRequest": "Pull request opened or pushed to",
  "identity.memberAdded": "Member added",
  "identity.memberRemoved": "Member removed",
  "identity.memberRoleChanged": "Member's role changed",
  "identity.workspaceCreated": "Workspace created",
  "orchestration.changed": "Orchestration moved on",
  "orchestration.nodeApproved": "Sub-ticket approved",
  "pipeline.runFinished": "Pipeline run finished",
  "pipeline.taskFinished": "Pipeline task finished",
  "rigs.closed": "Rig closed",
  "rigs.controlChanged": "Rig control changed",
  "rigs.devDomainChanged": "Dev domain changed",
  "rigs.reaped": "Rig closed for idleness",
  "skills.changed": "Skill installed, scanned or removed",
  "workspace.messagePosted": "Message posted",
  "workspace.spaceCreated": "Space created",
  "workspace.spaceProvisioningChanged": "Space setup progressed",
  "workspace.spaceUpdated": "Space renamed or archived",
  "workspace.ticketChanged": "Ticket changed",
};

/** `camelCase` and `kebab-case` words as a sentence: `reviewApproved` → "Review approved". */
export function words(name: string): string {
  const spaced = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[-_.]+/g, " ")
    .trim()
    .toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** What a person reads for an event type; a type of a workspace's own (emitted by a pipeline, `review.approved`)
 * reads as its words: "Review: approved". */
export function eventLabel(type: string): string {
  const known = (EVENT_LABELS as Readonly<Record<string, string>>)[type];
  if (known !== undefined) return known;
  const [namespace, ...rest] = type.split(".");
  return rest.length ? `${words(namespace ?? "")}: ${words(rest.join(" ")).toLowerCase()}` : words(type);
}

const AGENT_ROLES: Readonly<Record<string, string>> = {
  chiefExecutive: "Chief executive",
  member: "Member",
};

/** An agent's role (`agents.create`'s `role`). */
export function agentRoleLabel(role: string): string {
  return AGENT_ROLES[role] ?? words(role);
}

const WORKSPACE_ROLES: Readonly<Record<string, string>> = {
  guest: "Guest",
  member: "Member",
  admin: "Admin",
  owner: "Owner",
};

/** A person's role in a workspace. */
export function workspaceRoleLabel(role: string): string {
  return WORKSPACE_ROLES[role] ?? words(role);
}

export const DISPATCH_MODES: ReadonlyArray<readonly [string, string]> = [
  ["allParallel", "Every member at once"],
  ["manager", "The leader, who delegates"],
];

/** How a team is dispatched (`allParallel`, `manager`). */
export function dispatchModeLabel(mode: string): string {
  return DISPATCH_MODES.find(([m]) => m === mode)?.[1] ?? words(mode);
}

const SPACE_KINDS: Readonly<Record<string, string>> = {
  standard: "Conversation",
  chatprovider: "Chat bridge thread",
};

/** A space's kind (`standard`, `chatprovider`). */
export function spaceKindLabel(kind: string): string {
  return SPACE_KINDS[kind] ?? words(kind);
}

const SPACE_MODES: Readonly<Record<string, string>> = {
  chat: "Chat",
  review: "Review",
  plan: "Plan",
};

/** A space's mode (`chat`, `review`, `plan`). */
export function spaceModeLabel(mode: string): string {
  return SPACE_MODES[mode] ?? words(mode);
}

const ENGINES: Readonly<Record<string, string>> = {
  "engine-a": "Chromium",
  "engine-b": "Firefox",
  "engine-c": "WebKit",
};

/** The browser a browser rig's engine drives (`engine-a` → "Chromium"). */
export function engineLabel(engine: string): string {
  return ENGINES[engine] ?? engine;
}

/** The kinds of record an audit row, an event or a ticket names as `<kind>:<id>`, as a word. */
export const RECORD_KINDS: Readonly<Record<string, string>> = {
  user: "person",
  agent: "agent",
  team: "team",
  space: "space",
  ticket: "ticket",
  repo: "repository",
  worktree: "worktree",
  workspace: "workspace",
  rig: "rig",
  run: "agent run",
  "pipeline-template": "pipeline template",
  "pipeline-run": "pipeline run",
  "pipeline-trigger": "pipeline trigger",
  chat: "chat bridge",
  guardrails: "guardrails",
  setting: "setting",
  event: "event type",
  "oauth-client": "OAuth client",
  op: "op",
};

/** `agent:1b2c…` → `{ kind: "agent", id: "1b2c…" }`; a reference without a known kind is all id. */
export function splitRef(ref: string): { kind: string | null; id: string } {
  const at = ref.indexOf(":");
  if (at > 0) {
    const kind = ref.slice(0, at);
    if (kind in RECORD_KINDS) return { kind, id: ref.slice(at + 1) };
  }
  return { kind: null, id: ref };
}
