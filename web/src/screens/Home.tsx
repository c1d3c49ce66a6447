/** The signed-in home (`/`): your workspaces, each a link to its page, and creating a new one. */
import { useId, useState, type FormEvent } from "react";
import { workspaceRoleLabel } from "../labels";
import { Link } from "../Link";
import { Refusal } from "../components/Outcome";
import { useAction, useWrite } from "../data/mutations";
import { useRead } from "../data/queries";
import { navigate, workspacePath } from "../router";
import { ImportWorkspace } from "./transfer/Transfer";

function CreateWorkspace() {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [name, setName] = useState("");
  // Busy until the new workspace's page replaces this one.
  const [leaving, setLeaving] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const made = await action.run(() => write("workspaces.create", { name }));
    if (made) {
      setLeaving(true);
      navigate(workspacePath(made.id));
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New workspace</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} value={name} maxLength={200} required onChange={(e) => setName(e.target.value)} />
      <Refusal error={action.error} />
      <button type="submit" disabled={action.busy || leaving || !name.trim()}>
        Create workspace
      </button>
    </form>
  );
}

export function Home() {
  const workspaces = useRead("workspaces.list", {});
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
      <ImportWorkspace />
    </>
  );
}
