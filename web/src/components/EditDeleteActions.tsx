import { ConfirmButton } from "./ConfirmButton";

/** A list row's Edit and Delete buttons: Edit opens the row's editor, Delete asks first (ConfirmButton).
 * `what` names the row for assistive technology ("agent Reviewer", "team Backend"). */
export function EditDeleteActions(props: {
  what: string;
  question: string;
  busy: boolean;
  onEdit(): void;
  onDelete(): void;
}) {
  return (
    <div className="row-actions">
      <button type="button" className="secondary" aria-label={`Edit ${props.what}`} onClick={props.onEdit}>
        Edit
      </button>
      <ConfirmButton
        label="Delete"
        name={`Delete ${props.what}`}
        question={props.question}
        busy={props.busy}
        onConfirm={props.onDelete}
      />
    </div>
  );
}
