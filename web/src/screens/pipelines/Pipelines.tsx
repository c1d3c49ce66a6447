/** The pipelines of a workspace (`/workspaces/<id>/pipelines`): the templates (their triggers, deleting one), the
 * editor, starting a run with a payload, and the runs, kept live by `pipelines.runs.watch`. */
import { useId, useState, type FormEvent } from "react";
import type { RunSummary, TemplateSummary } from "../../generated/ops";
import { Link } from "../../Link";
import { Refusal } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { useWatch } from "../../data/watch";
import { useWorkspace } from "../../data/workspaces";
import { RpcError } from "../../rpc/errors";
import { navigate, pipelineRunPath, workspacePath } from "../../router";
import { StatusBadge } from "./StatusBadge";
import { TemplateEditor } from "./TemplateEditor";
import { Triggers } from "./Triggers";
import "./pipelines.css";
import { parsePayload } from "./payload";

type Editing = { templateId: string | null } | null;

/** The workspace's runs, newest first: read once, then each run's status as its steps change. */
function useRuns(workspaceId: string): { runs: RunSummary[] | null; error: RpcError | null } {
  const args = { workspace_id: workspaceId };
  const list = useRead("pipelines.runs.list", args);
  const watch = useWatch("pipelines.runs.watch", args, {
    onEvent: (event) => {
      // A run started elsewhere (a trigger, another person): the list is fetched again to show it.
      if (!list.data?.runs.some((r) => r.runId === event.runId)) return list.reload();
      list.update((old) =>
        old && { ...old, runs: old.runs.map((r) => (r.runId === event.runId ? { ...r, status: event.status } : r)) },
      );
    },
  });
  return { runs: list.data?.runs ?? null, error: list.error ?? watch.error };
}

