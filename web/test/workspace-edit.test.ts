import { describe, expect, it } from "vitest";
import type { AgentView } from "../src/generated/ops";
import { namesOf } from "../src/screens/space/mentions";
import { draftOf, linesOf, updateArgs } from "../src/screens/workspace/agentEdit";
import { emptyWindow, typesOf } from "../src/screens/workspace/AuditPage";
import { inWindow } from "../src/data/events";

const at = "2026-01-01T00:00:00Z";

function openai(extra: Partial<Extract<AgentView["adapter"], { type: "openai" }>> = {}): AgentView {
  return {
    id: "a1",
    name: "Ada",
    role: "member",
    systemPrompt: "Be careful.",
    adapter: { type: "openai", baseUrl: "http://m/v1", model: "m1", temperature: 0.3, hasApiKey: true, ...extra },
    createdAt: at,
    updatedAt: at,
  };
}

const command: AgentView = {
  ...openai(),
  adapter: { type: "command", argv: ["cli", "--fast"], promptVia: "arg", env: { A: "1" }, secretEnvNames: ["TOKEN"] },
};

describe("editing an agent", () => {
  it("starts from the agent and changes only what the form edits, keeping settings it does not show", () => {
    const draft = { ...draftOf(openai()), name: " Ada 2 ", model: "m2", systemPrompt: "New." };
    expect(draft.apiKey).toBe("");
    expect(draft.defaultTools).toBe(true);
    const args = updateArgs("w1", openai(), draft);
    expect(args).toEqual({
      workspace_id: "w1",
      agentId: "a1",
      name: "Ada 2",
      role: "member",
      systemPrompt: "New.",
      adapter: { type: "openai", baseUrl: "http://m/v1", model: "m2", temperature: 0.3, productTools: null },
    });
  });

  it("sends an API key only when a new one was typed, and never what the view adds", () => {
    const kept = updateArgs("w1", openai(), draftOf(openai())).adapter ?? {};
    expect("apiKey" in kept || "hasApiKey" in kept).toBe(false);
    const replaced = updateArgs("w1", openai(), { ...draftOf(openai()), apiKey: "sk-new" }).adapter ?? {};
    expect(replaced.apiKey).toBe("sk-new");
  });

  it("edits a command agent's line and prompt route, leaving its secret variables to the server", () => {
    const draft = draftOf(command);
    expect(draft.argv).toBe("cli\n--fast");
    expect(draft.promptVia).toBe("arg");
    const args = updateArgs("w1", command, { ...draft, argv: "cli\n\n --slow \n", promptVia: "stdin" });
    expect(args.adapter).toEqual({
      type: "command",
      argv: ["cli", "--slow"],
      promptVia: "stdin",
      env: { A: "1" },
      productTools: null,
    });
  });

  it("names product tools one per line; none listed is none, the default set is null", () => {
    const agent = openai({ productTools: ["tickets.list"] });
    const draft = draftOf(agent);
    expect(draft.defaultTools).toBe(false);
    expect(draft.tools).toBe("tickets.list");
    expect(updateArgs("w1", agent, { ...draft, tools: "tickets.list\n messages.list\n" }).adapter?.productTools).toEqual(
      ["tickets.list", "messages.list"],
    );
    expect(updateArgs("w1", agent, { ...draft, tools: "" }).adapter?.productTools).toEqual([]);
    expect(updateArgs("w1", agent, { ...draft, defaultTools: true }).adapter?.productTools).toBeNull();
    expect(linesOf(" a \n\nb")).toEqual(["a", "b"]);
  });
});

describe("the events' time filter", () => {
  it("keeps events at or after since and before until, as the server does", () => {
    const since = "2026-01-01T10:00:00.000Z";
    const until = "2026-01-01T11:00:00.000Z";
    expect(inWindow("2026-01-01T10:00:00Z", since, until)).toBe(true);
    expect(inWindow("2026-01-01T10:59:59.999Z", since, until)).toBe(true);
    expect(inWindow("2026-01-01T11:00:00Z", since, until)).toBe(false);
    expect(inWindow("2026-01-01T09:59:59Z", since, null)).toBe(false);
    expect(inWindow("2030-01-01T00:00:00Z", since, null)).toBe(true);
    expect(inWindow("2000-01-01T00:00:00Z", null, null)).toBe(true);
  });

  it("knows a window that holds nothing, and reads the typed types", () => {
    expect(emptyWindow("2026-01-01T10:00", "2026-01-01T10:00")).toBe(true);
    expect(emptyWindow("2026-01-01T10:00", "2026-01-01T09:00")).toBe(true);
    expect(emptyWindow("2026-01-01T10:00", "2026-01-01T10:01")).toBe(false);
    expect(emptyWindow("", "2026-01-01T10:00")).toBe(false);
    expect(typesOf(" a.b , ,c.d")).toEqual(["a.b", "c.d"]);
    expect(typesOf(" , ")).toBeNull();
  });
});

describe("mentioning several agents", () => {
  it("names them as a sentence does", () => {
    const n = (...names: string[]) => names.map((name, i) => ({ id: String(i), name }));
    expect(namesOf(n())).toBe("");
    expect(namesOf(n("Ada"))).toBe("Ada");
    expect(namesOf(n("Ada", "Bob"))).toBe("Ada and Bob");
    expect(namesOf(n("Ada", "Bob", "Cy"))).toBe("Ada, Bob and Cy");
  });
});
