/** The workspace's spaces: their kind and mode, hidden ones only on request, and create, rename, archive. */
import { useId, useState, type FormEvent } from "react";
import type { SpaceView } from "../../generated/ops";
import { spaceKindLabel, spaceModeLabel } from "../../labels";
import { Link } from "../../Link";
import { spacePath } from "../../router";
import { ConfirmButton } from "../../components/ConfirmButton";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

const MODES = ["chat", "review", "plan"] as const;
/** The server's limit on a space's title. */
const TITLE_MAX = 48;

function CreateSpace({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const [title, setTitle] = useState("");
  const [mode, setMode] = useState<string>("chat");
  const [hidden, setHidden] = useState(false);
  const id = useId();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const args = { workspace_id: workspaceId, title, mode, hidden };
    const made = await action.run(() => write("spaces.create", args));
    if (made) {
      setTitle("");
      setHidden(false);
    }
  };
  return (
    <form className="inline-form" onSubmit={submit} aria-label="New space">
      <div className="field grow">
        <label htmlFor={`${id}-title`}>Title</label>
        <input
          id={`${id}-title`}
          value={title}
          maxLength={TITLE_MAX}
          required
          onChange={(e) => setTitle(e.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-mode`}>Mode</label>
        <select id={`${id}-mode`} value={mode} onChange={(e) => setMode(e.target.value)}>
          {MODES.map((m) => (
            <option key={m} value={m}>
              {spaceModeLabel(m)}
            </option>
          ))}
        </select>
      </div>
      <label className="check">
        <input type="checkbox" checked={hidden} onChange={(e) => setHidden(e.target.checked)} /> Hidden
      </label>
      <button type="submit" disabled={action.busy || !title.trim()}>
        Create space
      </button>
      <Refusal error={action.error} />
    </form>
  );
}

function SpaceRow({ workspaceId, space }: { workspaceId: string; space: SpaceView }) {
  const write = useWrite();
  const action = useAction();
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState(space.title);
  const id = useId();
  const rename = async (e: FormEvent) => {
    e.preventDefault();
    const done = await action.run(() =>
      write("spaces.rename", { workspace_id: workspaceId, spaceId: space.id, title }),
    );
    if (done) setRenaming(false);
  };
  const archive = async () => {
    await action.run(() => write("spaces.archive", { workspace_id: workspaceId, spaceId: space.id }));
  };
  const provisioning = space.provisioning.state;
  return (
    <li className="space-row">
      <div className="row-main">
        <Link href={spacePath(workspaceId, space.id)}>{space.title}</Link>
        <span className="badges">
          <span className="badge" title={`kind: ${space.kind}`}>
            {spaceKindLabel(space.kind)}
          </span>
          <span className="badge" title={`mode: ${space.mode}`}>
            {spaceModeLabel(space.mode)}
          </span>
          {space.hidden && <span className="badge">hidden</span>}
          {space.archivedAt && <span className="badge">archived</span>}
          {provisioning !== "ready" && (
            <span className="badge" title={space.provisioning.error ?? space.provisioning.step ?? undefined}>
              {provisioning}
            </span>
          )}
        </span>
      </div>
      {renaming ? (
        <form className="inline-form" onSubmit={rename} aria-label={`Rename ${space.title}`}>
          <div className="field grow">
            <label htmlFor={`${id}-t`}>New title</label>
            <input
              id={`${id}-t`}
              value={title}
              maxLength={TITLE_MAX}
              required
              autoFocus
              onChange={(e) => setTitle(e.target.value)}
            />
          </div>
          <button type="submit" disabled={action.busy || !title.trim()}>
            Save
          </button>
          <button type="button" className="secondary" onClick={() => setRenaming(false)}>
            Cancel
          </button>
        </form>
      ) : (
        !space.archivedAt && (
          <div className="row-actions">
            <button
              type="button"
              className="secondary"
              aria-label={`Rename ${space.title}`}
              onClick={() => {
                setTitle(space.title);
                setRenaming(true);
              }}
            >
              Rename
            </button>
            <ConfirmButton
              label="Archive"
              name={`Archive ${space.title}`}
              question={`Archive “${space.title}”? It keeps its history but takes no new messages.`}
              busy={action.busy}
              onConfirm={() => void archive()}
            />
          </div>
        )
      )}
      <Refusal error={action.error} />
    </li>
  );
}

export function Spaces({ workspaceId, canChange }: { workspaceId: string; canChange: boolean }) {
  const [showHidden, setShowHidden] = useState(false);
  const [showArchived, setShowArchived] = useState(false);
  const spaces = useRead("spaces.list", {
    workspace_id: workspaceId,
    includeHidden: showHidden,
    includeArchived: showArchived,
  });
  const list = spaces.data?.spaces;
  return (
    <section aria-labelledby="spaces-title" className="panel" id="spaces">
      <h2 id="spaces-title">Spaces</h2>
      <div className="toggles">
        <label className="check">
          <input type="checkbox" checked={showHidden} onChange={(e) => setShowHidden(e.target.checked)} /> Show hidden
          spaces
        </label>
        <label className="check">
          <input type="checkbox" checked={showArchived} onChange={(e) => setShowArchived(e.target.checked)} /> Show
          archived spaces
        </label>
      </div>
      <LoadedList
        noun="spaces"
        items={list}
        error={spaces.error}
        empty={`No spaces${showHidden ? "" : " to show (hidden ones are filtered out)"}.`}
        row={(s) => <SpaceRow key={`${s.id}:${s.updatedAt}`} workspaceId={workspaceId} space={s} />}
      />
      {canChange && <CreateSpace workspaceId={workspaceId} />}
    </section>
  );
}
