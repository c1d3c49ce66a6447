import { describe, expect, it } from "vitest";
import {
  familyOf,
  invalidateAfterEvent,
  invalidateAfterWrite,
  readsAfterWrite,
  touches,
} from "../src/data/invalidation";
import { readKey } from "../src/data/queries";
import { cacheOf, stale } from "./fakes";

describe("invalidation", () => {
  it("names a write's family by its op without the verb", () => {
    expect(familyOf("pipelines.templates.create")).toBe("pipelines.templates.");
    expect(familyOf("spaces.create")).toBe("spaces.");
    expect(readsAfterWrite("agents.delete")).toEqual(["agents.", "teams."]);
  });

  it("matches a read by op prefix and, when one is named, by workspace", () => {
    const key = readKey("spaces.list", { workspace_id: "w1", includeHidden: true });
    expect(touches(key, ["spaces."], "w1")).toBe(true);
    expect(touches(key, ["spaces."], "w2")).toBe(false);
    expect(touches(key, ["tickets."], "w1")).toBe(false);
    expect(touches(readKey("workspaces.list", {}), ["workspaces."], "w1")).toBe(true);
  });

  it("marks stale what an event of a workspace changes, and nothing of another workspace", async () => {
    const queries = cacheOf(
      ["spaces.list", { workspace_id: "w1" }],
      ["spaces.list", { workspace_id: "w2" }],
      ["tickets.list", { workspace_id: "w1" }],
    );
    await invalidateAfterEvent(queries, "w1", { type: "workspace.spaceCreated" });
    expect(stale(queries)).toEqual([JSON.stringify(["spaces.list", { workspace_id: "w1" }])]);
  });

  it("ignores an event type that changes no cached list", async () => {
    const queries = cacheOf(["spaces.list", { workspace_id: "w1" }]);
    await invalidateAfterEvent(queries, "w1", { type: "agents.textDelta" });
    await invalidateAfterEvent(queries, "w1", { type: "someone.elses" });
    expect(stale(queries)).toEqual([]);
  });

  it("marks stale a write's family and what it names besides, but not after a read op", async () => {
    const queries = cacheOf(
      ["agents.list", { workspace_id: "w1" }],
      ["teams.list", { workspace_id: "w1" }],
      ["repos.list", { workspace_id: "w1" }],
    );
    await invalidateAfterWrite(queries, "pipelines.templates.validate", { workspace_id: "w1" });
    expect(stale(queries)).toEqual([]);
    await invalidateAfterWrite(queries, "agents.delete", { workspace_id: "w1", agentId: "a1" });
    expect(stale(queries).sort()).toEqual(
      [JSON.stringify(["agents.list", { workspace_id: "w1" }]), JSON.stringify(["teams.list", { workspace_id: "w1" }])].sort(),
    );
  });
});
