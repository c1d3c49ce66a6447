/** The space's stream as the screen shows it: agent runs folded from their turn events, and the timeline the
 * screen draws (the stream itself, merged by sequence number, is `data/spaceStream.ts`). Pure functions, so the
 * folding rules are unit-tested without a browser. */
import type { Frame } from "../../data/spaceFrames";
import type { MessageView, RunOutcome, RunView } from "../../generated/ops";

export type { Frame };

export interface ToolCallView {
  callId: string;
  name: string;
  arguments: unknown;
  /** null while the call runs */
  ok: boolean | null;
  result: string | null;
}

export interface TurnView {
  turn: number;
  reasoning: string | null;
  reasoningLive: boolean;
  tools: ToolCallView[];
  /** Text streamed in this turn and not yet landed as a message. */
  text: string;
  outcome: RunOutcome | null;
  error: string | null;
}

/** What a run waits for before its program starts (`agents.turnWaiting`): the terminal image's build, the boot. */
export interface RunWaitView {
  text: string;
  /** `step` of `steps` when the wait counts them; 0 of 0 otherwise. */
  step: number;
  steps: number;
}

export interface RunActivity {
  runId: string;
  agentId: string | null;
  status: "running" | "finished";
  outcome: RunOutcome | null;
  /** What ended the run, shown once for the run (a turn that ended with the same error does not repeat it). */
  error: string | null;
  turns: TurnView[];
  /** Set while the run waits before its program starts; null once it runs (or never waited). */
  waiting: RunWaitView | null;
  /** How many turns it took (the record's count when the turns' events are not loaded). */
  turnCount: number;
}

function turnOf(turns: TurnView[], number: number): TurnView {
  let turn = turns.find((t) => t.turn === number);
  if (!turn) {
    turn = { turn: number, reasoning: null, reasoningLive: false, tools: [], text: "", outcome: null, error: null };
    turns.push(turn);
    turns.sort((a, b) => a.turn - b.turn);
  }
  return turn;
}

/** A run's activity from its turn events; `landed` is the content of the run's messages already in the space,
 * whose streamed text is therefore shown as the message, not twice. */
export function foldRun(runId: string, frames: readonly Frame[], landed: readonly string[] = []): RunActivity {
  const run: RunActivity = {
    runId,
    agentId: null,
    status: "running",
    outcome: null,
    error: null,
    turns: [],
    waiting: null,
    turnCount: 0,
  };
  for (const frame of frames) {
    run.agentId ??= frame.payload.agentId;
    switch (frame.type) {
      case "agents.runStarted":
        run.agentId = frame.payload.agentId;
        break;
      case "agents.turnWaiting": {
        const { waiting, text, step, steps } = frame.payload;
        run.waiting = waiting === false ? null : { text, step, steps };
        break;
      }
      case "agents.runFinished":
        run.status = "finished";
        run.waiting = null;
        run.outcome = frame.payload.outcome;
        run.error = frame.payload.error;
        break;
      case "agents.turnStarted":
        turnOf(run.turns, frame.payload.turn);
        break;
      case "agents.reasoningStarted":
        turnOf(run.turns, frame.payload.turn).reasoningLive = true;
        break;
      case "agents.reasoningFinished": {
        const turn = turnOf(run.turns, frame.payload.turn);
        turn.reasoningLive = false;
        turn.reasoning = frame.payload.text;
        break;
      }
      case "agents.toolCallStarted": {
        const { callId, name, arguments: args } = frame.payload;
        turnOf(run.turns, frame.payload.turn).tools.push({ callId, name, arguments: args, ok: null, result: null });
        break;
      }
      case "agents.toolCallFinished": {
        const { callId, name, ok, result } = frame.payload;
        const turn = turnOf(run.turns, frame.payload.turn);
        const call = turn.tools.find((t) => t.callId === callId);
        if (call) Object.assign(call, { ok, result });
        else turn.tools.push({ callId, name, arguments: null, ok, result });
        break;
      }
      case "agents.textDelta":
        turnOf(run.turns, frame.payload.turn).text += frame.payload.text;
        break;
      case "agents.turnFinished": {
        const turn = turnOf(run.turns, frame.payload.turn);
        run.waiting = null;
        turn.reasoningLive = false;
        turn.outcome = frame.payload.outcome;
        turn.error = frame.payload.error;
        break;
      }
    }
  }
  // The error that ended the run is the run's, said once: the last turn ended with it too.
  for (const turn of run.turns) if (turn.error !== null && turn.error === run.error) turn.error = null;
  run.turnCount = run.turns.length;
  // A turn's reply lands as a message of the run; from then on the message shows it.
  const pending = [...landed.map((t) => t.trim())];
  for (const turn of run.turns) {
    const at = pending.indexOf(turn.text.trim());
    if (turn.text && (at >= 0 || run.status === "finished")) {
      if (at >= 0) pending.splice(at, 1);
      turn.text = "";
    }
  }
  return run;
}

/** A run as its record tells it (`runs.list`, `runs.get`): how it ended and why, without its turns' events (a
 * finished run from the history, before its steps are asked for). */
export function runOfRecord(record: RunView): RunActivity {
  return {
    runId: record.id,
    agentId: record.agentId,
    status: record.status,
    outcome: record.outcome,
    error: record.error,
    turns: [],
    waiting: null,
    turnCount: record.turns,
  };
}

/** The run as its events tell it, completed by its record: events can stop short of the end (the space was
 * opened after the run started and the end has not arrived yet), the record cannot. */
export function withRecord(run: RunActivity, record: RunView | undefined): RunActivity {
  if (!record || record.status !== "finished" || run.status === "finished") return run;
  const ended = { ...run, status: "finished" as const, outcome: record.outcome, error: record.error, waiting: null };
  ended.turns = run.turns.map((t) => (t.error !== null && t.error === record.error ? { ...t, error: null } : t));
  ended.turnCount = Math.max(run.turnCount, record.turns);
  return ended;
}

export type TimelineItem =
  | { kind: "message"; key: string; message: MessageView }
  | { kind: "run"; key: string; runId: string };

/** Messages in order, each agent run's activity right after the message that prompted it; runs whose prompt is
 * not among the loaded messages (a team's other members, a run dispatched elsewhere) follow the newest message. */
export function timeline(messages: readonly MessageView[], liveRuns: readonly string[]): TimelineItem[] {
  const items: TimelineItem[] = [];
  const placed = new Set<string>();
  for (const m of messages) {
    items.push({ kind: "message", key: `m${m.seq}`, message: m });
    if (m.runId && m.author.kind !== "agent" && !placed.has(m.runId)) {
      placed.add(m.runId);
      items.push({ kind: "run", key: `r${m.runId}`, runId: m.runId });
    }
  }
  for (const runId of liveRuns) {
    if (!placed.has(runId)) items.push({ kind: "run", key: `r${runId}`, runId });
  }
  return items;
}

/** The run's messages' contents (what `foldRun` needs to hide streamed text that has landed). */
export function landedTexts(messages: readonly MessageView[], runId: string): string[] {
  const out: string[] = [];
  for (let i = messages.length - 1; i >= 0 && out.length < 50; i -= 1) {
    const m = messages[i];
    if (m && m.runId === runId && m.author.kind === "agent") out.push(m.content);
  }
  return out;
}
