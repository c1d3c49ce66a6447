import { describe, expect, it } from "vitest";
import type { NodeView } from "../src/generated/ops";
import { withoutNode } from "../src/screens/workspace/OrchestrationEdit";

function node(key: string, dependsOn: string[] = [], agentId: string | null = null): NodeView {
  const base = { description: "", subTicketId: null, approved: false, state: "planned", output: null, error: null };
  return { ...base, key, title: key.toUpperCase(), dependsOn, agentId };
}

describe("withoutNode", () => {
  it("drops the node and every edge to it, keeping the rest and each node's agent", () => {
    const nodes = [node("a"), node("b", ["a"], "ag1"), node("c", ["a", "b"])];
    expect(withoutNode(nodes, "a")).toEqual([
      { key: "b", title: "B", description: "", dependsOn: [], agentId: "ag1" },
      { key: "c", title: "C", description: "", dependsOn: ["b"] },
    ]);
  });

  it("leaves the DAG as it is for a key it does not have", () => {
    expect(withoutNode([node("a")], "zz")).toEqual([{ key: "a", title: "A", description: "", dependsOn: [] }]);
  });
});
