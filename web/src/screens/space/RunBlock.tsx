/** An agent run in the stream: its status, each turn's reasoning (collapsed), tool calls as expandable rows, the
 * text being streamed, and Interrupt while it runs. A finished run from the history shows how it ended (its error,
 * once, from its record) and its steps on request: the same as while it was live. */
import { memo, useEffect, useMemo } from "react";
import type { RunView } from "../../generated/ops";
import { useAction, useWrite } from "../../data/mutations";
import { RunWait } from "./RunWait";
import { foldRun, runOfRecord, withRecord, type Frame, type RunActivity, type ToolCallView } from "./stream";

const OUTCOME_TEXT: Record<string, string> = {
  ok: "finished",
  failed: "failed",
  interrupted: "interrupted",
  turnLimit: "stopped at its turn limit",
};

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}

function ToolRow({ call }: { call: ToolCallView }) {
  const state = call.ok === null ? "running" : call.ok ? "ok" : "failed";
  return (
    <details className="tool" data-state={state}>
      <summary>
        <span className="tool-state">{state === "running" ? "Running" : state === "ok" ? "Done" : "Failed"}</span>{" "}
        <code>{call.name}</code>
      </summary>
      <p className="label">Arguments</p>
      <pre>{json(call.arguments)}</pre>
      {call.result !== null && (
        <>
          <p className="label">Result</p>
          <pre>{call.result}</pre>
        </>
      )}
    </details>
  );
}

function statusLine(run: RunActivity): string {
  if (run.status === "running") {
    const turn = run.turns[run.turns.length - 1];
    if (run.waiting) return turn ? `waiting (turn ${turn.turn})` : "waiting";
    return turn ? `working (turn ${turn.turn})` : "starting";
  }
  const turns = run.turnCount === 1 ? "1 turn" : `${run.turnCount} turns`;
  return `${OUTCOME_TEXT[run.outcome ?? ""] ?? "finished"} after ${turns}`;
}

interface Props {
  workspaceId: string;
  runId: string;
  frames: Frame[] | undefined;
  /** The run's record, once fetched: how it ended, for good. */
  record: RunView | undefined;
  landed: string[];
  agentName(id: string | null): string;
  onLoad(runId: string): void;
  onRecord(runId: string): void;
}

export const RunBlock = memo(function RunBlock(props: Props) {
  const { workspaceId, runId, frames, record, landed, agentName, onLoad, onRecord } = props;
  const write = useWrite();
  const action = useAction();
  const { busy } = action;
  const error = action.error?.message ?? null;
  const run = useMemo(
    () => (frames ? withRecord(foldRun(runId, frames, landed), record) : record ? runOfRecord(record) : null),
    [runId, frames, record, landed],
  );
  const folded = frames === undefined;
  useEffect(() => {
    if (folded && record === undefined) onRecord(runId);
  }, [folded, record, runId, onRecord]);

  if (!run) {
    return (
      <div className="run run-folded">
        <button type="button" className="link" onClick={() => onLoad(runId)}>
          Show the agent's steps
        </button>
      </div>
    );
  }
  const interrupt = () => void action.run(() => write("runs.interrupt", { workspace_id: workspaceId, runId }));
  const running = run.status === "running";
  return (
    <section className="run" data-run={runId} data-status={run.status} aria-label={`Run of ${agentName(run.agentId)}`}>
      <header className="run-head">
        <span className="author">{agentName(run.agentId)}</span>
        <span className="run-status" data-outcome={run.outcome ?? ""}>
          {running && <span className="spinner" aria-hidden="true" />}
          {statusLine(run)}
        </span>
        {running && (
          <button type="button" className="secondary small" onClick={interrupt} disabled={busy}>
            {busy ? "Interrupting…" : "Interrupt"}
          </button>
        )}
      </header>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {run.waiting && <RunWait wait={run.waiting} />}
      {run.error && (
        <p className="error run-error" data-outcome={run.outcome ?? ""}>
          {run.error}
        </p>
      )}
      {folded && (
        <button type="button" className="link" onClick={() => onLoad(runId)}>
          Show the agent's steps
        </button>
      )}
      {run.turns.map((turn) => (
        <div className="turn" key={turn.turn}>
          {(turn.reasoning !== null || turn.reasoningLive) && (
            <details className="reasoning">
              <summary>{turn.reasoningLive ? "Reasoning…" : "Reasoning"}</summary>
              {turn.reasoning && <p>{turn.reasoning}</p>}
            </details>
          )}
          {turn.tools.map((call) => (
            <ToolRow key={call.callId} call={call} />
          ))}
          {turn.text && <p className="streaming">{turn.text}</p>}
          {turn.error && <p className="error">{turn.error}</p>}
        </div>
      ))}
    </section>
  );
});
