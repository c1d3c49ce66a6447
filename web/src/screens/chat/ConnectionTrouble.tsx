/** What is wrong with a connection that cannot get through (`chat.status`): its last error, in the network's or
 * the provider's words, with when, and when it tries next (or that it is trying now). Shown under the status
 * line while the connection is not up; a restarted server shows the error from before until its first try answers. */
import type { ChatStatus } from "../../generated/ops";

function clock(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toLocaleTimeString();
}

export function ConnectionTrouble({ status }: { status: ChatStatus }) {
  if (status.state === "connected" || status.state === "disconnected") return null;
  const failure = status.lastError ?? null;
  // In `error` the status line already says the error; the last failure is that same sentence.
  const repeated = status.state === "error" && failure?.message === status.error;
  return (
    <>
      {failure && !repeated && (
        <p>
          Last error at <time dateTime={failure.at}>{clock(failure.at)}</time>:{" "}
          <span className="chat-error-text">{failure.message}</span>
        </p>
      )}
      {status.state === "connecting" &&
        (status.nextRetryAt ? (
          <p className="hint">
            Next attempt at <time dateTime={status.nextRetryAt}>{clock(status.nextRetryAt)}</time>.
          </p>
        ) : (
          failure && <p className="hint">Trying again now.</p>
        ))}
    </>
  );
}