function StartRun(props: { workspaceId: string; template: TemplateSummary; onClose(): void }) {
  const write = useWrite();
  const action = useAction();
  const ids = useId();
  const [payload, setPayload] = useState("{}");
  const [dryRun, setDryRun] = useState(false);
  const [invalid, setInvalid] = useState<string | null>(null);
  const problem = invalid ?? action.error?.message ?? null;
  // Busy until the run's page replaces this one.
  const [leaving, setLeaving] = useState(false);
  const busy = action.busy || leaving;
  const start = async (e: FormEvent) => {
    e.preventDefault();
    const parsed = parsePayload(payload);
    setInvalid("problem" in parsed ? parsed.problem : null);
    if ("problem" in parsed) {
      action.clear();
      return;
    }
    const args = { workspace_id: props.workspaceId, templateId: props.template.id, payload: parsed.value, dryRun };
    const started = await action.run(() => write("pipelines.runs.start", args));
    if (started) {
      setLeaving(true);
      navigate(pipelineRunPath(props.workspaceId, started.runId));
    }
  };
  return (
    <form className="card start-run" onSubmit={start} aria-labelledby={`${ids}-title`}>
      <h2 id={`${ids}-title`}>Run {props.template.name || props.template.id}</h2>
      <label htmlFor={`${ids}-payload`}>Payload (JSON object: the trigger payload the steps read)</label>
      <textarea
        id={`${ids}-payload`}
        className="payload"
        value={payload}
        spellCheck={false}
        aria-invalid={problem !== null}
        aria-describedby={problem ? `${ids}-problem` : undefined}
        onChange={(e) => setPayload(e.target.value)}
      />
      <label className="check">
        <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run (bodies
        report what they would do)
      </label>
      {problem && (
        <p className="error" role="alert" id={`${ids}-problem`}>
          {problem}
        </p>
      )}
      <div className="row actions">
        <button type="submit" disabled={busy}>
          {busy ? "Starting…" : "Start run"}
        </button>
        <button type="button" className="secondary" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Deleting a template asks first; what the server answers (a refusal, say) is shown where the person looks. */
function DeleteTemplate(props: { workspaceId: string; template: TemplateSummary; onDeleted(): void; onCancel(): void }) {
  const write = useWrite();
  const action = useAction();
  const ids = useId();
  const name = props.template.name || props.template.id;
  const remove = async () => {
    const args = { workspace_id: props.workspaceId, templateId: props.template.id };
    if ((await action.run(() => write("pipelines.templates.delete", args))) !== undefined) props.onDeleted();
  };
  return (
    <div className="card confirm" role="alertdialog" aria-labelledby={`${ids}-q`} aria-describedby={`${ids}-d`}>
      <p id={`${ids}-q`}>
        <strong>Delete the template {name}?</strong>
      </p>
      <p id={`${ids}-d`} className="hint-inline">
        Its triggers are removed with it; its runs stay, each with the copy of the template it started with.
      </p>
      <Refusal error={action.error} />
      <div className="row actions">
        <button type="button" className="danger" disabled={action.busy} onClick={() => void remove()}>
          Delete {name}
        </button>
        <button type="button" className="secondary" autoFocus onClick={props.onCancel}>
          Keep it
        </button>
      </div>
    </div>
  );
}

export function Pipelines({ workspaceId }: { workspaceId: string }) {
  const { workspace } = useWorkspace(workspaceId);
  const templates = useRead("pipelines.templates.list", { workspace_id: workspaceId });
  const runs = useRuns(workspaceId);
  const [editing, setEditing] = useState<Editing>(null);
  const [starting, setStarting] = useState<TemplateSummary | null>(null);
  const [triggersOf, setTriggersOf] = useState<TemplateSummary | null>(null);
  const [deleting, setDeleting] = useState<TemplateSummary | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const names = new Map((templates.data?.templates ?? []).map((t) => [t.id, t.name || t.id]));

  return (
    <div className="pipelines">
      <p className="crumbs">
        <Link href="/">Workspaces</Link> / <Link href={workspacePath(workspaceId)}>{workspace?.name ?? "Workspace"}</Link>
      </p>
      <h1>Pipelines</h1>
      <section aria-labelledby="templates-title">
        <div className="row">
          <h2 id="templates-title">Templates</h2>
          <button type="button" onClick={() => setEditing({ templateId: null })}>
            New template
          </button>
        </div>
        {templates.error && (
          <p className="error" role="alert">
            {templates.error.message}
          </p>
        )}
        {templates.data === undefined ? (
          !templates.error && <p aria-busy="true">Loading templates…</p>
        ) : templates.data.templates.length === 0 ? (
          <p>No templates yet. Write one with New template.</p>
        ) : (
          <ul className="list" aria-label="Templates">
            {templates.data.templates.map((t) => (
              <li key={t.id}>
                <span>
                  <strong>{t.name || t.id}</strong> <code>{t.id}</code>{" "}
                  <span className="hint-inline">
                    {t.steps} step{t.steps === 1 ? "" : "s"}, updated {when(t.updatedAt)}
                  </span>
                </span>
                <span className="row">
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`Edit ${t.name || t.id}`}
                    onClick={() => setEditing({ templateId: t.id })}
                  >
                    Edit
                  </button>
                  <button type="button" aria-label={`Run ${t.name || t.id}`} onClick={() => setStarting(t)}>
                    Run
                  </button>
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`Triggers of ${t.name || t.id}`}
                    onClick={() => setTriggersOf(t)}
                  >
                    Triggers
                  </button>
                  <button
                    type="button"
                    className="danger"
                    aria-label={`Delete ${t.name || t.id}`}
                    onClick={() => setDeleting(t)}
                  >
                    Delete
                  </button>
                </span>
                {deleting?.id === t.id && (
                  <DeleteTemplate
                    workspaceId={workspaceId}
                    template={t}
                    onCancel={() => setDeleting(null)}
                    onDeleted={() => {
                      setDeleting(null);
                      if (triggersOf?.id === t.id) setTriggersOf(null);
                      if (editing?.templateId === t.id) setEditing(null);
                      setNotice(`Deleted ${t.name || t.id}.`);
                    }}
                  />
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
      {notice && (
        <p className="hint" role="status">
          {notice}
        </p>
      )}
      {triggersOf && (
        <Triggers
          key={triggersOf.id}
          workspaceId={workspaceId}
          template={triggersOf}
          onClose={() => setTriggersOf(null)}
        />
      )}
      {starting && <StartRun workspaceId={workspaceId} template={starting} onClose={() => setStarting(null)} />}
      {editing && (
        <TemplateEditor
          workspaceId={workspaceId}
          templateId={editing.templateId}
          onSaved={(id) => setEditing({ templateId: id })}
          onClose={() => setEditing(null)}
        />
      )}
      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Runs</h2>
        {runs.error && (
          <p className="error" role="alert">
            {runs.error.message}
          </p>
        )}
        {runs.runs === null ? (
          !runs.error && <p aria-busy="true">Loading runs…</p>
        ) : runs.runs.length === 0 ? (
          <p>No runs yet.</p>
        ) : (
          <ul className="list" aria-label="Runs, newest first">
            {runs.runs.map((r) => (
              <li key={r.runId}>
                <span>
                  <Link href={pipelineRunPath(workspaceId, r.runId)}>
                    {names.get(r.templateId) ?? r.templateId} · {r.runId.slice(0, 8)}
                  </Link>{" "}
                  <span className="hint-inline">
                    {r.trigger.kind}
                    {r.dryRun ? ", dry run" : ""}, {when(r.createdAt)}
                  </span>
                </span>
                <StatusBadge status={r.status} />
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
