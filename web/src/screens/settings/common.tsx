/** Pieces the settings screens share: a call whose result a screen shows and reloads after a change, a labelled
 * field that shows the server's error for it, a copy button, and the "busy / error / done" state of an action. */
import { useCallback, useEffect, useId, useState, type ReactNode } from "react";
import type { CallOpName } from "../../generated/ops";
import type { ArgsOf, ResultOf } from "../../rpc/client";
import { RpcError } from "../../rpc/errors";
import { useConnectionEpoch, useRpc } from "../../rpc/hooks";

export function asRpcError(error: unknown): RpcError {
  return error instanceof RpcError ? error : new RpcError("internal", String(error));
}

export interface Loaded<N extends CallOpName> {
  data: ResultOf<N> | undefined;
  error: RpcError | undefined;
  reload(): void;
  /** Replace the shown result with one a mutation answered (it is the fresh state already). */
  set(data: ResultOf<N>): void;
}

/** Like `useCall`, plus `reload` and `set`: a settings screen shows what the server holds after each change. */
export function useLoaded<N extends CallOpName>(op: N, args: ArgsOf<N>): Loaded<N> {
  const client = useRpc();
  const epoch = useConnectionEpoch();
  const key = JSON.stringify(args);
  const [version, setVersion] = useState(0);
  const [data, setData] = useState<ResultOf<N> | undefined>(undefined);
  const [error, setError] = useState<RpcError | undefined>(undefined);
  useEffect(() => {
    let live = true;
    const call = client.call.bind(client) as (op: N, args: ArgsOf<N>) => Promise<ResultOf<N>>;
    call(op, JSON.parse(key) as ArgsOf<N>).then(
      (result) => {
        if (!live) return;
        setData(result);
        setError(undefined);
      },
      (e: unknown) => {
        const err = asRpcError(e);
        // A call cut off by a lost connection is made again once the socket is back (the epoch changes).
        if (live && err.code !== "unavailable") setError(err);
      },
    );
    return () => {
      live = false;
    };
  }, [client, op, key, epoch, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  const set = useCallback((value: ResultOf<N>) => {
    setData(value);
    setError(undefined);
  }, []);
  return { data, error, reload, set };
}

/** An action's state: running, the error it ended with, or what it reported when it worked. */
export interface Action {
  busy: boolean;
  error: RpcError | null;
  done: string | null;
  run(work: () => Promise<string | null>): Promise<void>;
  clear(): void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<RpcError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const run = useCallback(async (work: () => Promise<string | null>) => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      setDone(await work());
    } catch (e) {
      setError(asRpcError(e));
    } finally {
      setBusy(false);
    }
  }, []);
  const clear = useCallback(() => {
    setError(null);
    setDone(null);
  }, []);
  return { busy, error, done, run, clear };
}

/** Where an action tells how it went: a polite status when it worked, an alert when it did not. */
export function Outcome({ action, fieldShown = false }: { action: Action; fieldShown?: boolean }) {
  return (
    <>
      <p className="saved" role="status">
        {action.done}
      </p>
      {action.error && !fieldShown && (
        <p className="error" role="alert">
          {action.error.message}
        </p>
      )}
    </>
  );
}

/** A label, the control `children(id, describedBy)` renders, a hint, and the server's error for this field. */
export function Field(props: {
  label: string;
  hint?: ReactNode;
  error?: string | null | undefined;
  children(id: string, describedBy: string | undefined): ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [props.hint ? hintId : "", props.error ? errorId : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, describedBy)}
      {props.hint && (
        <p className="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {props.error && (
        <p className="error" id={errorId} role="alert">
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A checkbox with its label beside it. */
export function Switch(props: { label: string; checked: boolean; hint?: string; onChange(checked: boolean): void }) {
  const id = useId();
  return (
    <div className="switch">
      <input
        id={id}
        type="checkbox"
        checked={props.checked}
        onChange={(e) => props.onChange(e.target.checked)}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
      />
      <label htmlFor={id}>{props.label}</label>
      {props.hint && (
        <p className="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** Copies `text`; says whether it worked (the clipboard API is absent outside secure contexts). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState<string | null>(null);
  const copy = () => {
    const clipboard = typeof navigator !== "undefined" ? navigator.clipboard : undefined;
    if (!clipboard) {
      setSaid("Copying needs a secure page (https); select the text and copy it instead.");
      return;
    }
    clipboard.writeText(text).then(
      () => setSaid("Copied."),
      () => setSaid("The browser refused to copy; select the text and copy it instead."),
    );
  };
  return (
    <span className="copy">
      <button type="button" className="secondary" onClick={copy}>
        {label}
      </button>
      <span role="status">{said}</span>
    </span>
  );
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "never";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
