import { describe, expect, it } from "vitest";
import { baseName, DISPLAY_SIZES, fileUriPath, sizeLabel } from "../src/screens/space/rigs/desktop";
import { lanePath } from "../src/screens/space/rigs/fileLane";
import { fitSize, toViewport } from "../src/screens/space/rigs/liveWire";
import {
  gesture,
  phoneKey,
  pollDelay,
  POLL_CONTROL_MS,
  POLL_WATCH_MS,
  SWIPE_MAX_MS,
  SWIPE_MIN_MS,
  TAP_SLOP,
} from "../src/screens/space/rigs/phone";

describe("a computer rig's desktop", () => {
  it("maps a point on the drawn desktop to guest pixels of the display, whatever its mode", () => {
    // A 4:3 display drawn 800 wide: no bands, a scale of 800/1024.
    expect(toViewport(400, 300, { width: 800, height: 600 }, { width: 1024, height: 768 })).toEqual({ x: 512, y: 384 });
    // The same box showing a 16:10 display has bands above and below (37.5 px each).
    expect(toViewport(0, 37.5, { width: 800, height: 600 }, { width: 1280, height: 800 })).toEqual({ x: 0, y: 0 });
    expect(toViewport(799, 562, { width: 800, height: 600 }, { width: 1280, height: 800 })).toEqual({ x: 1278, y: 799 });
    // A point in a band lands on the nearest edge, never off the display (the server refuses those).
    expect(toViewport(400, 10, { width: 800, height: 600 }, { width: 1280, height: 800 })).toEqual({ x: 640, y: 0 });
  });

  it("fits the display to the view within 320x240 and 2560x1600, at the display's shape", () => {
    expect(fitSize(1000, 0.75)).toEqual({ width: 1000, height: 750 });
    expect(fitSize(320, 0.625)).toEqual({ width: 320, height: 240 }); // at the floor: 200 is raised to 240
    expect(fitSize(319, 0.75)).toEqual({ width: 320, height: 240 }); // one below the floor is raised
    expect(fitSize(2560, 0.625)).toEqual({ width: 2560, height: 1600 });
    expect(fitSize(2561, 0.75)).toEqual({ width: 2560, height: 1600 }); // one past is cut, the height too
  });

  it("offers display sizes the desktop takes, labelled as the view shows them", () => {
    for (const s of DISPLAY_SIZES) {
      expect(s.width).toBeGreaterThanOrEqual(320);
      expect(s.width).toBeLessThanOrEqual(2560);
      expect(s.height).toBeGreaterThanOrEqual(240);
      expect(s.height).toBeLessThanOrEqual(1600);
    }
    expect(sizeLabel({ width: 1280, height: 800 })).toBe("1280 × 800");
  });

  it("reads the guest paths a drag out names, and nothing that is not a file URI", () => {
    expect(fileUriPath("file:///home/rig/Drops/a%20b.txt")).toBe("/home/rig/Drops/a b.txt");
    expect(fileUriPath("file://rig-host/tmp/x")).toBe("/tmp/x");
    expect(fileUriPath("https://example.test/a")).toBeNull();
    expect(fileUriPath("not a uri")).toBeNull();
    expect(fileUriPath("file:///bad%ZZ")).toBeNull();
    expect(baseName("/home/rig/Drops/report.pdf")).toBe("report.pdf");
    expect(baseName("/")).toBe("file");
  });

  it("names a guest path to the file lane as unpadded base64url of its UTF-8", () => {
    expect(lanePath("/home/rig/é.txt")).toBe(
      btoa(String.fromCharCode(...new TextEncoder().encode("/home/rig/é.txt")))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, ""),
    );
    expect(lanePath("/a?")).toBe("L2E_"); // "/" of base64 becomes "_"
    expect(lanePath("/ab")).not.toContain("=");
  });
});

describe("a phone rig's screen", () => {
  it("makes a press released nearby a tap at the press, and farther a swipe", () => {
    expect(gesture({ x: 100.4, y: 200.6 }, { x: 100, y: 200 }, 80)).toEqual({ action: "tap", coordinate: [100, 201] });
    // At the slop it is still a tap; one past, a swipe.
    expect(gesture({ x: 0, y: 0 }, { x: TAP_SLOP, y: 0 }, 80).action).toBe("tap");
    expect(gesture({ x: 0, y: 0 }, { x: TAP_SLOP + 1, y: 0 }, 400)).toEqual({
      action: "swipe",
      start_coordinate: [0, 0],
      coordinate: [TAP_SLOP + 1, 0],
      duration_ms: 400,
    });
  });

  it("keeps a swipe's duration within the 50 to 5000 ms the verb takes", () => {
    const far = (ms: number) => gesture({ x: 0, y: 0 }, { x: 500, y: 900 }, ms);
    expect(far(10)).toMatchObject({ duration_ms: SWIPE_MIN_MS });
    expect(far(50)).toMatchObject({ duration_ms: 50 });
    expect(far(5000)).toMatchObject({ duration_ms: 5000 });
    expect(far(5001)).toMatchObject({ duration_ms: SWIPE_MAX_MS });
  });

  it("maps keys to the phone's key aliases, types characters, and leaves the rest to the browser", () => {
    expect(phoneKey("Enter")).toEqual({ action: "key", key: "enter" });
    expect(phoneKey("Backspace")).toEqual({ action: "key", key: "backspace" });
    expect(phoneKey("Escape")).toEqual({ action: "key", key: "escape" });
    expect(phoneKey("BrowserBack")).toEqual({ action: "key", key: "back" });
    expect(phoneKey("a")).toEqual({ action: "type", text: "a" });
    expect(phoneKey("é")).toEqual({ action: "type", text: "é" });
    expect(phoneKey(" ")).toEqual({ action: "type", text: " " });
    expect(phoneKey("Shift")).toBeNull();
    expect(phoneKey("ArrowLeft")).toBeNull();
    expect(phoneKey("c", true)).toBeNull(); // Ctrl+C stays the browser's
  });

  it("polls often while in control, seldom while watching, and not while hidden", () => {
    expect(pollDelay(true, false)).toBe(POLL_CONTROL_MS);
    expect(pollDelay(false, false)).toBe(POLL_WATCH_MS);
    expect(pollDelay(true, true)).toBeNull();
    expect(POLL_CONTROL_MS).toBeLessThan(POLL_WATCH_MS);
  });
});
