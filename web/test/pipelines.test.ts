import * as yaml from "yaml";
import { describe, expect, it } from "vitest";
import { parsePayload } from "../src/screens/pipelines/payload";
import { parseRoute, pipelineRunPath, pipelinesPath } from "../src/router";
import { graphOf } from "../src/screens/pipelines/graph";
import { layoutGraph } from "../src/screens/pipelines/layout";
import { parseTemplateText, problemPath, templateToText } from "../src/screens/pipelines/templateText";

const TRIAGE = {
  id: "triage",
  steps: [
    { id: "start", kind: "trigger", body: "pipeline.trigger" },
    { id: "check", kind: "listen", body: "shell.run", trigger: { sourceStepIds: ["start"] }, config: { label: "Check" } },
    { id: "route", kind: "router", body: "flow.router", trigger: { sourceStepIds: ["check"] } },
    { id: "fix", kind: "listen", body: "shell.run", trigger: { sourceStepIds: ["route"] } },
    { id: "skip", kind: "listen", body: "shell.run", trigger: { sourceStepIds: ["route"] } },
    { id: "both", kind: "join", body: "pipeline.trigger", waitForStepIds: ["fix", "skip"] },
    { id: "end", kind: "terminal", trigger: { sourceStepIds: ["both"] } },
  ],
  edges: [
    { from: "route", to: "fix", routeKey: "true" },
    { from: "route", to: "skip", routeKey: "false" },
  ],
};

describe("pipeline routes", () => {
  it("parses the section 9 paths of pipelines and runs", () => {
    expect(parseRoute("/workspaces/w%201/pipelines")).toEqual({ name: "pipelines", workspaceId: "w 1" });
    expect(parseRoute("/workspaces/w/pipelines/runs/r-1/")).toEqual({ name: "pipelineRun", workspaceId: "w", runId: "r-1" });
    expect(parseRoute("/workspaces/w/pipelines/runs/%E0%A4%A").name).toBe("notFound");
    expect(pipelineRunPath("a/b", "r?1")).toBe("/workspaces/a%2Fb/pipelines/runs/r%3F1");
    expect(pipelinesPath("w")).toBe("/workspaces/w/pipelines");
  });
});

describe("graph of a template", () => {
  it("has a node per step and edges from sources, waits and route keys, each once", () => {
    const g = graphOf(TRIAGE);
    expect(g.nodes.map((n) => [n.id, n.kind])).toEqual([
      ["start", "trigger"], ["check", "listen"], ["route", "router"], ["fix", "listen"], ["skip", "listen"],
      ["both", "join"], ["end", "terminal"],
    ]);
    expect(g.nodes[1]!.label).toBe("Check");
    expect(g.edges).toContainEqual({ from: "route", to: "fix", routeKey: "true", wait: false });
    expect(g.edges).toContainEqual({ from: "fix", to: "both", routeKey: null, wait: true });
    expect(g.edges.filter((e) => e.from === "route")).toHaveLength(2);
  });

  it("draws what it can of a half-typed template", () => {
    const g = graphOf({ steps: [{ id: "a", kind: "listen" }, { kind: "x" }, "junk", { id: "b", trigger: { sourceStepIds: ["a", "ghost"] } }] });
    expect(g.nodes.map((n) => [n.id, n.kind])).toEqual([["a", "listen"], ["b", "unknown"]]);
    expect(g.edges).toEqual([{ from: "a", to: "b", routeKey: null, wait: false }]);
    expect(graphOf(null)).toEqual({ nodes: [], edges: [] });
  });
});

describe("layered layout", () => {
  it("puts every step below the steps it listens to, and siblings side by side without overlap", () => {
    const layout = layoutGraph(graphOf(TRIAGE));
    const y = (id: string) => layout.boxes.get(id)!.y;
    for (const e of graphOf(TRIAGE).edges) expect(y(e.to)).toBeGreaterThan(y(e.from));
    expect(y("fix")).toBe(y("skip"));
    const fix = layout.boxes.get("fix")!;
    const skip = layout.boxes.get("skip")!;
    expect(Math.abs(fix.x - skip.x)).toBeGreaterThanOrEqual(fix.w);
    for (const b of layout.boxes.values()) {
      expect(b.x).toBeGreaterThanOrEqual(0);
      expect(b.x + b.w).toBeLessThanOrEqual(layout.width);
      expect(b.y + b.h).toBeLessThanOrEqual(layout.height);
    }
  });

  it("orders a layer to avoid crossings", () => {
    // a feeds c, b feeds d; listed as d before c, the layer is reordered under its parents.
    const g = graphOf({
      steps: [
        { id: "s", kind: "trigger" },
        { id: "a", trigger: { sourceStepIds: ["s"] } },
        { id: "b", trigger: { sourceStepIds: ["s"] } },
        { id: "d", trigger: { sourceStepIds: ["b"] } },
        { id: "c", trigger: { sourceStepIds: ["a"] } },
      ],
    });
    const x = (id: string) => layoutGraph(g).boxes.get(id)!.x;
    expect(Math.sign(x("a") - x("b"))).toBe(Math.sign(x("c") - x("d")));
  });

  it("survives a cycle and a self-loop", () => {
    const g = graphOf({
      steps: [
        { id: "a", kind: "trigger", trigger: { sourceStepIds: ["c"] } },
        { id: "b", trigger: { sourceStepIds: ["a", "b"] } },
        { id: "c", trigger: { sourceStepIds: ["b"] } },
      ],
    });
    const layout = layoutGraph(g);
    expect(layout.boxes.size).toBe(3);
    expect(layout.backEdges.size).toBeGreaterThan(0);
    expect(layoutGraph({ nodes: [], edges: [] }).width).toBe(0);
  });
});

