import { describe, expect, it } from "vitest";
import { isTyping, KeySequence, pathFor, SEQUENCE_MS, SHORTCUTS, workspaceOf } from "../src/shortcuts";

describe("KeySequence", () => {
  it("answers a one-key shortcut at once", () => {
    const keys = new KeySequence();
    expect(keys.feed("?", 0)).toBe("help");
    expect(keys.feed("/", 10)).toBe("focus");
  });

  it("answers g then a letter within the window", () => {
    const keys = new KeySequence();
    expect(keys.feed("g", 0)).toBeNull();
    expect(keys.waiting).toBe(true);
    expect(keys.feed("p", 100)).toBe("pipelines");
    expect(keys.waiting).toBe(false);
    expect(keys.feed("g", 200)).toBeNull();
    expect(keys.feed("h", 300)).toBe("home");
    keys.feed("g", 400);
    expect(keys.feed("s", 500)).toBe("workspaceSettings");
    keys.feed("g", 600);
    expect(keys.feed("a", 700)).toBe("audit");
  });

  it("drops the prefix when the second key comes too late", () => {
    const keys = new KeySequence();
    keys.feed("g", 0);
    expect(keys.feed("p", SEQUENCE_MS + 1)).toBeNull();
    expect(keys.waiting).toBe(false);
  });

  it("a second key alone, or an unknown key after g, does nothing", () => {
    const keys = new KeySequence();
    expect(keys.feed("p", 0)).toBeNull();
    expect(keys.feed("h", 0)).toBeNull();
    keys.feed("g", 0);
    expect(keys.feed("x", 10)).toBeNull();
    expect(keys.feed("p", 20)).toBeNull(); // the unknown key cleared the prefix
  });

  it("g g keeps waiting for the letter", () => {
    const keys = new KeySequence();
    keys.feed("g", 0);
    expect(keys.feed("g", 10)).toBeNull();
    expect(keys.feed("a", 20)).toBe("audit");
  });

  it("a one-key shortcut after g still works", () => {
    const keys = new KeySequence();
    keys.feed("g", 0);
    expect(keys.feed("?", 10)).toBe("help");
  });

  it("reset forgets the prefix", () => {
    const keys = new KeySequence();
    keys.feed("g", 0);
    keys.reset();
    expect(keys.feed("p", 10)).toBeNull();
  });
});

describe("isTyping", () => {
  const el = (tagName: string, extra: Record<string, unknown> = {}) => ({ tagName, closest: () => null, ...extra });

  it("fields and editable elements are typing", () => {
    expect(isTyping(el("input"))).toBe(true);
    expect(isTyping(el("TEXTAREA"))).toBe(true);
    expect(isTyping(el("select"))).toBe(true);
    expect(isTyping(el("div", { isContentEditable: true }))).toBe(true);
  });

  it("anything inside the terminal is typing", () => {
    expect(isTyping(el("div", { closest: (s: string) => (s.includes(".xterm") ? {} : null) }))).toBe(true);
  });

  it("the page, a button or a link is not", () => {
    expect(isTyping(el("BODY"))).toBe(false);
    expect(isTyping(el("button"))).toBe(false);
    expect(isTyping(el("a"))).toBe(false);
    expect(isTyping(null)).toBe(false);
    expect(isTyping(undefined)).toBe(false);
  });
});

describe("where the go-to shortcuts lead", () => {
  it("uses the current workspace", () => {
    expect(pathFor("home", null)).toBe("/");
    expect(pathFor("pipelines", "w 1")).toBe("/workspaces/w%201/pipelines");
    expect(pathFor("audit", "w1")).toBe("/workspaces/w1/audit");
    expect(pathFor("workspaceSettings", "w1")).toBe("/settings/workspaces/w1");
  });

  it("goes nowhere without a workspace", () => {
    expect(pathFor("pipelines", null)).toBeNull();
    expect(pathFor("audit", null)).toBeNull();
    expect(pathFor("workspaceSettings", null)).toBeNull();
  });

  it("reads the workspace of a route", () => {
    expect(workspaceOf({ name: "home" })).toBeNull();
    expect(workspaceOf({ name: "space", workspaceId: "w1", spaceId: "s1" })).toBe("w1");
  });

  it("every shortcut is listed once", () => {
    const keys = SHORTCUTS.map((s) => s.keys.join(" "));
    expect(new Set(keys).size).toBe(keys.length);
  });
});
