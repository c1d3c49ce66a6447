/** The workspace's recent activity, newest first: its domain events as they happen, in words ("Member added"),
 * naming who and what they were about; each event's type and ids in its details. */
import type { EventView } from "../../generated/ops";
import type { RpcError } from "../../rpc/errors";
import { EventLine, useEventNames } from "./eventLine";

export function Activity({ workspaceId, events, loaded, error }: {
  workspaceId: string;
  events: EventView[];
  loaded: boolean;
  error: RpcError | null;
}) {
  const names = useEventNames(workspaceId, events);
  return (
    <section aria-labelledby="activity-title" className="panel">
      <h2 id="activity-title">Activity</h2>
      {error ? (
        <p className="error" role="alert">
          {error.message}
        </p>
      ) : !loaded ? (
        <p aria-busy="true">Loading activity…</p>
      ) : events.length === 0 ? (
        <p>Nothing has happened here yet.</p>
      ) : (
        <ol className="list activity" aria-label="Recent events, newest first">
          {[...events].reverse().map((e) => (
            <li key={e.seq} data-seq={e.seq} data-type={e.type}>
              <EventLine event={e} names={names} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
