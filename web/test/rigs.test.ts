import { describe, expect, it } from "vitest";
import { addressOf } from "../src/screens/space/rigs/BrowserBar";
import { covers, grantHref } from "../src/screens/space/rigs/Egress";
import { ENGINES, engineLabel } from "../src/screens/space/rigs/engines";
import { clampSize, loadSplit, MAX_SIZE, MIN_SIZE, SPLIT_KEY } from "../src/screens/space/SplitView";

class MemoryStorage {
  private items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe("browser engines", () => {
  it("are named for people and keep their wire values", () => {
    expect(ENGINES.map((e) => [e.value, e.label])).toEqual([
      ["engine-a", "Chromium"],
      ["engine-b", "Firefox"],
      ["engine-c", "WebKit"],
    ]);
    expect(engineLabel("engine-b")).toBe("Firefox");
    expect(engineLabel("engine-z")).toBe("engine-z");
    expect(engineLabel(null)).toBe("browser");
  });
});

describe("the address bar", () => {
  it("takes an address without a scheme as https, and one with a scheme as typed", () => {
    expect(addressOf(" example.org/a?b=1 ")).toBe("https://example.org/a?b=1");
    expect(addressOf("http://pages.example/x.html")).toBe("http://pages.example/x.html");
    expect(addressOf("about:blank")).toBe("about:blank"); // the server says what it refuses
  });
});

describe("egress notices", () => {
  it("link an admin to the rig's grant form with the host filled in", () => {
    expect(grantHref("w 1", "r/2", "a.example")).toBe("/workspaces/w%201/rigs/r%2F2?grant=a.example");
  });

  it("are done with once a grant covers their host", () => {
    expect(covers("A.example", "a.example")).toBe(true);
    expect(covers("*.example", "a.b.example")).toBe(true);
    expect(covers("*.example", "example")).toBe(false);
    expect(covers("a.example", "b.a.example")).toBe(false);
  });
});

describe("the split view's preferences", () => {
  it("are kept per person, within bounds, and default when unreadable", () => {
    const storage = new MemoryStorage() as unknown as Storage;
    expect(loadSplit(storage, "u1")).toEqual({ on: false, size: 50 });
    storage.setItem(SPLIT_KEY + "u1", JSON.stringify({ on: true, size: 62 }));
    expect(loadSplit(storage, "u1")).toEqual({ on: true, size: 62 });
    expect(loadSplit(storage, "u2")).toEqual({ on: false, size: 50 }); // another person's are their own
    storage.setItem(SPLIT_KEY + "u1", JSON.stringify({ on: true, size: 99 }));
    expect(loadSplit(storage, "u1").size).toBe(MAX_SIZE);
    storage.setItem(SPLIT_KEY + "u1", "{not json");
    expect(loadSplit(storage, "u1")).toEqual({ on: false, size: 50 });
    expect([clampSize(MIN_SIZE - 1), clampSize(MIN_SIZE), clampSize(MAX_SIZE), clampSize(MAX_SIZE + 1)]).toEqual([
      MIN_SIZE,
      MIN_SIZE,
      MAX_SIZE,
      MAX_SIZE,
    ]);
  });
});
