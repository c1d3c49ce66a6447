/** The merging rules of a space's stream (`spaceStream.ts`): messages and run frames each kept once in sequence
 * order whatever order the live events and fetched pages arrive in. Pure functions, unit-tested without a browser. */
import type {
  MessageView,
  Provisioning,
  RunEventFrame,
  SpaceEventFrame,
  WorkspaceSpaceProvisioningChanged,
} from "../generated/ops";

/** An event of an agent run: from `runs.events`, or one of `spaces.watch`'s (the same frames, typed per event). */
export type Frame = RunEventFrame;

/** Whether a frame of `spaces.watch` is one of an agent run's events. */
export function isRunFrame(frame: SpaceEventFrame): frame is Extract<SpaceEventFrame, { type: `agents.${string}` }> {
  return frame.type.startsWith("agents.");
}

/** `incoming` merged into `messages` (both oldest first), each sequence number once. The common cases (newer
 * messages appended, an older page prepended) cost one concatenation, not a sort of the whole history. */
export function mergeMessages(messages: readonly MessageView[], incoming: readonly MessageView[]): MessageView[] {
  if (incoming.length === 0) return messages as MessageView[];
  const first = messages[0];
  const last = messages[messages.length - 1];
  const sorted = [...incoming].sort((a, b) => a.seq - b.seq);
  const unique = sorted.filter((m, i) => i === 0 || sorted[i - 1]?.seq !== m.seq);
  if (!last || !first) return unique;
  if ((unique[0]?.seq ?? 0) > last.seq) return [...messages, ...unique];
  if ((unique[unique.length - 1]?.seq ?? 0) < first.seq) return [...unique, ...messages];
  const bySeq = new Map<number, MessageView>();
  for (const m of messages) bySeq.set(m.seq, m);
  for (const m of unique) bySeq.set(m.seq, m);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** `incoming` frames merged into a run's frames, in sequence order, each once. */
export function mergeFrames(frames: readonly Frame[], incoming: readonly Frame[]): Frame[] {
  const bySeq = new Map<number, Frame>();
  for (const f of frames) bySeq.set(f.seq, f);
  for (const f of incoming) bySeq.set(f.seq, f);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** The provisioning state a space's provisioning event carries. */
export function provisioningOf(payload: WorkspaceSpaceProvisioningChanged): Provisioning {
  const { state, step, detail } = payload;
  return { state, step: step && detail ? `${step}: ${detail}` : step, error: state === "failed" ? detail : null };
}
