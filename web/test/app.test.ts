import { describe, expect, it } from "vitest";
import { adoptFragmentToken, loadToken, TOKEN_KEY, tokenInFragment, type KeyValueStore } from "../src/auth/credential";
import { parseRoute, safeNext, workspacePath } from "../src/router";
import { backoffDelay } from "../src/rpc/backoff";
import { defaultDeviceName } from "../src/screens/Connect";

function memoryStore(): KeyValueStore & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k) => data.get(k) ?? null,
    setItem: (k, v) => void data.set(k, v),
    removeItem: (k) => void data.delete(k),
  };
}

describe("credential hand-off", () => {
  it("takes #token= from the fragment, keeps it and strips the fragment", () => {
    const store = memoryStore();
    const replaced: string[] = [];
    const history = { replaceState: (_d: unknown, _u: string, url: string) => void replaced.push(url) };
    const token = adoptFragmentToken({ hash: "#token=a%2Bb", pathname: "/connect", search: "?x=1" }, history, store);
    expect(token).toBe("a+b");
    expect(store.data.get(TOKEN_KEY)).toBe("a+b");
    expect(replaced).toEqual(["/connect?x=1"]);
    expect(loadToken(store)).toBe("a+b");
  });

  it("leaves an address without a credential alone", () => {
    const store = memoryStore();
    const replaced: string[] = [];
    const history = { replaceState: (_d: unknown, _u: string, url: string) => void replaced.push(url) };
    expect(adoptFragmentToken({ hash: "#section", pathname: "/", search: "" }, history, store)).toBeNull();
    expect(replaced).toEqual([]);
    expect(tokenInFragment("#state=1&token=t2")).toBe("t2");
    expect(tokenInFragment("#token=")).toBeNull();
    expect(tokenInFragment("#token=%E0%A4%A")).toBeNull();
  });
});

describe("routes", () => {
  it("parses the section 9 paths this client knows", () => {
    expect(parseRoute("/")).toEqual({ name: "home" });
    expect(parseRoute("/connect", "?next=%2Fworkspaces%2Fw1")).toEqual({ name: "connect", next: "/workspaces/w1" });
    expect(parseRoute("/workspaces/w%201")).toEqual({ name: "workspace", workspaceId: "w 1" });
    expect(parseRoute("/workspaces/w1/")).toEqual({ name: "workspace", workspaceId: "w1" });
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
