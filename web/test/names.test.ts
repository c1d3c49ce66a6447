import * as yaml from "yaml";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, type EventView, type JsonObject, type RunView } from "../src/generated/ops";
import {
  agentRoleLabel,
  dispatchModeLabel,
  engineLabel,
  EVENT_LABELS,
  eventLabel,
  spaceKindLabel,
  spaceModeLabel,
  splitRef,
  workspaceRoleLabel,
} from "../src/labels";
import { referringSteps, repoRef, settingPath, settingValue, toggledRepos } from "../src/screens/pipelines/ReferencePicker";
import { parseTemplateText, problemPath, setInText } from "../src/screens/pipelines/templateText";
import { deviceNameProblem, MAX_DEVICE_NAME } from "../src/screens/settings/deviceName";
import { foldRun, runOfRecord, withRecord, type Frame } from "../src/screens/space/stream";
import { eventRefs, eventSubject } from "../src/screens/workspace/eventLine";
import { displayName, type Names } from "../src/screens/workspace/names";

describe("event types in words", () => {
  it("labels every event type the server declares", () => {
    // EVENT_TYPES is generated from the server's parts (a Python test keeps it current).
    for (const type of EVENT_TYPES) {
      expect(EVENT_LABELS[type], type).toMatch(/^[A-Z][^.]*[a-z]$/);
      expect(eventLabel(type)).toBe(EVENT_LABELS[type]);
    }
    expect(Object.keys(EVENT_LABELS).sort()).toEqual([...EVENT_TYPES].sort());
    expect(eventLabel("identity.workspaceCreated")).toBe("Workspace created");
  });

  it("reads a workspace's own event type as its words", () => {
    expect(eventLabel("review.approved")).toBe("Review: approved");
    expect(eventLabel("deploy.stagingFinished")).toBe("Deploy: staging finished");
  });
});

describe("roles, modes and engines in words", () => {
  it("names the vocabularies and keeps an unknown value readable", () => {
    expect(agentRoleLabel("chiefExecutive")).toBe("Chief executive");
    expect(agentRoleLabel("member")).toBe("Member");
    expect(agentRoleLabel("nightWatch")).toBe("Night watch");
    expect(["guest", "member", "admin", "owner"].map(workspaceRoleLabel)).toEqual(["Guest", "Member", "Admin", "Owner"]);
    expect(dispatchModeLabel("allParallel")).toBe("Every member at once");
    expect(dispatchModeLabel("manager")).toBe("The leader, who delegates");
    expect(["engine-a", "engine-b", "engine-c"].map(engineLabel)).toEqual(["Chromium", "Firefox", "WebKit"]);
    expect(["standard", "chatprovider"].map(spaceKindLabel)).toEqual(["Conversation", "Chat bridge thread"]);
    expect(["chat", "review", "plan"].map(spaceModeLabel)).toEqual(["Chat", "Review", "Plan"]);
  });
});

const names = (table: Record<string, string>): Names => ({
  of: (ref) => table[ref] ?? null,
  list: () => [],
  loaded: true,
});

