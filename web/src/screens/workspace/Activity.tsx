/** The workspace's recent activity, newest first: its domain events as they happen. */
import type { EventView } from "../../generated/ops";
import type { RpcError } from "../../rpc/errors";
import { when } from "./common";

export function Activity({ events, loaded, error }: { events: EventView[]; loaded: boolean; error: RpcError | null }) {
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
            <li key={e.seq} data-seq={e.seq}>
              <code>{e.type}</code>
              <time dateTime={e.occurredAt}>{when(e.occurredAt)}</time>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
