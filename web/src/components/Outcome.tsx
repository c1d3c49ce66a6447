/** How a change went, in one place on every screen: the server's refusal as an alert, what it reported as a
 * polite status (see `data/mutations.ts` for the change's state). */
import type { Action } from "../data/mutations";
import type { RpcError } from "../rpc/errors";

/** A call's refusal, when there is one. */
export function Refusal({ error }: { error: RpcError | null | undefined }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error.message}
    </p>
  );
}

/** A status that says what the change reported, and its refusal unless a field shows it already. */
export function Outcome({ action, fieldShown = false }: { action: Action; fieldShown?: boolean }) {
  return (
    <>
      <p className="saved" role="status">
        {action.done}
      </p>
      {!fieldShown && <Refusal error={action.error} />}
    </>
  );
}