describe("records by name", () => {
  it("names a reference, else its kind and the start of its id", () => {
    const known = names({ "agent:1b2c3d4e-0000-0000-0000-000000000000": "analyst" });
    expect(displayName("agent:1b2c3d4e-0000-0000-0000-000000000000", known)).toBe("analyst");
    expect(displayName("agent:9f8e7d6c-0000-0000-0000-000000000000", known)).toBe("agent 9f8e7d6c");
    expect(displayName("agent:9f8e7d6c-0000-0000-0000-000000000000", known, "the old name")).toBe("the old name");
    expect(displayName("user:u1", known)).toBe("person u1");
    expect(displayName("hangar", known)).toBe("hangar");
    expect(splitRef("pipeline-template:triage")).toEqual({ kind: "pipeline-template", id: "triage" });
    expect(splitRef("nothing:x")).toEqual({ kind: null, id: "nothing:x" });
  });

  it("says who and what an event was about", () => {
    const event = (type: string, payload: JsonObject): EventView => ({
      seq: 1,
      id: "e",
      type,
      occurredAt: "2025-01-01T00:00:00Z",
      payload,
    });
    const known = names({ "user:u1": "Meg", "ticket:t1": "Fix the door", "agent:a1": "analyst", "space:s1": "Plans" });
    expect(eventSubject(event("identity.memberAdded", { userId: "u1", role: "admin" }), known)).toBe("Meg · Admin");
    const roleChanged = event("identity.memberRoleChanged", { userId: "u1", oldRole: "member", newRole: "admin" });
    expect(eventSubject(roleChanged, known)).toBe("Meg · Member → Admin");
    expect(eventSubject(event("workspace.ticketChanged", { ticketId: "t1", status: "inProgress" }), known)).toBe(
      "Fix the door · In progress",
    );
    const finished = event("agents.runFinished", { runId: "r", agentId: "a1", spaceId: "s1", outcome: "failed" });
    expect(eventSubject(finished, known)).toBe("analyst · Plans · Failed");
    // A hidden or deleted space keeps the title its event carried.
    expect(eventSubject(event("workspace.spaceCreated", { spaceId: "s9", title: "Scratch" }), known)).toBe("Scratch");
    expect(eventRefs(finished)).toEqual([
      ["Agent", "agent:a1"],
      ["Space", "space:s1"],
    ]);
  });
});

describe("a device's name", () => {
  it("is checked on both sides of the limit, as the server checks it", () => {
    expect(deviceNameProblem("n".repeat(MAX_DEVICE_NAME))).toBeNull();
    expect(deviceNameProblem("n".repeat(MAX_DEVICE_NAME + 1))).toBe(
      "a device name is at most 100 characters; this one has 101",
    );
    expect(deviceNameProblem(`  ${"é".repeat(MAX_DEVICE_NAME)}  `)).toBeNull(); // trimmed, counted in characters
    expect(deviceNameProblem("   ")).toBe("a device name cannot be empty");
    expect(deviceNameProblem("two\nlines")).toMatch(/control characters/);
    expect(deviceNameProblem("Meg's laptop")).toBeNull();
  });
});

describe("a failed run's error", () => {
  const frame = (seq: number, type: string, payload: Record<string, unknown>) =>
  ({
    seq,
    type: `agents.${type}`,
    at: "2025-01-01T00:00:00Z",
    payload: { runId: "r1", agentId: "a1", spaceId: "s", ...payload },
  }) as Frame;
  const boom = "the command exited with status 3: boom";

  it("is shown once: for the run, not again for the turn that ended with it", () => {
    const frames = [
      frame(1, "runStarted", {}),
      frame(2, "turnStarted", { turn: 1 }),
      frame(3, "turnFinished", { turn: 1, outcome: "failed", error: boom }),
      frame(4, "runFinished", { outcome: "failed", error: boom }),
    ];
    const run = foldRun("r1", frames);
    expect(run.error).toBe(boom);
    expect(run.turns.map((t) => t.error)).toEqual([null]);
    expect(run.turnCount).toBe(1);
    // Before the run's end arrives, the turn says it.
    expect(foldRun("r1", frames.slice(0, 3)).turns[0]?.error).toBe(boom);
  });

  const record: RunView = {
    id: "r1",
    agentId: "a1",
    spaceId: "s",
    status: "finished",
    outcome: "failed",
    error: boom,
    prompt: "hi",
    outputSchema: null,
    output: null,
    hasOutput: false,
    outputError: null,
    turns: 1,
    dispatchedBy: "user:u",
    createdAt: "2025-01-01T00:00:00Z",
    finishedAt: "2025-01-01T00:00:01Z",
  };

  it("is the same after a reload, from the run's record", () => {
    const run = runOfRecord(record);
    expect([run.status, run.outcome, run.error, run.turnCount]).toEqual(["finished", "failed", boom, 1]);
    expect(run.turns).toEqual([]);
  });

  it("completes events that stop short of the run's end", () => {
    const partial = foldRun("r1", [
      frame(2, "turnStarted", { turn: 1 }),
      frame(3, "turnFinished", { turn: 1, outcome: "failed", error: boom }),
    ]);
    const run = withRecord(partial, record);
    expect([run.status, run.error, run.turns[0]?.error]).toEqual(["finished", boom, null]);
    expect(withRecord(partial, { ...record, status: "running", outcome: null, error: null })).toBe(partial);
  });
});