describe("template text", () => {
  const text = templateToText(yaml, TRIAGE, "yaml");

  it("reads YAML and JSON, and says where the syntax breaks", () => {
    expect(parseTemplateText(yaml, text).value).toEqual(TRIAGE);
    expect(parseTemplateText(yaml, templateToText(yaml, TRIAGE, "json")).value).toEqual(TRIAGE);
    const broken = parseTemplateText(yaml, "id: x\nsteps:\n  - id: a\n   kind: [\n");
    expect(broken.value).toBeUndefined();
    expect(broken.syntaxError?.line).toBeGreaterThanOrEqual(3);
  });

  it("maps the server's problems to the step, field or edge they name, and to its line", () => {
    const parsed = parseTemplateText(yaml, text);
    const lines = text.split("\n");
    const at = (problem: string) => {
      const path = problemPath(problem, parsed.value);
      return path && parsed.lineOf(path);
    };
    const lineOfStep = (id: string) => lines.findIndex((l) => l.includes(`id: ${id}`)) + 1;
    expect(problemPath("step fix: trigger.sourceStepIds names unknown step 'ghost'", TRIAGE)).toEqual([
      "steps", 3, "trigger", "sourceStepIds",
    ]);
    expect(at("step route: config.extras: needs a predicate")).toBe(lineOfStep("route"));
    expect(at("step fix: listens to router 'route' but no edge route→fix carries a routeKey")).toBe(lineOfStep("fix"));
    expect(at("steps[check].config.timeoutMs: Input should be a valid integer")).toBe(
      lines.findIndex((l) => l.includes("label: Check")) + 1,
    );
    expect(problemPath("steps[2].kind: Input should be 'trigger'", TRIAGE)).toEqual(["steps", 2, "kind"]);
    expect(at("edge route→skip: needs a routeKey (route is a router)")).toBe(
      lines.findIndex((l) => l.includes("to: skip")) ,
    );
    expect(problemPath("step id 'both' is used twice", TRIAGE)).toEqual(["steps", 5]);
    expect(at("id: String should match pattern")).toBe(1);
    expect(problemPath("a template needs exactly one trigger step (found 0)", TRIAGE)).toBeNull();
  });
});

describe("keyboard order of the canvas's steps", () => {
  it("goes layer by layer, left to right within a layer, whatever order the template lists them in", async () => {
    const { stepOrder } = await import("../src/screens/pipelines/GraphCanvas");
    const shuffled = { ...TRIAGE, steps: [...TRIAGE.steps].reverse() };
    const g = graphOf(shuffled);
    const layout = layoutGraph(g);
    const ids = stepOrder(g, layout).map((s) => s.node.id);
    expect(ids.slice(0, 3)).toEqual(["start", "check", "route"]);
    const fixSkip = ids.slice(3, 5);
    expect(new Set(fixSkip)).toEqual(new Set(["fix", "skip"]));
    const [a, b] = fixSkip.map((id) => layout.boxes.get(id)!.x);
    expect(a!).toBeLessThan(b!);
    expect(ids.slice(5)).toEqual(["both", "end"]);
  });
});

describe("an approval gate's decision message", () => {
  it("mentions the approver and carries the decision and the reason", async () => {
    const { decisionMessage } = await import("../src/screens/pipelines/ApprovalGate");
    expect(decisionMessage("Ada", "approved", "  ship it ")).toBe(
      "@Ada I approve this step. Reason: ship it Submit decision `approved` with submit_output.",
    );
    expect(decisionMessage("Ada", "rejected", "")).toBe("@Ada I reject this step. Submit decision `rejected` with submit_output.");
  });
});

describe("a typed payload", () => {
  it("is a JSON object, empty text the empty one, anything else one sentence", () => {
    expect(parsePayload('{"who": "Ann"}')).toEqual({ value: { who: "Ann" } });
    expect(parsePayload("")).toEqual({ value: {} });
    expect(parsePayload("[1]")).toEqual({ problem: 'The payload must be a JSON object, such as {"who": "Ann"}.' });
    const broken = parsePayload("{who");
    expect("problem" in broken && broken.problem.startsWith("The payload is not valid JSON: ")).toBe(true);
  });
});
