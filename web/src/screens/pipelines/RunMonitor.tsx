/** One run (`/workspaces/<id>/pipelines/runs/<runId>`): its graph with live step statuses (`pipelines.runs.watch`),
 * how far it got, each step's attempts, time, error, output and what a suspended step waits for; cancelling it,
 * deciding at a gate that waits for a person's event or telling an approval gate's approver the person's decision,
 * and resuming a step suspended on an event by sending it.
 *
 * A watch event carries only statuses, attempts and errors, which the canvas shows at once; the rest of a step's
 * detail (timings, suspension, output) is fetched again a moment later. */
import { useEffect, useId, useMemo, useRef, useState } from "react";
import type { RunDetail, StepDetail } from "../../generated/ops";
import { Link } from "../../Link";
import { RpcError } from "../../rpc/errors";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { useWatch } from "../../data/watch";
import { useWorkspace } from "../../data/workspaces";
import { navigate, pipelineRunPath, pipelinesPath, workspacePath } from "../../router";
import { ApprovalGate } from "./ApprovalGate";
import { graphOf } from "./graph";
import { GraphCanvas, type NodeState } from "./GraphCanvas";
import { StatusBadge } from "./StatusBadge";
import { applyChanges, FINISHED_RUN, progressOf, statusText } from "./status";
import "./pipelines.css";
import { parsePayload } from "./payload";

const REFETCH_AFTER_MS = 250;

function useRun(workspaceId: string, runId: string): { run: RunDetail | null; error: RpcError | null } {
  const args = { workspace_id: workspaceId, runId };
  const read = useRead("pipelines.runs.get", args);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(
    () => () => {
      if (timer.current !== null) clearTimeout(timer.current);
      timer.current = null;
    },
    [workspaceId, runId],
  );
  const { reload } = read;
  const watch = useWatch("pipelines.runs.watch", args, {
    onEvent: (event) => {
      // The canvas shows the statuses at once; the rest of the steps' detail is read again a moment later.
      read.update((old) => (old && old.runId === event.runId ? applyChanges(old, event) : old));
      if (timer.current !== null) return;
      timer.current = setTimeout(() => {
        timer.current = null;
        reload();
      }, REFETCH_AFTER_MS);
    },
  });
  // Another run's page shows blank until its own detail arrives (not the last run's, kept while loading).
  const run = read.data?.runId === runId ? read.data : null;
  return { run, error: read.error ?? watch.error };
}

type Obj = Record<string, unknown>;

function stepDefs(run: RunDetail): Map<string, Obj> {
  const steps = Array.isArray(run.template["steps"]) ? (run.template["steps"] as unknown[]) : [];
  const out = new Map<string, Obj>();
  for (const s of steps) {
    if (typeof s === "object" && s !== null && typeof (s as Obj)["id"] === "string") out.set((s as Obj)["id"] as string, s as Obj);
  }
  return out;
}

function outputOf(run: RunDetail, def: Obj | undefined): { key: string; value: unknown } | null {
  const config = def && typeof def["config"] === "object" && def["config"] !== null ? (def["config"] as Obj) : {};
  const key = config["outputKey"];
  if (typeof key !== "string" || !(key in run.state)) return null;
  return { key, value: run.state[key] };
}

