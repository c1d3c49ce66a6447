/** A computer rig's desktop in the web client: the display sizes offered, and what a drag out of the desktop
 * carries. Pure, so it is unit-tested. The desktop lane itself maps DOM key names to X11 names (the server's
 * `desktopview.x11_key`), so keys travel as the browser's live view sends them (`liveWire.domKey`). */
import type { Size } from "./liveWire";

/** Display modes offered to choose from (the desktop takes any size from 320x240 to 2560x1600). */
export const DISPLAY_SIZES: readonly Size[] = [
  { width: 1024, height: 768 },
  { width: 1280, height: 800 },
  { width: 1366, height: 768 },
  { width: 1600, height: 900 },
  { width: 1920, height: 1080 },
];

export function sizeLabel(size: Size): string {
  return `${size.width} × ${size.height}`;
}

/** The guest path a `file://` URI names (`file:///home/rig/a%20b.txt` → `/home/rig/a b.txt`), or null for
 * anything else (another scheme, a path that does not decode, one that is not absolute). */
export function fileUriPath(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== "file:") return null;
  try {
    const path = decodeURIComponent(url.pathname);
    return path.startsWith("/") && !path.includes("\0") ? path : null;
  } catch {
    return null;
  }
}

/** The last name of a guest path, for a saved file's name. */
export function baseName(path: string): string {
  return path.split("/").filter(Boolean).pop() ?? "file";
}
