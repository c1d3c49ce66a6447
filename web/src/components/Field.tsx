/** Form controls with their label, hint and the server's error for them. */
import { useId, type ReactNode } from "react";

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
