/** The rig's HTTP lanes (rigs.md: bytes travel over HTTP, not the RPC socket): the file lane
 * `/rig/files/<rigId>` and the clipboard lane `/rig/clipboard/<rigId>`, both signed by the URL `rig.fileLaneUrl`
 * mints, with the device credential as a bearer. */
import { loadToken } from "../../../auth/credential";
import type { Write } from "../../../data/mutations";

export interface Landed {
  name: string;
  path: string;
  size: number;
}

export interface DropReply {
  /** How the rig was told: a page's drop event or file input, a desktop's clipboard, or not at all. */
  delivery: "dropEvent" | "fileInput" | "landed" | "clipboard";
  note: string | null;
  directory: string;
  files: Landed[];
}

/** An error a lane answered: its code (`consent_required`, `refused`...) and its one sentence. */
export class LaneError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function laneError(response: Response): Promise<LaneError> {
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    return new LaneError(
      body.error?.code ?? "internal",
      body.error?.message ?? `the server answered ${response.status}`,
      response.status,
    );
  } catch {
    return new LaneError("internal", `the server answered ${response.status}`, response.status);
  }
}

/** Call one of the rig's HTTP lanes; a refusal is thrown as a `LaneError`. */
export async function callLane(
  call: Write,
  workspaceId: string,
  rigId: string,
  lane: "files" | "clipboard",
  init: RequestInit = {},
  query: Record<string, string> = {},
): Promise<Response> {
  const minted = await call("rig.fileLaneUrl", { workspace_id: workspaceId, rigId });
  const params = new URLSearchParams({ ...query, sig: minted.sig });
  const path = `/rig/${lane}/${encodeURIComponent(rigId)}?${params.toString()}`;
  const headers = {
    ...(init.headers as Record<string, string> | undefined),
    Authorization: `Bearer ${loadToken(window.localStorage) ?? ""}`,
  };
  const response = await fetch(path, { ...init, headers });
  if (!response.ok) throw await laneError(response);
  return response;
}

/** Drop files into the rig; with a point (the page's CSS pixels) a browser rig's page is told where (a desktop
 * takes none: the files reach it on its clipboard). */
export async function dropFiles(
  call: Write,
  workspaceId: string,
  rigId: string,
  files: File[],
  point?: { x: number; y: number },
): Promise<DropReply> {
  const form = new FormData();
  if (point) {
    form.append("x", String(point.x));
    form.append("y", String(point.y));
  }
  for (const f of files) form.append("files", f, f.name);
  const response = await callLane(call, workspaceId, rigId, "files", { method: "POST", body: form });
  const body = (await response.json()) as Partial<DropReply>;
  return {
    delivery: body.delivery ?? "landed",
    note: body.note ?? null,
    directory: body.directory ?? "",
    files: Array.isArray(body.files) ? body.files : [],
  };
}

/** A guest path as the file lane's `p` (base64url of its UTF-8, unpadded). */
export function lanePath(path: string): string {
  let raw = "";
  for (const byte of new TextEncoder().encode(path)) raw += String.fromCharCode(byte);
  return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Read one file out of the rig (an observation: allowed while someone else holds control). */
export async function readFile(call: Write, workspaceId: string, rigId: string, path: string): Promise<Blob> {
  const response = await callLane(call, workspaceId, rigId, "files", {}, { p: lanePath(path) });
  return response.blob();
}
