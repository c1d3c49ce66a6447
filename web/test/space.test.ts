import { describe, expect, it } from "vitest";
import type { MessageView } from "../src/generated/ops";
import { parseRoute, rigPath, spacePath } from "../src/router";
import { complete, mentionAt, mentionedAgents, suggest } from "../src/screens/space/mentions";
import { portUrl } from "../src/screens/space/rigs/portLinks";
import { mergeMessages } from "../src/data/spaceFrames";
import { foldRun, timeline, type Frame } from "../src/screens/space/stream";

function msg(seq: number, over: Partial<MessageView> = {}): MessageView {
  return {
    id: `m${seq}`,
    seq,
    spaceId: "s",
    author: { kind: "user", id: "u", name: "Uma" },
    content: `message ${seq}`,
    metadata: {},
    runId: null,
    createdAt: "2025-01-01T00:00:00Z",
    ...over,
  };
}

const frame = (seq: number, type: string, payload: Record<string, unknown>) =>
  ({
  seq,
  type: `agents.${type}`,
  at: "2025-01-01T00:00:00Z",
  payload: { runId: "r1", agentId: "a1", spaceId: "s", ...payload },
}) as Frame;

describe("space routes", () => {
  it("parses a space and a rig deep link, and builds them back", () => {
    expect(parseRoute("/workspaces/w1/spaces/s%201")).toEqual({ name: "space", workspaceId: "w1", spaceId: "s 1" });
    expect(parseRoute("/workspaces/w1/rigs/r1/")).toEqual({ name: "rig", workspaceId: "w1", rigId: "r1" });
    expect(parseRoute("/workspaces/w1/spaces/%E0%A4%A").name).toBe("notFound");
    expect(parseRoute("/workspaces/w1/spaces/a/b").name).toBe("notFound");
    expect(spacePath("w 1", "s/1")).toBe("/workspaces/w%201/spaces/s%2F1");
    expect(rigPath("w", "r")).toBe("/workspaces/w/rigs/r");
  });
});

describe("merging messages", () => {
  it("appends, prepends and interleaves, each sequence number once", () => {
    const base = [msg(5), msg(6)];
    expect(mergeMessages(base, [msg(7), msg(6)]).map((m) => m.seq)).toEqual([5, 6, 7]);
    expect(mergeMessages(base, [msg(2), msg(1)]).map((m) => m.seq)).toEqual([1, 2, 5, 6]);
    expect(mergeMessages(base, [msg(3), msg(9), msg(5)]).map((m) => m.seq)).toEqual([3, 5, 6, 9]);
    expect(mergeMessages([], [msg(2), msg(2)]).map((m) => m.seq)).toEqual([2]);
  });

  it("places a run's activity after its prompt, and unplaced live runs at the end", () => {
    const items = timeline([msg(1, { runId: "r1" }), msg(2, { runId: "r1", author: { kind: "agent", id: "a1", name: "Ada" } })], [
      "r1",
      "r2",
    ]);
    expect(items.map((i) => i.key)).toEqual(["m1", "rr1", "m2", "rr2"]);
  });
});

describe("folding a run's events", () => {
  const frames = [
    frame(1, "runStarted", { dispatched_by: "user:u" }),
    frame(2, "turnStarted", { turn: 1 }),
    frame(3, "reasoningStarted", { turn: 1 }),
    frame(4, "reasoningFinished", { turn: 1, text: "Think." }),
    frame(5, "toolCallStarted", { turn: 1, callId: "c1", name: "read_file", arguments: { path: "x" } }),
    frame(6, "toolCallFinished", { turn: 1, callId: "c1", name: "read_file", ok: true, result: "data" }),
    frame(7, "textDelta", { turn: 1, text: "Hel" }),
    frame(8, "textDelta", { turn: 1, text: "lo" }),
  ];

  it("shows reasoning, tool calls and the text streaming in", () => {
    const run = foldRun("r1", frames);
    expect(run.status).toBe("running");
    expect(run.agentId).toBe("a1");
    const [turn] = run.turns;
    expect(turn?.reasoning).toBe("Think.");
    expect(turn?.tools).toEqual([{ callId: "c1", name: "read_file", arguments: { path: "x" }, ok: true, result: "data" }]);
    expect(turn?.text).toBe("Hello");
  });

  it("drops streamed text once it landed as a message, and ends with the run's outcome", () => {
    expect(foldRun("r1", frames, ["Hello"]).turns[0]?.text).toBe("");
    const done = foldRun("r1", [...frames, frame(9, "turnFinished", { turn: 1, outcome: "ok" }), frame(10, "runFinished", { outcome: "interrupted" })]);
    expect(done.status).toBe("finished");
    expect(done.outcome).toBe("interrupted");
    expect(done.turns[0]?.text).toBe("");
  });
});

describe("mentions", () => {
  const agents = [
    { id: "1", name: "Ada" },
    { id: "2", name: "Ada Lovelace" },
    { id: "3", name: "Bob" },
  ];

  it("finds whole names at word starts, the longest first, each once", () => {
    expect(mentionedAgents("@Ada Lovelace and @bob, and @Ada again", agents).map((a) => a.id)).toEqual(["2", "3", "1"]);
    expect(mentionedAgents("mail me at x@Ada or @Adam", agents)).toEqual([]);
  });

  it("suggests while typing and completes the name", () => {
    const text = "hi @ad";
    const m = mentionAt(text, text.length);
    expect(m).toEqual({ start: 3, query: "ad" });
    expect(suggest("ad", agents).map((a) => a.id)).toEqual(["1", "2"]);
    expect(complete(text, m!, "Ada Lovelace")).toEqual({ text: "hi @Ada Lovelace ", caret: 17 });
    expect(mentionAt("a@b", 3)).toBeNull();
    expect(mentionAt("@x\ny", 4)).toBeNull();
  });
});

describe("port links", () => {
  const port = { guestPort: 3000, forwarded: true, hostAddress: "127.140.7.9", hostPort: 3000, lanPort: null };
  it("links a loopback forward only from a browser on the server host, and a shared port from anywhere", () => {
    // the forward listens on the rig's own loopback address, whatever loopback name the page was opened at
    expect(portUrl(port, { protocol: "http:", hostname: "127.0.0.1" })).toBe("http://127.140.7.9:3000/");
    expect(portUrl(port, { protocol: "http:", hostname: "localhost" })).toBe("http://127.140.7.9:3000/");
    expect(portUrl(port, { protocol: "https:", hostname: "hangar.example" })).toBeNull();
    expect(portUrl({ ...port, lanPort: 41000 }, { protocol: "https:", hostname: "hangar.example" })).toBe(
      "http://hangar.example:41000/",
    );
    expect(
      portUrl({ ...port, forwarded: false, hostAddress: null, hostPort: null }, { protocol: "http:", hostname: "localhost" }),
    ).toBeNull();
  });
});
