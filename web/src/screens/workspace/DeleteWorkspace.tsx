/** The danger zone of a workspace's settings: deleting the workspace, confirmed by typing its name (the server checks
 * the name again: `workspaces.delete {workspace_id, confirm}`). Shown to its owners and admins. */
import { useId, useState, type FormEvent } from "react";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { navigate } from "../../router";

export function DeleteWorkspace({ workspaceId, name }: { workspaceId: string; name: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [typed, setTyped] = useState("");
  const matches = typed === name;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!matches) return;
    const done = await action.run(() => write("workspaces.delete", { workspace_id: workspaceId, confirm: typed }));
    if (done) navigate("/", true);
  };
  return (
    <section aria-labelledby={`${id}-title`} className="panel danger-zone" id="danger-zone">
      <h2 id={`${id}-title`}>Danger zone</h2>
      <p className="hint">
        Deleting the workspace stops its rigs, pipeline runs, agent runs and chat connection, revokes its invites and
        the credentials limited to it, and removes its messages, tickets, repos, worktrees, files and chat credentials.
        It cannot be undone: take a backup first if you may want any of it back. The server keeps a record of who
        deleted it and when.
      </p>
      <form className="inline-form" onSubmit={submit} aria-label="Delete workspace">
        <div className="field">
          <label htmlFor={`${id}-confirm`}>
            Type the workspace's name, <strong>{name}</strong>, to confirm
          </label>
          <input
            id={`${id}-confirm`}
            value={typed}
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setTyped(e.target.value)}
          />
        </div>
        <button type="submit" className="danger" disabled={!matches || action.busy}>
          Delete workspace
        </button>
      </form>
      {action.busy && <p role="status">Deleting {name}…</p>}
      <Refusal error={action.error} />
    </section>
  );
}
