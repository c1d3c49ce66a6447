import { useState } from "react";

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
