import { describe, expect, it } from "vitest";
import { parseRoute, safeNext, workspacePath } from "../src/router";
import { backoffDelay } from "../src/rpc/backoff";
import { defaultDeviceName } from "../src/screens/Connect";

describe("routes", () => {
  it("parses the section 9 paths this client knows", () => {
    expect(parseRoute("/")).toEqual({ name: "home" });
    expect(parseRoute("/connect", "?next=%2Fworkspaces%2Fw1")).toEqual({ name: "connect", next: "/workspaces/w1" });
    expect(parseRoute("/workspaces/w%201")).toEqual({ name: "workspace", workspaceId: "w 1", section: "overview" });
    expect(parseRoute("/workspaces/w1/")).toEqual({ name: "workspace", workspaceId: "w1", section: "overview" });
    expect(parseRoute("/nowhere")).toEqual({ name: "notFound", path: "/nowhere" });
    expect(workspacePath("a/b")).toBe("/workspaces/a%2Fb");
  });

  it("never sends a person to another origin after connecting", () => {
    expect(safeNext("//evil.example/x")).toBeNull();
    expect(safeNext("https://evil.example")).toBeNull();
    expect(safeNext("/\\evil.example")).toBeNull();
    expect(parseRoute("/connect", "?next=%2F%2Fevil.example")).toEqual({ name: "connect", next: null });
  });
});

describe("backoff", () => {
  it("grows exponentially to the cap, with half of each delay random", () => {
    const policy = { baseMs: 100, maxMs: 1000 };
    expect(backoffDelay(0, () => 0, policy)).toBe(50);
    expect(backoffDelay(0, () => 1, policy)).toBe(100);
    expect(backoffDelay(3, () => 0, policy)).toBe(400);
    expect(backoffDelay(30, () => 1, policy)).toBe(1000);
  });
});

describe("connect screen", () => {
  it("names the device after the browser", () => {
    expect(defaultDeviceName("Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36")).toBe("Chromium (web)");
    expect(defaultDeviceName("Mozilla/5.0 Gecko/20100101 Firefox/140.0")).toBe("Firefox (web)");
  });
});
