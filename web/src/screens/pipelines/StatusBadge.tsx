import { statusText, toneOf } from "./status";

/** A run's or a step's status as a badge; its colour family is `data-tone` (pipelines.css). */
export function StatusBadge({ status }: { status: string }) {
  return (
    <span className="pl-status" data-tone={toneOf(status)}>
      {statusText(status)}
    </span>
  );
}
