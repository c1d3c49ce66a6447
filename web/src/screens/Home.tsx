/** The signed-in home (`/`): your workspaces, each a link to its page, and creating a new one. */
import { useId, useState, type FormEvent } from "react";
import { workspaceRoleLabel } from "../labels";
import { Link } from "../Link";
import { RpcError } from "../rpc/errors";
import { useCall, useRpc } from "../rpc/hooks";
import { navigate, workspacePath } from "../router";

function CreateWorkspace() {
  const client = useRpc();
  const id = useId();
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const made = await client.call("workspaces.create", { name });
      navigate(workspacePath(made.id));
    } catch (err) {
      setError(err instanceof RpcError ? err.message : String(err));
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New workspace</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} value={name} maxLength={200} required onChange={(e) => setName(e.target.value)} />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy || !name.trim()}>
        Create workspace
      </button>
    </form>
  );
}

export function Home() {
  const workspaces = useCall("workspaces.list", {});
  return (
    <>
      <h1>Workspaces</h1>
      {workspaces.error && (
        <p className="error" role="alert">
          {workspaces.error.message}
        </p>
      )}
      {workspaces.data === undefined ? (
        !workspaces.error && <p aria-busy="true">Loading workspaces…</p>
      ) : workspaces.data.length === 0 ? (
        <p>You are not a member of any workspace yet. Create one, or ask a workspace admin for an invite.</p>
      ) : (
        <ul className="list" aria-label="Your workspaces">
          {workspaces.data.map((w) => (
            <li key={w.id}>
              <Link href={workspacePath(w.id)}>{w.name}</Link>
              <span className="badge">{workspaceRoleLabel(w.role)}</span>
            </li>
          ))}
        </ul>
      )}
      <CreateWorkspace />
    </>
  );
}
