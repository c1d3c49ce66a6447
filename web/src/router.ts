/** The paths of CONTRACTS.md section 9 this client knows, and navigation without reloading the page. A few
 * lines of history API instead of a router library keep the first load small; each screen is one route here. */
import { useSyncExternalStore } from "react";

export type Route =
  | { name: "connect"; next: string | null }
  | { name: "home" }
  | { name: "workspace"; workspaceId: string }
  | { name: "space"; workspaceId: string; spaceId: string }
  | { name: "rig"; workspaceId: string; rigId: string }
  | { name: "notFound"; path: string };

const WORKSPACE = /^\/workspaces\/([^/]+)\/?$/;
const SPACE = /^\/workspaces\/([^/]+)\/spaces\/([^/]+)\/?$/;
const RIG = /^\/workspaces\/([^/]+)\/rigs\/([^/]+)\/?$/;

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
  const ws = WORKSPACE.exec(pathname);
  if (ws?.[1]) {
    try {
      return { name: "workspace", workspaceId: decodeURIComponent(ws[1]) };
    } catch {
      return { name: "notFound", path: pathname };
    }
  }
  const space = SPACE.exec(pathname);
  if (space?.[1] && space[2]) {
    const [workspaceId, spaceId] = [decoded(space[1]), decoded(space[2])];
    if (workspaceId !== null && spaceId !== null) return { name: "space", workspaceId, spaceId };
  }
  const rig = RIG.exec(pathname);
  if (rig?.[1] && rig[2]) {
    const [workspaceId, rigId] = [decoded(rig[1]), decoded(rig[2])];
    if (workspaceId !== null && rigId !== null) return { name: "rig", workspaceId, rigId };
  }
  return { name: "notFound", path: pathname };
}

function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export function spacePath(workspaceId: string, spaceId: string): string {
  return `${workspacePath(workspaceId)}/spaces/${encodeURIComponent(spaceId)}`;
}

export function rigPath(workspaceId: string, rigId: string): string {
  return `${workspacePath(workspaceId)}/rigs/${encodeURIComponent(rigId)}`;
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
