/** A phone rig in the web client: there is no live lane for phones, so the screen is the `mobile_use` screenshot
 * polled (`pollDelay`), and a person in control drives the device with `mobile_use` verbs: a press and release
 * become a tap or a swipe (`gesture`), keys become the verb's key aliases or typed text (`phoneKey`). Pure, so it
 * is unit-tested. */

export interface Point {
  x: number;
  y: number;
}

export type PhoneAction =
  | { action: "tap"; coordinate: [number, number] }
  | { action: "swipe"; start_coordinate: [number, number]; coordinate: [number, number]; duration_ms: number }
  | { action: "key"; key: string }
  | { action: "type"; text: string };

/** How far (device pixels) a press may travel and still be a tap. */
export const TAP_SLOP = 24;
/** `swipe` takes 50 to 5000 ms (rigs.md). */
export const SWIPE_MIN_MS = 50;
export const SWIPE_MAX_MS = 5000;
/** How often the screen is fetched again: often while you drive, seldom while you watch, never while hidden. */
export const POLL_CONTROL_MS = 1500;
export const POLL_WATCH_MS = 5000;
/** After an action, the next screenshot comes this soon, to show what it did. */
export const AFTER_ACTION_MS = 300;

/** A press at `start` released at `end` after `ms`, as the verb for it (points in device pixels). */
export function gesture(start: Point, end: Point, ms: number): PhoneAction {
  const a: [number, number] = [Math.round(start.x), Math.round(start.y)];
  const b: [number, number] = [Math.round(end.x), Math.round(end.y)];
  if (Math.hypot(b[0] - a[0], b[1] - a[1]) <= TAP_SLOP) return { action: "tap", coordinate: a };
  const duration = Math.min(SWIPE_MAX_MS, Math.max(SWIPE_MIN_MS, Math.round(ms)));
  return { action: "swipe", start_coordinate: a, coordinate: b, duration_ms: duration };
}

/** DOM key names with a `mobile_use` key alias. */
const ALIASES: Record<string, string> = {
  Enter: "enter",
  Backspace: "backspace",
  Delete: "delete",
  Tab: "tab",
  Escape: "escape",
  Home: "home",
  BrowserBack: "back",
  BrowserHome: "home",
  ContextMenu: "menu",
  AudioVolumeUp: "volume_up",
  AudioVolumeDown: "volume_down",
};

/** What a key pressed on the phone's screen does: a key alias, a printable character typed, or null (modifiers,
 * arrows and other keys the phone has no alias for, and shortcuts with Ctrl, Alt or Meta, left to the browser). */
export function phoneKey(key: string, modified = false): PhoneAction | null {
  if (modified) return null;
  const alias = ALIASES[key];
  if (alias) return { action: "key", key: alias };
  return [...key].length === 1 ? { action: "type", text: key } : null;
}

/** The delay before the next screenshot, or null to stop polling (the page is hidden). */
export function pollDelay(inControl: boolean, hidden: boolean): number | null {
  if (hidden) return null;
  return inControl ? POLL_CONTROL_MS : POLL_WATCH_MS;
}
