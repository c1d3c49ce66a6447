import { describe, expect, it } from "vitest";
import { domKey, mouseButton, parseFrame, toViewport, wantedSize } from "../src/screens/space/rigs/liveWire";

function frame(seq: number, width: number, height: number, ms: number, jpeg: number[]): ArrayBuffer {
  const buffer = new ArrayBuffer(16 + jpeg.length);
  const view = new DataView(buffer);
  view.setUint32(0, seq);
  view.setUint16(4, width);
  view.setUint16(6, height);
  view.setFloat64(8, ms);
  new Uint8Array(buffer, 16).set(jpeg);
  return buffer;
}

describe("the live view's wire", () => {
  it("reads the 16-byte big-endian header and keeps the JPEG after it", () => {
    const parsed = parseFrame(frame(4_000_000_000, 2560, 1600, 1_767_225_600_123.5, [0xff, 0xd8, 0xff]));
    expect(parsed).not.toBeNull();
    expect(parsed?.seq).toBe(4_000_000_000);
    expect([parsed?.width, parsed?.height, parsed?.capturedMs]).toEqual([2560, 1600, 1_767_225_600_123.5]);
    expect([...(parsed?.jpeg ?? [])]).toEqual([0xff, 0xd8, 0xff]);
    expect(parseFrame(new ArrayBuffer(15))).toBeNull();
  });

  it("maps a point on the drawn view to the page's CSS pixels, inside the page, past letterbox bands", () => {
    const viewport = { width: 1280, height: 800 };
    expect(toViewport(320, 200, { width: 640, height: 400 }, viewport)).toEqual({ x: 640, y: 400 });
    expect(toViewport(-5, 9999, { width: 640, height: 400 }, viewport)).toEqual({ x: 0, y: 799 });
    expect(toViewport(10, 10, { width: 0, height: 0 }, viewport)).toEqual({ x: 0, y: 0 });
    // A box taller than the picture: the picture is centred with bands above and below.
    expect(toViewport(320, 300, { width: 640, height: 600 }, viewport)).toEqual({ x: 640, y: 400 });
    expect(toViewport(0, 100, { width: 640, height: 600 }, viewport)).toEqual({ x: 0, y: 0 });
    // A box wider than the picture: bands left and right.
    expect(toViewport(450, 200, { width: 900, height: 400 }, viewport)).toEqual({ x: 640, y: 400 });
  });

  it("sends DOM key names the rig knows and nothing for keys it does not", () => {
    expect(domKey("Enter")).toBe("Enter");
    expect(domKey("a")).toBe("a");
    expect(domKey(" ")).toBe(" ");
    expect(domKey("é")).toBe("é");
    expect(domKey("Dead")).toBeNull();
    expect(domKey("AudioVolumeUp")).toBeNull();
    expect([mouseButton(0), mouseButton(1), mouseButton(2), mouseButton(3)]).toEqual(["left", "middle", "right", null]);
  });

  it("asks for frames in device pixels, at most 2560x1600", () => {
    expect(wantedSize({ width: 800, height: 500 }, 2)).toEqual({ width: 1600, height: 1000 });
    expect(wantedSize({ width: 3000, height: 2000 }, 1)).toEqual({ width: 2560, height: 1600 });
  });
});
