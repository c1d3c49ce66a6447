/** Run and step statuses (CONTRACTS.md section 5) as the screens show them, and the step-change events of
 * `pipelines.runs.watch` (event frames are not typed by the registry, so they are checked here). */
import type { RunDetail, StepDetail } from "../../generated/ops";

export type RunStatus = RunDetail["status"];
export type StepStatus = StepDetail["status"];

export const FINISHED_RUN: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);
export const SETTLED_STEP: ReadonlySet<string> = new Set(["completed", "failed", "skipped", "timedOut", "cancelled"]);

/** What a status is called on screen (`timedOut` reads as two words). */
export function statusText(status: string): string {
  return status === "timedOut" ? "timed out" : status;
}

/** The colour family of a status, shared by the canvas and the badges (CSS `data-status` and canvas colours). */
export type Tone = "idle" | "busy" | "wait" | "good" | "bad" | "off";

export function toneOf(status: string | undefined): Tone {
  switch (status) {
    case "running":
      return "busy";
    case "suspended":
      return "wait";
    case "completed":
      return "good";
    case "failed":
    case "timedOut":
      return "bad";
    case "skipped":
    case "cancelled":
      return "off";
    default:
      return "idle";
  }
}

export interface StepChange {
  stepId: string;
  status: StepStatus;
  attempts: number;
  error: string | null;
}

export interface StepsChanged {
  runId: string;
  status: RunStatus;
  steps: StepChange[];
}

/** A run with the changes of one event applied (the rest of each step's detail comes with the next fetch). */
export function applyChanges(run: RunDetail, event: StepsChanged): RunDetail {
  if (event.runId !== run.runId) return run;
  const changed = new Map(event.steps.map((s) => [s.stepId, s]));
  const known = new Set(run.steps.map((s) => s.stepId));
  const steps = run.steps.map((s) => {
    const c = changed.get(s.stepId);
    return c ? { ...s, status: c.status, attempts: c.attempts, error: c.error } : s;
  });
  for (const c of event.steps) {
    if (known.has(c.stepId)) continue;
    steps.push({
      ...c,
      label: c.stepId,
      routeKey: null,
      startedAt: null,
      finishedAt: null,
      durationMs: null,
      retryAt: null,
      suspendedOn: null,
      deadline: null,
      progress: null,
      approval: null,
    });
  }
  return { ...run, status: event.status, steps };
}

/** How far a run got: steps settled out of the steps of its template. */
export function progressOf(run: RunDetail, total: number): { done: number; total: number } {
  const done = run.steps.filter((s) => SETTLED_STEP.has(s.status)).length;
  return { done, total: Math.max(total, run.steps.length) };
}