function show(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** A value as the monitor shows it: a box that scrolls when the value is long (or the screen narrow), so it takes
 * the keyboard's focus and is named, for those who scroll it with the arrow keys. */
function Shown({ label, value }: { label: string; value: unknown }) {
  return (
    <pre tabIndex={0} role="region" aria-label={label}>
      {show(value)}
    </pre>
  );
}

/** A step's progress as shown in its row: an approval gate's contract is in the Waiting panel instead, and what a
 * shell step waits for before its script starts (`waiting`, `step` of `steps`) has a line of its own. */
function otherProgress(progress: Record<string, unknown>): Record<string, unknown> | null {
  const { approval: _shown, waiting: _said, step: _step, steps: _steps, ...rest } = progress;
  return Object.keys(rest).length > 0 ? rest : null;
}

/** A shell step waiting before its script starts: the terminal image's first build, the enclosure's boot. */
function StepWait({ progress }: { progress: Record<string, unknown> }) {
  const text = progress["waiting"];
  if (typeof text !== "string") return null;
  const step = typeof progress["step"] === "number" ? progress["step"] : 0;
  const steps = typeof progress["steps"] === "number" ? progress["steps"] : 0;
  return (
    <p role="status">
      Waiting: {text}{" "}
      <progress
        aria-label="Waiting before the script starts"
        max={steps > 0 ? steps : undefined}
        value={steps > 0 ? step : undefined}
      />
    </p>
  );
}

function duration(ms: number | null): string {
  if (ms === null) return "";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A step suspended on a domain event: approve or reject (the event with a decision), or send it with a payload. */
function EventGate(props: { workspaceId: string; run: RunDetail; step: StepDetail; eventType: string; onSent(): void }) {
  const write = useWrite();
  const action = useAction();
  const ids = useId();
  const [reason, setReason] = useState("");
  const [payload, setPayload] = useState("{}");
  const { busy } = action;
  const [invalid, setInvalid] = useState<string | null>(null);
  const problem = invalid ?? action.error?.message ?? null;
  const send = async (body: Record<string, unknown>) => {
    setInvalid(null);
    const args = { workspace_id: props.workspaceId, eventType: props.eventType, payload: body };
    if ((await action.run(() => write("pipelines.emit", args))) !== undefined) props.onSent();
  };
  const decide = (decision: "approved" | "rejected") =>
    send({ decision, reason, runId: props.run.runId, stepId: props.step.stepId });
  const sendPayload = () => {
    const parsed = parsePayload(payload);
    if ("problem" in parsed) {
      action.clear();
      setInvalid(parsed.problem);
      return;
    }
    void send(parsed.value);
  };
  return (
    <div className="gate" role="group" aria-labelledby={`${ids}-what`}>
      <p id={`${ids}-what`}>
        <strong>{props.step.label}</strong> waits for the event <code>{props.eventType}</code>
        {props.step.deadline ? (
          <>
            {" "}
            (times out {new Date(props.step.deadline).toLocaleString()})
          </>
        ) : null}
        .
      </p>
      <p className="hint-inline">
        Approve and Reject send this event with your decision; it resumes every step waiting for it whose match the
        event meets, in any run.
      </p>
      <label htmlFor={`${ids}-reason`}>Reason (optional)</label>
      <input id={`${ids}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} />
      <div className="row actions">
        <button type="button" disabled={busy} onClick={() => void decide("approved")}>
          Approve
        </button>
        <button type="button" className="danger" disabled={busy} onClick={() => void decide("rejected")}>
          Reject
        </button>
      </div>
      <details>
        <summary>Send the event with a payload of your own</summary>
        <label htmlFor={`${ids}-payload`}>Payload of {props.eventType} (JSON object)</label>
        <textarea
          id={`${ids}-payload`}
          className="payload"
          value={payload}
          spellCheck={false}
          onChange={(e) => setPayload(e.target.value)}
        />
        <button type="button" className="secondary" disabled={busy} onClick={sendPayload}>
          Send {props.eventType}
        </button>
      </details>
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
    </div>
  );
}

function Waiting(props: { workspaceId: string; run: RunDetail; step: StepDetail; body: string | null; onSent(): void }) {
  const on = props.step.suspendedOn;
  if (props.step.approval) {
    return <ApprovalGate workspaceId={props.workspaceId} step={props.step} approval={props.step.approval} onSent={props.onSent} />;
  }
  if (on?.eventType) {
    return <EventGate workspaceId={props.workspaceId} run={props.run} step={props.step} eventType={on.eventType} onSent={props.onSent} />;
  }
  const tasks = on?.taskIds ?? [];
  return (
    <div className="gate">
      <p>
        <strong>{props.step.label}</strong> waits for {tasks.length === 1 ? "the task" : "the tasks"}{" "}
        {tasks.map((t, i) => (
          <span key={t}>
            {i > 0 && ", "}
            <code>{t}</code>
          </span>
        ))}{" "}
        to finish.
        {props.body === "approval.gate" &&
          " This approval gate is decided by its approver agent, which answers with submit_output in the gate's space."}
      </p>
    </div>
  );
}

export function RunMonitor({ workspaceId, runId }: { workspaceId: string; runId: string }) {
  const write = useWrite();
  const { workspace } = useWorkspace(workspaceId);
  const { run, error } = useRun(workspaceId, runId);
  const [selected, setSelected] = useState<string | null>(null);
  const action = useAction();
  const acting = action.busy;
  const failure = action.error?.message ?? null;
  const [notice, setNotice] = useState<string | null>(null);

  const graph = useMemo(() => graphOf(run?.template), [run?.template]);
  const states = useMemo(() => {
    const m = new Map<string, NodeState>();
    for (const s of run?.steps ?? []) m.set(s.stepId, { status: s.status, attempts: s.attempts });
    return m;
  }, [run?.steps]);
  const defs = useMemo(() => (run ? stepDefs(run) : new Map<string, Obj>()), [run]);

  useEffect(() => {
    if (selected) document.getElementById(`step-${selected}`)?.scrollIntoView({ block: "nearest" });
  }, [selected]);

  const act = (what: () => Promise<unknown>) => action.run(what);
  const cancel = () =>
    act(async () => {
      await write("pipelines.runs.cancel", { workspace_id: workspaceId, runId });
      setNotice("The run was cancelled."); // the write marks the run stale: it is read again
    });
  const again = () =>
    act(async () => {
      if (!run) return;
      const started = await write("pipelines.runs.start", {
        workspace_id: workspaceId,
        templateId: run.templateId,
        payload: run.payload,
        dryRun: run.dryRun,
      });
      navigate(pipelineRunPath(workspaceId, started.runId));
    });

  const crumbs = (
    <p className="crumbs">
      <Link href="/">Workspaces</Link> / <Link href={workspacePath(workspaceId)}>{workspace?.name ?? "Workspace"}</Link> /{" "}
      <Link href={pipelinesPath(workspaceId)}>Pipelines</Link>
    </p>
  );
  if (!run) {
    return (
      <div className="pipelines">
        {crumbs}
        <h1>Run {runId.slice(0, 8)}</h1>
        {error ? (
          <p className="error" role="alert">
            {error.message}
          </p>
        ) : (
          <p aria-busy="true">Loading the run…</p>
        )}
      </div>
    );
  }

  const finished = FINISHED_RUN.has(run.status);
  const { done, total } = progressOf(run, graph.nodes.length);
  const suspended = run.steps.filter((s) => s.status === "suspended");
  const name = typeof run.template["name"] === "string" && run.template["name"] ? run.template["name"] : run.templateId;
  return (
    <div className="pipelines">
      {crumbs}
      <div className="row">
        <h1>
          {name} <span className="hint-inline">run {run.runId.slice(0, 8)}</span>
        </h1>
        <StatusBadge status={run.status} />
      </div>
      <p className="hint">
        Started {new Date(run.createdAt).toLocaleString()} by a {run.trigger.kind} trigger
        {run.dryRun ? " (dry run)" : ""}
        {run.finishedAt ? `; ended ${new Date(run.finishedAt).toLocaleString()}` : ""}.
        {run.parentRunId && (
          <>
            {" "}
            Child of <Link href={pipelineRunPath(workspaceId, run.parentRunId)}>run {run.parentRunId.slice(0, 8)}</Link>.
          </>
        )}
      </p>
      <div className="row progress-row">
        <label htmlFor="run-progress">
          {done} of {total} steps settled
        </label>
        <progress id="run-progress" max={total || 1} value={done} />
        <span role="status" className="sr-only">
          Run {statusText(run.status)}
        </span>
      </div>
      {run.error && (
        <p className="error" role="alert">
          {run.error}
        </p>
      )}
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {notice && <p className="hint">{notice}</p>}
      <div className="row actions">
        {!finished && (
          <button type="button" className="danger" disabled={acting} onClick={() => void cancel()}>
            Cancel run
          </button>
        )}
        <button type="button" className="secondary" disabled={acting} onClick={() => void again()}>
          Run again with the same payload
        </button>
      </div>

      {suspended.length > 0 && (
        <section aria-labelledby="waiting-title" className="card">
          <h2 id="waiting-title">Waiting</h2>
          {suspended.map((s) => {
            const body = defs.get(s.stepId)?.["body"];
            return (
              <Waiting
                key={s.stepId}
                workspaceId={workspaceId}
                run={run}
                step={s}
                body={typeof body === "string" ? body : null}
                onSent={() => setNotice(`Sent; ${s.label} resumes when the engine takes the event.`)}
              />
            );
          })}
        </section>
      )}

      <section aria-labelledby="graph-title">
        <h2 id="graph-title">Graph</h2>
        <GraphCanvas graph={graph} states={states} selected={selected} onSelect={setSelected} title="Pipeline run graph" />
      </section>

      <section aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        <div className="table-scroll">
          <table className="steps">
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Time</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {run.steps.map((s) => {
                const def = defs.get(s.stepId);
                const out = outputOf(run, def);
                return (
                  <tr
                    key={s.stepId}
                    id={`step-${s.stepId}`}
                    className={selected === s.stepId ? "selected" : undefined}
                    data-status={s.status}
                  >
                    <th scope="row">
                      <button type="button" className="linkish" onClick={() => setSelected(s.stepId)}>
                        {s.label}
                      </button>
                      <div className="hint-inline">
                        {typeof def?.["kind"] === "string" ? def["kind"] : "step"}
                        {typeof def?.["body"] === "string" ? ` · ${def["body"]}` : ""}
                        {s.routeKey ? ` · route ${s.routeKey}` : ""}
                      </div>
                    </th>
                    <td>
                      <StatusBadge status={s.status} />
                    </td>
                    <td>{s.attempts}</td>
                    <td>{duration(s.durationMs)}</td>
                    <td className="details">
                      {s.error && <p className="error">{s.error}</p>}
                      {s.retryAt && s.status !== "completed" && (
                        <p>Next attempt {new Date(s.retryAt).toLocaleTimeString()}</p>
                      )}
                      {s.suspendedOn?.eventType && (
                        <p>
                          Waits for event <code>{s.suspendedOn.eventType}</code>
                        </p>
                      )}
                      {s.suspendedOn && s.suspendedOn.taskIds.length > 0 && (
                        <p>
                          Waits for tasks <code>{s.suspendedOn.taskIds.join(", ")}</code>
                        </p>
                      )}
                      {s.progress && <StepWait progress={s.progress} />}
                      {s.progress && otherProgress(s.progress) && (
                        <Shown label={`Progress of ${s.label}`} value={otherProgress(s.progress)} />
                      )}
                      {out && (
                        <>
                          <p className="hint-inline">
                            Output <code>{out.key}</code>
                          </p>
                          <Shown label={`Output ${out.key} of ${s.label}`} value={out.value} />
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>

      <section aria-labelledby="state-title">
        <h2 id="state-title">State and payload</h2>
        <details>
          <summary>Pipeline state</summary>
          <Shown label="Pipeline state" value={run.state} />
        </details>
        <details>
          <summary>Trigger payload</summary>
          <Shown label="Trigger payload" value={run.payload} />
        </details>
      </section>
    </div>
  );
}
