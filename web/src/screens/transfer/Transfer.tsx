/** Workspace export and import (bytes travel over HTTP, not the RPC socket): the Export button of a workspace's
 * settings downloads the archive through the signed URL `workspaces.export` mints; the Import form of the
 * workspace list uploads an export to `POST /workspace-transfer/import` with the device credential as a bearer, and
 * opens the new workspace. */
import { useId, useState, type FormEvent } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { loadToken } from "../../auth/credential";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { RpcError } from "../../rpc/errors";
import { navigate, workspacePath } from "../../router";

export const IMPORT_PATH = "/workspace-transfer/import";

/** Starts the download of `url` (an attachment: the page stays). */
function download(url: string) {
  const a = document.createElement("a");
  a.href = url;
  a.rel = "noopener";
  document.body.append(a);
  a.click();
  a.remove();
}

export function ExportWorkspace({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const start = () =>
    void action.run(
      async () => {
        const link = await write("workspaces.export", { workspace_id: workspaceId });
        download(link.url);
        return link;
      },
      "The export is downloading: a tar of the workspace's records and files.",
    );
  return (
    <div className="transfer">
      <p className="hint">
        A tar archive of this workspace's records (JSON lines, one file per table) and files (repositories, spaces,
        worktrees), with a manifest and a README. Chat connections and agents' API keys are not in it. The download
        link is yours alone and works for ten minutes.
      </p>
      <Refusal error={action.error} />
      {action.done && <p role="status">{action.done}</p>}
      <button type="button" onClick={start} disabled={action.busy}>
        Export workspace
      </button>
    </div>
  );
}

async function uploadExport(file: File, name: string): Promise<{ id: string; name: string }> {
  const query = name.trim() ? `?name=${encodeURIComponent(name.trim())}` : "";
  let response: Response;
  try {
    response = await fetch(`${IMPORT_PATH}${query}`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${loadToken(window.localStorage) ?? ""}`,
        "Content-Type": "application/x-tar",
        Accept: "application/json",
      },
      body: file,
    });
  } catch {
    throw new RpcError("unavailable", "The server could not be reached to import the workspace.");
  }
  let body: { id?: unknown; name?: unknown; error?: unknown } = {};
  try {
    body = (await response.json()) as typeof body;
  } catch {
    // an answer without a body: reported by its status below
  }
  if (!response.ok || typeof body.id !== "string") {
    throw body.error ? RpcError.fromWire(body.error) : new RpcError("internal", `the server answered ${response.status}`);
  }
  return { id: body.id, name: typeof body.name === "string" ? body.name : "" };
}

export function ImportWorkspace() {
  const action = useAction();
  const queries = useQueryClient();
  const id = useId();
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [leaving, setLeaving] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    const made = await action.run(() => uploadExport(file, name));
    if (made) {
      setLeaving(true);
      await queries.invalidateQueries({ queryKey: ["workspaces.list"] });
      navigate(workspacePath(made.id));
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Import a workspace</h2>
      <p className="hint">
        Makes a new workspace, yours, from a Hangar workspace export (from this server or another).
      </p>
      <label htmlFor={`${id}-file`}>Export file</label>
      <input
        id={`${id}-file`}
        type="file"
        accept=".tar,application/x-tar"
        required
        onChange={(e) => setFile(e.target.files?.[0] ?? null)}
      />
      <label htmlFor={`${id}-name`}>Name (optional: the exported workspace's name)</label>
      <input id={`${id}-name`} value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
      <Refusal error={action.error} />
      <button type="submit" disabled={action.busy || leaving || !file}>
        {action.busy ? "Importing…" : "Import workspace"}
      </button>
    </form>
  );
}
