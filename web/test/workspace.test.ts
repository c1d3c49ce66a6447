import { describe, expect, it } from "vitest";
import type { TicketView } from "../src/generated/ops";
import {
  auditPath,
  parseRoute,
  spacePath,
  ticketPath,
  WORKSPACE_SECTIONS,
  workspaceSectionPath,
  workspaceSettingsPath,
} from "../src/router";
import { argvOf } from "../src/screens/workspace/Agents";
import { auditArgs, instant } from "../src/screens/workspace/AuditPage";
import { boardOf } from "../src/screens/workspace/tickets";

function ticket(id: string, status: string, parentId: string | null = null): TicketView {
  const at = "2026-01-01T00:00:00Z";
  const times = { createdAt: at, updatedAt: at };
  return { id, title: id, description: "", reporter: "user:u", status, parentId, spaceId: null, ...times };
}

describe("workspace routes", () => {
  it("parses the ticket, settings and audit paths and builds them back", () => {
    expect(parseRoute(ticketPath("w 1", "t/2"))).toEqual({ name: "ticket", workspaceId: "w 1", ticketId: "t/2" });
    expect(parseRoute(workspaceSettingsPath("w1"))).toEqual({ name: "workspaceSettings", workspaceId: "w1" });
    expect(parseRoute("/settings/workspaces/w1/")).toEqual({ name: "workspaceSettings", workspaceId: "w1" });
    expect(parseRoute(auditPath("w1"))).toEqual({ name: "audit", workspaceId: "w1" });
    expect(spacePath("w1", "s1")).toBe("/workspaces/w1/spaces/s1");
    expect(parseRoute("/workspaces/w1/tickets/%E0%A4%A")).toEqual({
      name: "notFound",
      path: "/workspaces/w1/tickets/%E0%A4%A",
    });
  });
});

describe("workspace sections", () => {
  it("each section has its own path, and section 9's paths keep their screens", () => {
    for (const section of WORKSPACE_SECTIONS) {
      const path = workspaceSectionPath("w 1", section);
      expect(parseRoute(path)).toEqual({ name: "workspace", workspaceId: "w 1", section });
      expect(parseRoute(`${path}/`)).toEqual({ name: "workspace", workspaceId: "w 1", section });
    }
    expect(workspaceSectionPath("w1", "overview")).toBe("/workspaces/w1");
    expect(workspaceSectionPath("w1", "agents")).toBe("/workspaces/w1/agents");
    expect(parseRoute("/workspaces/w1/tickets/t1")).toEqual({ name: "ticket", workspaceId: "w1", ticketId: "t1" });
    expect(parseRoute("/workspaces/w1/spaces/s1")).toEqual({ name: "space", workspaceId: "w1", spaceId: "s1" });
    expect(parseRoute("/workspaces/w1/pipelines")).toEqual({ name: "pipelines", workspaceId: "w1" });
    expect(parseRoute("/workspaces/w1/audit")).toEqual({ name: "audit", workspaceId: "w1" });
    expect(parseRoute("/workspaces/w1/overview")).toEqual({ name: "notFound", path: "/workspaces/w1/overview" });
    expect(parseRoute("/workspaces/w1/teams")).toEqual({ name: "notFound", path: "/workspaces/w1/teams" });
  });
});

describe("tickets board", () => {
  it("puts top-level tickets in their status's column and sub-tickets under their parent", () => {
    const board = boardOf([
      ticket("a", "open"),
      ticket("b", "done"),
      ticket("a1", "done", "a"),
      ticket("a2", "open", "a"),
      ticket("odd", "someNewStatus"),
      ticket("orphan", "blocked", "gone"),
    ]);
    const columns = Object.fromEntries(board.columns.map((c) => [c.status, c.tickets.map((t) => t.id)]));
    expect(columns).toEqual({
      open: ["a"],
      inProgress: [],
      blocked: ["orphan"],
      done: ["b"],
      cancelled: [],
      someNewStatus: ["odd"],
    });
    expect(board.children.get("a")?.map((t) => t.id)).toEqual(["a1", "a2"]);
  });
});

describe("forms", () => {
  it("reads a command line one argument per line", () => {
    expect(argvOf("python3\n -m agent \n\n--flag=a b\n")).toEqual(["python3", "-m agent", "--flag=a b"]);
  });

  it("turns the audit filters into the op's arguments", () => {
    expect(instant("")).toBeNull();
    expect(instant("not a time")).toBeNull();
    expect(instant("2026-03-04T05:06")).toBe(new Date("2026-03-04T05:06").toISOString());
    const none = { action: "", principal: "", target: "", door: "", since: "", until: "" };
    const args = auditArgs("w1", { ...none, action: " spaces.create ", door: "mcp" });
    expect(args).toMatchObject({ workspace_id: "w1", action: "spaces.create", principal: null, door: "mcp" });
    expect(args.newest).toBe(true);
    expect(auditArgs("w1", { ...none, door: "bogus" }).door).toBeNull();
  });
});
