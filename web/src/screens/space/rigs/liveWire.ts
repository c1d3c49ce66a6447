/** The live view lane's wire (server: `hangar.rigs.liveview`): a binary frame is a 16-byte big-endian header
 * (sequence u32, width u16, height u16, capture time f64 in unix ms) then the JPEG; input goes back as JSON text
 * frames with coordinates in the page's CSS pixels, and keys as DOM key names. Pure, so it is unit-tested. */

export interface LiveFrame {
  seq: number;
  width: number;
  height: number;
  capturedMs: number;
  jpeg: Uint8Array;
}

export const HEADER_BYTES = 16;

export function parseFrame(buffer: ArrayBuffer): LiveFrame | null {
  if (buffer.byteLength < HEADER_BYTES) return null;
  const view = new DataView(buffer);
  return {
    seq: view.getUint32(0),
    width: view.getUint16(4),
    height: view.getUint16(6),
    capturedMs: view.getFloat64(8),
    jpeg: new Uint8Array(buffer, HEADER_BYTES),
  };
}

export interface Size {
  width: number;
  height: number;
}

/** A point on the drawn view (CSS pixels of the canvas box) as a point of the page's viewport. The picture is
 * fitted into the box keeping its aspect (`object-fit: contain`), so bands around it map to the nearest edge. */
export function toViewport(x: number, y: number, box: Size, viewport: Size): { x: number; y: number } {
  const clamp = (v: number, max: number) => Math.min(Math.max(Math.round(v), 0), Math.max(max - 1, 0));
  if (box.width <= 0 || box.height <= 0 || viewport.width <= 0 || viewport.height <= 0) return { x: 0, y: 0 };
  const scale = Math.min(box.width / viewport.width, box.height / viewport.height);
  const left = (box.width - viewport.width * scale) / 2;
  const top = (box.height - viewport.height * scale) / 2;
  return { x: clamp((x - left) / scale, viewport.width), y: clamp((y - top) / scale, viewport.height) };
}

const NAMED = new Set([
  "Enter", "Tab", "Backspace", "Escape", "Delete", "Insert", "Home", "End", "PageUp", "PageDown",
  "ArrowLeft", "ArrowUp", "ArrowRight", "ArrowDown", "Shift", "Control", "Alt", "Meta", "Pause", "ContextMenu",
  "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
]);

/** The DOM key name the rig understands for a browser key event's `key`, or null for keys it has no name for
 * (dead keys, IME composition, media keys). */
export function domKey(key: string): string | null {
  if (NAMED.has(key)) return key;
  return [...key].length === 1 ? key : null;
}

const BUTTONS = ["left", "middle", "right"] as const;
export function mouseButton(button: number): (typeof BUTTONS)[number] | null {
  return BUTTONS[button] ?? null;
}

/** The frame size to ask for: the box in device pixels, at most the lane's 2560x1600. */
export function wantedSize(box: Size, ratio: number): Size {
  return {
    width: Math.max(1, Math.min(2560, Math.round(box.width * ratio))),
    height: Math.max(1, Math.min(1600, Math.round(box.height * ratio))),
  };
}

/** The size to set a page's viewport or a desktop's display to so it fills a box `width` CSS pixels wide at the
 * height `ratio` gives, within what the rig takes (320x240 to 2560x1600). */
export function fitSize(width: number, ratio: number): Size {
  const w = Math.min(2560, Math.max(320, Math.round(width)));
  return { width: w, height: Math.min(1600, Math.max(240, Math.round(w * ratio))) };
}
