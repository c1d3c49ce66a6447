/** The paths of CONTRACTS.md section 9 this client knows, and navigation without reloading the page. A few
 * lines of history API instead of a router library keep the first load small; each screen is one route here. */
import { useSyncExternalStore } from "react";

export type Route =
  | { name: "connect"; next: string | null }
  | { name: "home" }
  | { name: "workspace"; workspaceId: string }
  | { name: "serverSettings"; section: ServerSection }
  | { name: "devices" }
  | { name: "notFound"; path: string };

const WORKSPACE = /^\/workspaces\/([^/]+)\/?$/;

/** The server owner's settings screens: `/settings/server/<section>` (users is this client's own path). */
export const SERVER_SECTIONS = ["sso", "rigs", "users"] as const;
export type ServerSection = (typeof SERVER_SECTIONS)[number];
const SERVER_SETTINGS = /^\/settings\/server(?:\/([a-z]+))?\/?$/;

/** A path the app may go to after connecting: same-origin and absolute, never `//host` or a scheme. */
export function safeNext(next: string | null): string | null {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return null;
  return next;
}

export function parseRoute(pathname: string, search = ""): Route {
  if (pathname === "/" || pathname === "") return { name: "home" };
  if (pathname === "/connect" || pathname === "/connect/") {
    return { name: "connect", next: safeNext(new URLSearchParams(search).get("next")) };
  }
  const server = SERVER_SETTINGS.exec(pathname);
  if (server) {
    const section = SERVER_SECTIONS.find((s) => s === (server[1] ?? "sso"));
    return section ? { name: "serverSettings", section } : { name: "notFound", path: pathname };
  }
  if (pathname === "/settings/devices" || pathname === "/settings/devices/") return { name: "devices" };
  const ws = WORKSPACE.exec(pathname);
  if (ws?.[1]) {
    try {
      return { name: "workspace", workspaceId: decodeURIComponent(ws[1]) };
    } catch {
      return { name: "notFound", path: pathname };
    }
  }
  return { name: "notFound", path: pathname };
}

export function workspacePath(workspaceId: string): string {
  return `/workspaces/${encodeURIComponent(workspaceId)}`;
}

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

export function navigate(path: string, replace = false): void {
  if (replace) window.history.replaceState(null, "", path);
  else window.history.pushState(null, "", path);
  notify();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener("popstate", listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("popstate", listener);
  };
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

export function useLocation(): string {
  return useSyncExternalStore(subscribe, snapshot);
}
