/** The workspace's repositories (register from a path on the server or a clone URL, remove) and the worktrees
 * checked out of them, with what each belongs to: check one out for a space or a ticket, release an owner's
 * worktrees, or sweep the workspace (what a sweep would release is shown before it does). */
import { useId, useState, type FormEvent } from "react";
import type { CleanupView, RepoView, WorktreesCleanupArgs, WorktreeView } from "../../generated/ops";
import { Link } from "../../Link";
import { spacePath, ticketPath } from "../../router";
import { codePath } from "../code/codeView";
import { ConfirmButton } from "../../components/ConfirmButton";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

/** Work the server is doing for this form (a clone, a checkout): it has no measurable progress, so the bar runs. */
function Working({ what }: { what: string }) {
  return (
    <p className="working" role="status">
      <progress aria-label={what} /> {what}
    </p>
  );
}

function RegisterRepo({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [from, setFrom] = useState<"url" | "path">("url");
  const [source, setSource] = useState("");
  const [name, setName] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const where = from === "url" ? { url: source } : { path: source };
    const args = { workspace_id: workspaceId, ...where, name: name || null };
    if (await action.run(() => write("repos.register", args))) {
      setSource("");
      setName("");
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
        {action.busy && <Working what={from === "url" ? "Cloning the repository…" : "Registering the repository…"} />}
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function RepoRow({ workspaceId, repo, admin }: { workspaceId: string; repo: RepoView; admin: boolean }) {
  const write = useWrite();
  const action = useAction();
  const remove = async () => {
    const args = { workspace_id: workspaceId, repoId: repo.id };
    await action.run(() => write("repos.remove", args));
  };
  return (
    <li>
      <div className="row-main">
        <strong>{repo.name}</strong>
        <span className="badge">{repo.defaultBranch}</span>
        <Link href={codePath(workspaceId, repo.id)} aria-label={`Code search in ${repo.name}`}>
          Code search
        </Link>
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

function AddWorktree({ workspaceId, repos }: { workspaceId: string; repos: RepoView[] }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [repoId, setRepoId] = useState("");
  const [branch, setBranch] = useState("");
  const [ownerKind, setOwnerKind] = useState<"space" | "ticket">("space");
  const [owner, setOwner] = useState("");
  const spaces = useRead("spaces.list", { workspace_id: workspaceId });
  const tickets = useRead("tickets.list", { workspace_id: workspaceId });
  const repo = repos.find((r) => r.id === repoId) ?? repos[0];
  const choices =
    ownerKind === "space"
      ? (spaces.data?.spaces ?? []).map((sp) => [sp.id, sp.title] as const)
      : (tickets.data?.tickets ?? []).map((t) => [t.id, t.title] as const);
  const chosen = choices.some(([key]) => key === owner) ? owner : (choices[0]?.[0] ?? "");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!repo || !chosen) return;
    const spec = branch.trim() ? `${repo.id}@${branch.trim()}` : repo.id;
    const ownerArg = ownerKind === "space" ? { spaceId: chosen } : { ticketId: chosen };
    if (await action.run(() => write("worktrees.add", { workspace_id: workspaceId, repo: spec, ...ownerArg }))) {
      setBranch("");
    }
  };
  return (
    <details className="adder">
      <summary>Check out a worktree</summary>
      <form className="stack-form" onSubmit={submit} aria-label="New worktree">
        <div className="field">
          <label htmlFor={`${id}-repo`}>Repository</label>
          <select id={`${id}-repo`} value={repo?.id ?? ""} onChange={(e) => setRepoId(e.target.value)}>
            {repos.map((r) => (
              <option key={r.id} value={r.id}>
                {r.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-branch`}>Branch</label>
          <input
            id={`${id}-branch`}
            value={branch}
            spellCheck={false}
            placeholder={repo ? repo.defaultBranch : ""}
            aria-describedby={`${id}-branch-hint`}
            onChange={(e) => setBranch(e.target.value)}
          />
          <p className="hint" id={`${id}-branch-hint`}>
            Empty: the repository's default branch.
          </p>
        </div>
        <fieldset>
          <legend>For</legend>
          <label className="check">
            <input
              type="radio"
              name={`${id}-kind`}
              checked={ownerKind === "space"}
              onChange={() => setOwnerKind("space")}
            />{" "}
            a space (in its working folder)
          </label>
          <label className="check">
            <input
              type="radio"
              name={`${id}-kind`}
              checked={ownerKind === "ticket"}
              onChange={() => setOwnerKind("ticket")}
            />{" "}
            a ticket
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor={`${id}-owner`}>{ownerKind === "space" ? "Space" : "Ticket"}</label>
          <select id={`${id}-owner`} value={chosen} onChange={(e) => setOwner(e.target.value)}>
            {choices.map(([key, title]) => (
              <option key={key} value={key}>
                {title}
              </option>
            ))}
          </select>
          {choices.length === 0 && <p className="hint">No {ownerKind === "space" ? "spaces" : "tickets"} yet.</p>}
        </div>
        <button type="submit" disabled={action.busy || !repo || !chosen}>
          Check out
        </button>
        {action.busy && <Working what="Checking out the worktree…" />}
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

/** The owner a worktree is released with; a pull request's editor is released where its PR is reviewed. */
function ownerArgs(tree: WorktreeView): Partial<WorktreesCleanupArgs> | null {
  if (tree.spaceId) return { spaceId: tree.spaceId };
  if (tree.ticketId) return { ticketId: tree.ticketId };
  return null;
}

function WorktreeRow({ workspaceId, tree, repoName, canChange }: {
  workspaceId: string;
  tree: WorktreeView;
  repoName: string;
  canChange: boolean;
}) {
  const write = useWrite();
  const action = useAction();
  const owner = ownerArgs(tree);
  const release = async () => {
    if (!owner) return;
    await action.run(() => write("worktrees.cleanup", { workspace_id: workspaceId, ...owner }));
  };
  const whose = tree.spaceId ? "space" : "ticket";
  return (
    <li>
      <div className="row-main">
        <strong>{repoName}</strong>
        <code>{tree.workBranch}</code>
        <span className="hint">
          from {tree.branch}, for <Owner workspaceId={workspaceId} tree={tree} />, since {when(tree.createdAt)}
        </span>
      </div>
      {canChange && owner && (
        <div className="row-actions">
          <ConfirmButton
            label="Release"
            name={`Release worktree ${repoName} ${tree.workBranch}`}
            question={`Release the ${whose}'s worktrees (its checkouts are removed; commits stay on their branches)?`}
            busy={action.busy}
            onConfirm={() => void release()}
          />
        </div>
      )}
      {action.busy && <Working what="Releasing…" />}
      <Refusal error={action.error} />
    </li>
  );
}

/** The sweep: first what it would release (a dry run), then, when confirmed, releasing exactly that. */
function Sweep({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const [preview, setPreview] = useState<CleanupView | null>(null);
  const [done, setDone] = useState<CleanupView | null>(null);
  const look = async () => {
    setDone(null);
    const found = await action.run(() => write("worktrees.cleanup", { workspace_id: workspaceId, dryRun: true }));
    setPreview(found ?? null);
  };
  const sweep = async () => {
    const swept = await action.run(() => write("worktrees.cleanup", { workspace_id: workspaceId }));
    setPreview(null);
    if (swept) setDone(swept);
  };
  const empty = preview && preview.worktrees.length === 0 && preview.folders.length === 0;
  return (
    <div className="sweep" aria-label="Clean up" role="group">
      <button type="button" className="secondary" disabled={action.busy} onClick={() => void look()}>
        Find what to clean up
      </button>
      {preview && (
        <div role="status">
          {empty ? (
            <p>Nothing to clean up: no worktree lost its folder or space, and no folder lost its space.</p>
          ) : (
            <>
              <p>{preview.summary}</p>
              <ul className="paths" aria-label="To be released">
                {[...preview.worktrees, ...preview.folders].map((p) => (
                  <li key={p}>
                    <code className="wrap">{p}</code>
                  </li>
                ))}
              </ul>
              <ConfirmButton
                label="Clean up"
                name="Clean up these"
                question="Release these worktrees and remove these folders?"
                busy={action.busy}
                onConfirm={() => void sweep()}
              />
            </>
          )}
        </div>
      )}
      {done && <p role="status">Cleaned up: {done.summary}</p>}
      {action.busy && <Working what="Cleaning up…" />}
      <Refusal error={action.error} />
    </div>
  );
}

export function Repos({ workspaceId, admin, member = admin }: { workspaceId: string; admin: boolean; member?: boolean }) {
  const repos = useRead("repos.list", { workspace_id: workspaceId });
  const trees = useRead("worktrees.list", { workspace_id: workspaceId });
  const list = repos.data?.repos;
  const names = new Map((list ?? []).map((r) => [r.id, r.name]));
  const worktrees = trees.data?.worktrees;
  return (
    <section aria-labelledby="repos-title" className="panel" id="repos">
      <h2 id="repos-title">Repositories and worktrees</h2>
      <LoadedList
        noun="repositories"
        items={list}
        error={repos.error}
        row={(r) => <RepoRow key={r.id} workspaceId={workspaceId} repo={r} admin={admin} />}
      />
      {admin && <RegisterRepo workspaceId={workspaceId} />}
      <h3>Worktrees</h3>
      <LoadedList
        noun="worktrees"
        items={worktrees}
        error={trees.error}
        empty="No worktrees are checked out."
        row={(w) => (
          <WorktreeRow
            key={w.id}
            workspaceId={workspaceId}
            tree={w}
            repoName={names.get(w.repoId) ?? w.repoId}
            canChange={member}
          />
        )}
      />
      {member && list && list.length > 0 && <AddWorktree workspaceId={workspaceId} repos={list} />}
      {member && <Sweep workspaceId={workspaceId} />}
    </section>
  );
}
