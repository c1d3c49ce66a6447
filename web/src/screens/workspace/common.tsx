/** Small pieces the workspace screens share: the workspace the page is about, a call's refusal, buttons that ask
 * before they act, and the one-shot runner of a change (busy while it runs, the server's words when refused). */
import { useCallback, useState, type ReactNode } from "react";
import type { WorkspaceEntry } from "../../generated/ops";
import { Link } from "../../Link";
import { RpcError } from "../../rpc/errors";
import { useCall } from "../../rpc/hooks";
import { workspacePath } from "../../router";

export const ROLES = ["guest", "member", "admin", "owner"] as const;

/** The signed-in person's entry for the workspace (its name and their role), from `workspaces.list`. */
export function useWorkspace(workspaceId: string): {
  workspace: WorkspaceEntry | undefined;
  missing: boolean;
  error: RpcError | undefined;
} {
  const list = useCall("workspaces.list", {});
  const workspace = list.data?.find((w) => w.id === workspaceId);
  return { workspace, missing: list.data !== undefined && !workspace, error: list.error };
}

export function isAdmin(role: string | undefined): boolean {
  return role === "admin" || role === "owner";
}

export function Refusal({ error }: { error: RpcError | null | undefined }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error.message}
    </p>
  );
}

export interface Action {
  busy: boolean;
  error: RpcError | null;
  /** Runs one change; answers its result, or undefined when it was refused (the refusal is in `error`). */
  run<T>(work: () => Promise<T>): Promise<T | undefined>;
  clear(): void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<RpcError | null>(null);
  const run = useCallback(async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await work();
    } catch (e) {
      setError(e instanceof RpcError ? e : new RpcError("internal", String(e)));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  const clear = useCallback(() => setError(null), []);
  return { busy, error, run, clear };
}

/** A button for a change that cannot be taken back: the first press asks, the second acts. */
export function ConfirmButton(props: {
  label: string;
  /** The accessible name of the first button, naming what it acts on ("Archive Release prep"). */
  name: string;
  question: string;
  busy?: boolean;
  onConfirm(): void;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className="secondary" aria-label={props.name} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        className="danger"
        disabled={props.busy}
        autoFocus
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.label}
      </button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** The breadcrumb and title every workspace screen starts with. */
export function WorkspaceHeader(props: {
  workspaceId: string;
  workspace: WorkspaceEntry | undefined;
  title?: string | undefined;
  children?: ReactNode;
}) {
  const { workspace, workspaceId } = props;
  return (
    <>
      <p className="crumbs">
        <Link href="/">Workspaces</Link>
        {props.title !== undefined && workspace && (
          <>
            {" / "}
            <Link href={workspacePath(workspaceId)}>{workspace.name}</Link>
          </>
        )}
      </p>
      <h1>{props.title ?? workspace?.name ?? "Workspace"}</h1>
      {props.children}
    </>
  );
}

export function NotAMember() {
  return <p role="alert">This workspace does not exist, or you are not one of its members.</p>;
}

export function when(at: string): string {
  return new Date(at).toLocaleString();
}
