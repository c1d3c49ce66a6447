/** One domain event as a person reads it: what happened in words ("Member added"), who and what it was about by
 * name ("Meg · Member"), and when; the wire name and the ids in a disclosure (`IdDetails`), the payload too where
 * the screen shows it (the events page). */
import { useEffect, useRef } from "react";
import type { EventView } from "../../generated/ops";
import { IdDetails } from "../../IdDetails";
import { eventLabel, workspaceRoleLabel, words } from "../../labels";
import { when } from "../../components/time";
import { displayName, useNames, type NameKind, type Names } from "./names";
import { statusLabel } from "./tickets";

/** The payload fields that name a record, and the kind of record each names. */
const REF_KEYS: ReadonlyArray<readonly [string, NameKind]> = [
  ["userId", "user"],
  ["ownerId", "user"],
  ["agentId", "agent"],
  ["teamId", "team"],
  ["ticketId", "ticket"],
  ["spaceId", "space"],
  ["templateId", "pipeline-template"],
];

/** The kinds an event list looks up to name what its events are about. */
const EVENT_KINDS: NameKind[] = ["user", "agent", "team", "ticket", "space", "pipeline-template"];

/** An agent run's or a pipeline task's outcome. */
const OUTCOMES: Readonly<Record<string, string>> = {
  ok: "Finished",
  completed: "Completed",
  failed: "Failed",
  interrupted: "Interrupted",
  turnLimit: "Stopped at its turn limit",
};

const text = (v: unknown): string | null => (typeof v === "string" && v ? v : null);

/** A field of an object, by name. This page lists every kind of event, emitted ones too, and reads the fields
 * they share (`userId`, `spaceId`, `status`...) by name rather than narrowing each event by its type. */
function at(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? new Map(Object.entries(value)).get(key) : undefined;
}

/** The references an event's payload carries, as `[what, <kind>:<id>]` (for its ids disclosure). */
export function eventRefs(event: EventView): Array<[string, string]> {
  return REF_KEYS.flatMap(([key, kind]): Array<[string, string]> => {
    const id = text(at(event.payload, key));
    return id ? [[words(key.replace(/Id$/, "")), `${kind}:${id}`]] : [];
  });
}

/** The names of what a list of events is about. They are looked up again only when an event names a record the
 * last lookup did not hold (a new space, a new member), not at every event (a run streams many). */
export function useEventNames(workspaceId: string, events: readonly EventView[]): Names {
  const names = useNames(workspaceId, EVENT_KINDS);
  const asked = useRef(new Set<string>());
  const { loaded } = names;
  useEffect(() => {
    if (!loaded) return;
    const fresh = events.flatMap((e) => eventRefs(e).map(([, ref]) => ref)).filter((ref) => !asked.current.has(ref));
    for (const ref of fresh) asked.current.add(ref);
    if (fresh.some((ref) => names.of(ref) === null)) names.reload();
    // `names` is new at every render; what matters is whether it has loaded and which events there are.
  }, [events, loaded]);
  return names;
}

/** Who and what an event is about, by name, and the state it reports in words. */
export function eventSubject(event: EventView, names: Names): string {
  const p = (key: string): unknown => at(event.payload, key);
  const parts: string[] = [];
  const name = text(p("name"));
  if (name) parts.push(name); // a workspace's own name, as it was created
  for (const [key, kind] of REF_KEYS) {
    const id = text(p(key));
    if (!id) continue;
    // A space's title travels with its events: the name it had then, when it is not in the list (hidden, gone).
    const recorded = kind === "space" ? text(p("title")) : null;
    parts.push(displayName(`${kind}:${id}`, names, recorded));
  }
  const author = text(at(at(p("message"), "author"), "name"));
  if (author) parts.unshift(author);
  const oldRole = text(p("oldRole"));
  const newRole = text(p("newRole"));
  if (oldRole && newRole) parts.push(`${workspaceRoleLabel(oldRole)} → ${workspaceRoleLabel(newRole)}`);
  const role = text(p("role"));
  if (role) parts.push(workspaceRoleLabel(role));
  const status = text(p("status"));
  if (status) parts.push(event.type === "workspace.ticketChanged" ? statusLabel(status) : words(status));
  const outcome = text(p("outcome"));
  if (outcome) parts.push(OUTCOMES[outcome] ?? words(outcome));
  for (const key of ["state", "change"]) {
    const v = text(p(key));
    if (v) parts.push(words(v));
  }
  return parts.join(" · ");
}

export function EventLine({ event, names, payload = false }: { event: EventView; names: Names; payload?: boolean }) {
  const label = eventLabel(event.type);
  const subject = eventSubject(event, names);
  return (
    <>
      <div className="row-main">
        <span className="event-label" title={event.type}>
          {label}
        </span>
        {subject && <span className="event-subject">{subject}</span>}
        <time dateTime={event.occurredAt}>{when(event.occurredAt)}</time>
      </div>
      <IdDetails label="Details" items={[["Event type", event.type], ["Event number", String(event.seq)], ...eventRefs(event)]} />
      {payload && (
        <details>
          <summary>Payload</summary>
          <pre>{JSON.stringify(event.payload, null, 2)}</pre>
        </details>
      )}
    </>
  );
}
