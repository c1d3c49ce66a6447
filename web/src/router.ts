/** The paths of CONTRACTS.md section 9 this client knows, and navigation without reloading the page. A few
 * lines of history API instead of a router library keep the first load small; each screen is one route here. */
import { useSyncExternalStore } from "react";

export type Route =
  | { name: "connect"; next: string | null }
  | { name: "home" }
  | { name: "workspace"; workspaceId: string; section: WorkspaceSection }
  | { name: "ticket"; workspaceId: string; ticketId: string }
  | { name: "audit"; workspaceId: string }
  | { name: "workspaceSettings"; workspaceId: string }
  | { name: "pipelines"; workspaceId: string }
  | { name: "pipelineRun"; workspaceId: string; runId: string }
  | { name: "serverSettings"; section: ServerSection }
  | { name: "devices" }
  | { name: "space"; workspaceId: string; spaceId: string }
  | { name: "rig"; workspaceId: string; rigId: string }
  | { name: "code"; workspaceId: string; repoId: string; search: string }
  | { name: "notFound"; path: string };

/** The sections of a workspace's home, each at its own path: `/workspaces/<id>` is the overview, the others
 * `/workspaces/<id>/<section>` (beside section 9's `/workspaces/<id>/spaces/<spaceId>` and
 * `/workspaces/<id>/tickets/<ticketId>`, which stay the space and the ticket). */
export const WORKSPACE_SECTIONS = [
  "overview",
  "spaces",
  "tickets",
  "agents",
  "skills",
  "meetings",
  "repos",
  "members",
] as const;
export type WorkspaceSection = (typeof WORKSPACE_SECTIONS)[number];
const WORKSPACE = /^\/workspaces\/([^/]+)(?:\/(spaces|tickets|agents|skills|meetings|repos|members))?\/?$/;
const TICKET = /^\/workspaces\/([^/]+)\/tickets\/([^/]+)\/?$/;
const AUDIT = /^\/workspaces\/([^/]+)\/audit\/?$/;
const WORKSPACE_SETTINGS = /^\/settings\/workspaces\/([^/]+)\/?$/;
const PIPELINES = /^\/workspaces\/([^/]+)\/pipelines\/?$/;
const SPACE = /^\/workspaces\/([^/]+)\/spaces\/([^/]+)\/?$/;
const RIG = /^\/workspaces\/([^/]+)\/rigs\/([^/]+)\/?$/;
// A repository's code search page (section 9 names no path for it; it lives under the repositories section).
const CODE = /^\/workspaces\/([^/]+)\/repos\/([^/]+)\/code\/?$/;
const PIPELINE_RUN = /^\/workspaces\/([^/]+)\/pipelines\/runs\/([^/]+)\/?$/;

/** The server owner's settings screens: `/settings/server/<section>` (users is this client's own path). */
export const SERVER_SECTIONS = ["sso", "rigs", "users", "storage"] as const;
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
  try {
    const ws = WORKSPACE.exec(pathname);
    if (ws?.[1]) {
      const section = (ws[2] as WorkspaceSection | undefined) ?? "overview";
      return { name: "workspace", workspaceId: decodeURIComponent(ws[1]), section };
    }
    const ticket = TICKET.exec(pathname);
    if (ticket?.[1] && ticket[2]) {
      return { name: "ticket", workspaceId: decodeURIComponent(ticket[1]), ticketId: decodeURIComponent(ticket[2]) };
    }
    const audit = AUDIT.exec(pathname);
    if (audit?.[1]) return { name: "audit", workspaceId: decodeURIComponent(audit[1]) };
    const settings = WORKSPACE_SETTINGS.exec(pathname);
    if (settings?.[1]) return { name: "workspaceSettings", workspaceId: decodeURIComponent(settings[1]) };
    const pipelines = PIPELINES.exec(pathname);
    if (pipelines?.[1]) return { name: "pipelines", workspaceId: decodeURIComponent(pipelines[1]) };
    const run = PIPELINE_RUN.exec(pathname);
    if (run?.[1] && run[2]) {
      return { name: "pipelineRun", workspaceId: decodeURIComponent(run[1]), runId: decodeURIComponent(run[2]) };
    }
    const space = SPACE.exec(pathname);
    if (space?.[1] && space[2]) {
      return { name: "space", workspaceId: decodeURIComponent(space[1]), spaceId: decodeURIComponent(space[2]) };
    }
    const code = CODE.exec(pathname);
    if (code?.[1] && code[2]) {
      return { name: "code", workspaceId: decodeURIComponent(code[1]), repoId: decodeURIComponent(code[2]), search };
    }
    const rig = RIG.exec(pathname);
    if (rig?.[1] && rig[2]) {
      return { name: "rig", workspaceId: decodeURIComponent(rig[1]), rigId: decodeURIComponent(rig[2]) };
    }
  } catch {
    // A malformed %-escape names nothing.
  }
  return { name: "notFound", path: pathname };
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

export function workspaceSectionPath(workspaceId: string, section: WorkspaceSection): string {
  return section === "overview" ? workspacePath(workspaceId) : `${workspacePath(workspaceId)}/${section}`;
}

export function ticketPath(workspaceId: string, ticketId: string): string {
  return `${workspacePath(workspaceId)}/tickets/${encodeURIComponent(ticketId)}`;
}

/** The audit log and the domain events (section 9 names no path for them; they live under the workspace). */
export function auditPath(workspaceId: string): string {
  return `${workspacePath(workspaceId)}/audit`;
}

export function workspaceSettingsPath(workspaceId: string): string {
  return `/settings/workspaces/${encodeURIComponent(workspaceId)}`;
}

export function pipelinesPath(workspaceId: string): string {
  return `${workspacePath(workspaceId)}/pipelines`;
}

export function pipelineRunPath(workspaceId: string, runId: string): string {
  return `${pipelinesPath(workspaceId)}/runs/${encodeURIComponent(runId)}`;
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