const TEMPLATE = `id: t
steps:
  - id: start
    kind: trigger
    body: pipeline.trigger
  # the agent step
  - id: ask
    kind: listen
    body: conversation.promptAgent
    trigger:
      sourceStepIds: [start]
    config:
      prompt: hello
  - id: open
    kind: listen
    body: messaging.createSpace
    trigger:
      sourceStepIds: [start]
    config:
`;

describe("choosing records in the template editor", () => {
  it("finds the step at a line", () => {
    const parsed = parseTemplateText(yaml, TEMPLATE);
    expect(parsed.stepAt(1)).toBeNull();
    expect(parsed.stepAt(4)).toBe(0);
    expect(parsed.stepAt(7)).toBe(1);
    expect(parsed.stepAt(13)).toBe(1);
    expect(parsed.stepAt(14)).toBe(2);
  });

  it("writes a chosen id into the text, keeping its comments", () => {
    const text = setInText(yaml, TEMPLATE, "yaml", settingPath(1, "agentId"), "a-1")!;
    expect(text).toContain("  # the agent step\n");
    expect(text).toContain("      prompt: hello\n      agentId: a-1\n");
    expect(text).toContain("      sourceStepIds: [start]\n");
    // An empty config becomes the map the setting needs.
    const spaced = setInText(yaml, text, "yaml", settingPath(2, "repoIds"), ["r-1"])!;
    const value = parseTemplateText(yaml, spaced).value as { steps: Array<Record<string, unknown>> };
    expect(value.steps[2]?.["config"]).toEqual({ repoIds: ["r-1"] });
    const extras = setInText(yaml, spaced, "yaml", settingPath(1, "extras.spaceId"), "s-1")!;
    const withSpace = parseTemplateText(yaml, extras).value as { steps: Array<Record<string, unknown>> };
    expect(settingValue(withSpace.steps[1]!, "extras.spaceId")).toBe("s-1");
    // Cleared: the key goes.
    const cleared = setInText(yaml, extras, "yaml", settingPath(1, "agentId"), undefined)!;
    expect(cleared).not.toContain("agentId");
    // JSON stays JSON; a text that does not parse is left alone.
    const json = setInText(yaml, JSON.stringify({ id: "t", steps: [{ id: "x" }] }), "json", ["steps", 0, "config", "teamId"], "tm");
    expect(JSON.parse(json!)).toEqual({ id: "t", steps: [{ id: "x", config: { teamId: "tm" } }] });
    expect(setInText(yaml, "id: [", "yaml", ["id"], "x")).toBeNull();
  });

  it("lists the steps whose body names records, and toggles repos by id or name", () => {
    const bodies = new Map([
      ["conversation.promptAgent", [{ name: "agentId", doc: "", required: true, refers: "agent" as const }]],
    ]);
    const value = parseTemplateText(yaml, TEMPLATE).value;
    expect(referringSteps(value, bodies).map((s) => [s.index, s.id])).toEqual([[1, "ask"]]);
    expect(repoRef("api@main")).toBe("api");
    expect(repoRef("api#3")).toBe("api");
    const repo = { id: "r-1", name: "api" };
    expect(toggledRepos(["api@main", "other"], repo, false)).toEqual(["other"]);
    expect(toggledRepos(["other"], repo, true)).toEqual(["other", "r-1"]);
    expect(toggledRepos(["api@main"], repo, true)).toEqual(["api@main"]);
  });

  it("puts an unknown reference at its line", () => {
    const text = setInText(yaml, TEMPLATE, "yaml", settingPath(1, "agentId"), "analyst")!;
    const parsed = parseTemplateText(yaml, text);
    const path = problemPath("step ask: config.agentId: no agent with the id 'analyst' in this workspace", parsed.value);
    expect(path).toEqual(["steps", 1, "config", "agentId"]);
    expect(parsed.lineOf(path!)).toBe(text.split("\n").findIndex((l) => l.includes("agentId: analyst")) + 1);
  });
});
