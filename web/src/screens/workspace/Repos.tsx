/** The workspace's repositories (register from a path on the server or a clone URL, remove) and the worktrees
 * checked out of them, with what each belongs to. */
import { useId, useState, type FormEvent } from "react";
import type { RepoView, WorktreeView } from "../../generated/ops";
import { Link } from "../../Link";
import { useCall, useRpc } from "../../rpc/hooks";
import { spacePath, ticketPath } from "../../router";
import { ConfirmButton, Refusal, useAction, when } from "./common";

function RegisterRepo({ workspaceId, onRegistered }: { workspaceId: string; onRegistered(): void }) {
  const client = useRpc();
  const action = useAction();
  const id = useId();
  const [from, setFrom] = useState<"url" | "path">("url");
  const [source, setSource] = useState("");
  const [name, setName] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const where = from === "url" ? { url: source } : { path: source };
    const args = { workspace_id: workspaceId, ...where, name: name || null };
    if (await action.run(() => client.call("repos.register", args))) {
      setSource("");
      setName("");
      onRegistered();
    }
  };
  return (
    <details className="adder">
      <summary>Register a repository</summary>
      <form className="stack-form" onSubmit={submit} aria-label="Register repository">
        <fieldset>
          <legend>From</legend>
          <label className="check">
            <input type="radio" name={`${id}-from`} checked={from === "url"} onChange={() => setFrom("url")} /> a clone
            URL
          </label>
          <label className="check">
            <input type="radio" name={`${id}-from`} checked={from === "path"} onChange={() => setFrom("path")} /> a git
            repository on the server
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor={`${id}-src`}>{from === "url" ? "Clone URL" : "Path on the server"}</label>
          <input
            id={`${id}-src`}
            value={source}
            required
            spellCheck={false}
            onChange={(e) => setSource(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-name`}>Name (optional)</label>
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <button type="submit" disabled={action.busy || !source.trim()}>
          Register
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function RepoRow({ workspaceId, repo, admin, onChanged }: {
  workspaceId: string;
  repo: RepoView;
  admin: boolean;
  onChanged(): void;
}) {
  const client = useRpc();
  const action = useAction();
  const remove = async () => {
    const args = { workspace_id: workspaceId, repoId: repo.id };
    if (await action.run(() => client.call("repos.remove", args))) onChanged();
  };
  return (
    <li>
      <div className="row-main">
        <strong>{repo.name}</strong>
        <span className="badge">{repo.defaultBranch}</span>
        <span className="hint wrap">
          {repo.sourceKind}: {repo.source}
        </span>
      </div>
      {admin && (
        <div className="row-actions">
          <ConfirmButton
            label="Remove"
            name={`Remove repository ${repo.name}`}
            question={`Forget “${repo.name}” and delete its clone?`}
            busy={action.busy}
            onConfirm={() => void remove()}
          />
        </div>
      )}
      <Refusal error={action.error} />
    </li>
  );
}

function Owner({ workspaceId, tree }: { workspaceId: string; tree: WorktreeView }) {
  if (tree.spaceId) return <Link href={spacePath(workspaceId, tree.spaceId)}>space</Link>;
  if (tree.ticketId) return <Link href={ticketPath(workspaceId, tree.ticketId)}>ticket</Link>;
  if (tree.prKey) return <span>pull request {tree.prKey}</span>;
  return <span>nothing</span>;
}

export function Repos({ workspaceId, admin }: { workspaceId: string; admin: boolean }) {
  const [bump, setBump] = useState(0);
  const reload = () => setBump((n) => n + 1);
  const repos = useCall("repos.list", { workspace_id: workspaceId }, bump);
  const trees = useCall("worktrees.list", { workspace_id: workspaceId }, bump);
  const list = repos.data?.repos;
  const names = new Map((list ?? []).map((r) => [r.id, r.name]));
  const worktrees = trees.data?.worktrees;
  return (
    <section aria-labelledby="repos-title" className="panel" id="repos">
      <h2 id="repos-title">Repositories and worktrees</h2>
      <Refusal error={repos.error} />
      {list === undefined ? (
        !repos.error && <p aria-busy="true">Loading repositories…</p>
      ) : list.length === 0 ? (
        <p>No repositories yet.</p>
      ) : (
        <ul className="list" aria-label="Repositories">
          {list.map((r) => (
            <RepoRow key={r.id} workspaceId={workspaceId} repo={r} admin={admin} onChanged={reload} />
          ))}
        </ul>
      )}
      {admin && <RegisterRepo workspaceId={workspaceId} onRegistered={reload} />}
      <h3>Worktrees</h3>
      <Refusal error={trees.error} />
      {worktrees === undefined ? (
        !trees.error && <p aria-busy="true">Loading worktrees…</p>
      ) : worktrees.length === 0 ? (
        <p>No worktrees are checked out.</p>
      ) : (
        <ul className="list" aria-label="Worktrees">
          {worktrees.map((w) => (
            <li key={w.id}>
              <div className="row-main">
                <strong>{names.get(w.repoId) ?? w.repoId}</strong>
                <code>{w.workBranch}</code>
                <span className="hint">
                  from {w.branch}, for <Owner workspaceId={workspaceId} tree={w} />, since {when(w.createdAt)}
                </span>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
