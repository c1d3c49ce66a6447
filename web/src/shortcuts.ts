/** Keyboard shortcuts of the signed-in shell: the list (shown by `?` and documented in the manual's keyboard
 * shortcuts page), the two-key sequences (`g` then a letter), and the hook that listens on the window. Keys typed
 * into a field, an editable element or the rig terminal are the person's text, never a shortcut. */
import { useEffect, useRef } from "react";
import { auditPath, navigate, pipelinesPath, workspaceSettingsPath, type Route } from "./router";

export type Action = "help" | "home" | "workspaceSettings" | "pipelines" | "audit" | "focus";

export interface Shortcut {
  keys: readonly string[];
  action: Action;
  description: string;
}

export const SHORTCUTS: readonly Shortcut[] = [
  { keys: ["?"], action: "help", description: "Show these shortcuts" },
  { keys: ["g", "h"], action: "home", description: "Go to your workspaces" },
  { keys: ["g", "s"], action: "workspaceSettings", description: "Go to the current workspace's settings" },
  { keys: ["g", "p"], action: "pipelines", description: "Go to the current workspace's pipelines" },
  { keys: ["g", "a"], action: "audit", description: "Go to the current workspace's audit log" },
  { keys: ["/"], action: "focus", description: "Focus the screen's search, filter or message box" },
];

/** How long the second key of a sequence may wait for the first. */
export const SEQUENCE_MS = 1500;

/** Turns single keys into actions: a one-key shortcut at once, a two-key one when its second key follows the first
 * within `SEQUENCE_MS`. A key that starts no shortcut and finishes none is ignored (and forgets a pending prefix). */
export class KeySequence {
  private pending: { key: string; at: number } | null = null;

  constructor(
    private readonly shortcuts: readonly Shortcut[] = SHORTCUTS,
    private readonly windowMs = SEQUENCE_MS,
  ) {}

  feed(key: string, now: number): Action | null {
    const prefix = this.pending && now - this.pending.at <= this.windowMs ? this.pending.key : null;
    this.pending = null;
    if (prefix !== null) {
      const done = this.shortcuts.find((s) => s.keys.length === 2 && s.keys[0] === prefix && s.keys[1] === key);
      if (done) return done.action;
    }
    const single = this.shortcuts.find((s) => s.keys.length === 1 && s.keys[0] === key);
    if (single) return single.action;
    if (this.shortcuts.some((s) => s.keys.length === 2 && s.keys[0] === key)) this.pending = { key, at: now };
    return null;
  }

  /** Whether a key is waiting for its second (the caller keeps the first key from doing anything else). */
  get waiting(): boolean {
    return this.pending !== null;
  }

  reset(): void {
    this.pending = null;
  }
}

/** The element a key went to is one the person types into: a text field, a select, an editable element, or the
 * rig terminal (xterm's hidden textarea, and anything inside the terminal). */
export function isTyping(target: unknown): boolean {
  if (typeof target !== "object" || target === null) return false;
  const el = target as { tagName?: unknown; isContentEditable?: unknown; closest?: (s: string) => unknown };
  const tag = typeof el.tagName === "string" ? el.tagName.toUpperCase() : "";
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return true;
  if (el.isContentEditable === true) return true;
  return typeof el.closest === "function" && !!el.closest(".xterm, [contenteditable=''], [contenteditable='true']");
}

/** The workspace a route is about, if any. */
export function workspaceOf(route: Route): string | null {
  return "workspaceId" in route ? route.workspaceId : null;
}

/** Where a go-to action leads; null when it needs a workspace and none is current. */
export function pathFor(action: Action, workspaceId: string | null): string | null {
  if (action === "home") return "/";
  if (!workspaceId) return null;
  if (action === "workspaceSettings") return workspaceSettingsPath(workspaceId);
  if (action === "pipelines") return pipelinesPath(workspaceId);
  if (action === "audit") return auditPath(workspaceId);
  return null;
}

/** The attribute a screen puts on its primary search, filter or message box, for `/`. */
export const FOCUS_TARGET = "data-shortcut-focus";

function focusPrimary(): boolean {
  const el = document.querySelector<HTMLElement>(`main [${FOCUS_TARGET}]`);
  if (!el) return false;
  el.focus();
  return true;
}

/** Listen for the shortcuts while the shell is shown. The current workspace is the route's, or the last one the
 * person visited in this tab (so `g p` from the home screen returns to where they were). */
export function useShortcuts(route: Route, openHelp: () => void): void {
  const lastWorkspace = useRef<string | null>(null);
  const current = workspaceOf(route);
  if (current) lastWorkspace.current = current;

  useEffect(() => {
    const keys = new KeySequence();
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
      if (isTyping(e.target) || document.querySelector("dialog[open]")) {
        keys.reset();
        return;
      }
      const action = keys.feed(e.key, e.timeStamp || performance.now());
      if (action === null) {
        if (keys.waiting) e.preventDefault();
        return;
      }
      if (action === "help") {
        e.preventDefault();
        openHelp();
      } else if (action === "focus") {
        if (focusPrimary()) e.preventDefault();
      } else {
        const path = pathFor(action, lastWorkspace.current);
        if (path) {
          e.preventDefault();
          navigate(path);
        }
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [openHelp]);
}
