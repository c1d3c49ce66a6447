import { describe, expect, it } from "vitest";
import { foldRun, type Frame } from "../src/screens/space/stream";

const frame = (seq: number, type: string, payload: Record<string, unknown>) =>
  ({
  seq,
  type: `agents.${type}`,
  at: "2025-01-01T00:00:00Z",
  payload: { runId: "r1", agentId: "a1", spaceId: "s", ...payload },
}) as Frame;

describe("a run waiting before its program starts", () => {
  const started = [frame(1, "runStarted", { dispatched_by: "user:u" }), frame(2, "turnStarted", { turn: 1 })];

  it("shows the latest step of the wait with its count, and nothing once the program starts", () => {
    const building = [
      ...started,
      frame(3, "turnWaiting", { turn: 1, text: "starting the enclosure", step: 0, steps: 0, waiting: true }),
      frame(4, "turnWaiting", {
        turn: 1,
        text: "terminal image: downloading packages (4/10)",
        step: 4,
        steps: 10,
        waiting: true,
      }),
    ];
    expect(foldRun("r1", building).waiting).toEqual({
      text: "terminal image: downloading packages (4/10)",
      step: 4,
      steps: 10,
    });
    const up = [...building, frame(5, "turnWaiting", { turn: 1, text: "the enclosure is up", waiting: false })];
    expect(foldRun("r1", up).waiting).toBeNull();
    expect(foldRun("r1", up).status).toBe("running");
  });

  it("stops waiting when the turn or the run ends (a build that failed)", () => {
    const waiting = [...started, frame(3, "turnWaiting", { turn: 1, text: "terminal image: preparing (1/10)", step: 1, steps: 10 })];
    const failed = [...waiting, frame(4, "turnFinished", { turn: 1, outcome: "failed", error: "no image" })];
    expect(foldRun("r1", failed).waiting).toBeNull();
    const over = [...waiting, frame(4, "runFinished", { outcome: "failed", error: "no image" })];
    expect(foldRun("r1", over).waiting).toBeNull();
  });
});
