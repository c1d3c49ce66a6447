/** The triggers of one template: listed with what fires them, paused or resumed, removed, and added (manual, an
 * event type of the workspace, a cron schedule in UTC, or a pull request of a linked repo, each with a payload the runs start with). */
import { useId, useState, type FormEvent } from "react";
import type { TemplateSummary, TriggerView } from "../../generated/ops";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { parsePayload } from "./payload";

type Kind = TriggerView["kind"];

function what(t: TriggerView): string {
  if (t.kind === "event") return `on event ${t.eventType ?? "?"}`;
  if (t.kind === "schedule") return `on schedule ${t.cron ?? "?"} (UTC)`;
  if (t.kind === "pullRequest") return "on a pull request opened or pushed to";
  return "started by hand";
}

function times(t: TriggerView): string {
  const parts: string[] = [];
  if (t.lastFiredAt) parts.push(`last fired ${new Date(t.lastFiredAt).toLocaleString()}`);
  if (t.nextFireAt && t.enabled) parts.push(`next ${new Date(t.nextFireAt).toLocaleString()}`);
  return parts.join(", ");
}

function AddTrigger(props: { workspaceId: string; templateId: string }) {
  const write = useWrite();
  const action = useAction();
  const ids = useId();
  const [kind, setKind] = useState<Kind>("event");
  const [eventType, setEventType] = useState("");
  const [cron, setCron] = useState("");
  const [payload, setPayload] = useState("{}");
  const [problem, setProblem] = useState<string | null>(null);
  const { busy } = action;
  const add = async (e: FormEvent) => {
    e.preventDefault();
    const parsed = parsePayload(payload);
    setProblem("problem" in parsed ? parsed.problem : null);
    if ("problem" in parsed) {
      action.clear();
      return;
    }
    const added = await action.run(() =>
      write("pipelines.triggers.create", {
        workspace_id: props.workspaceId,
        templateId: props.templateId,
        kind,
        eventType: kind === "event" ? eventType.trim() : null,
        cron: kind === "schedule" ? cron.trim() : null,
        payload: parsed.value,
      }),
    );
    if (added) {
      setEventType("");
      setCron("");
      setPayload("{}");
    }
  };
  return (
    <form className="add-trigger" onSubmit={add} aria-labelledby={`${ids}-title`}>
      <h3 id={`${ids}-title`}>Add a trigger</h3>
      <label htmlFor={`${ids}-kind`}>Kind</label>
      <select id={`${ids}-kind`} value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
        <option value="event">Event: every event of a type in this workspace</option>
        <option value="schedule">Schedule: a cron expression, in UTC</option>
        <option value="pullRequest">Pull request: one of a linked repo opened or pushed to</option>
        <option value="manual">Manual: started by hand</option>
      </select>
      {kind === "event" && (
        <>
          <label htmlFor={`${ids}-event`}>Event type</label>
          <input
            id={`${ids}-event`}
            value={eventType}
            placeholder="tickets.created"
            required
            onChange={(e) => setEventType(e.target.value)}
          />
        </>
      )}
      {kind === "schedule" && (
        <>
          <label htmlFor={`${ids}-cron`}>Cron (minute hour day month weekday, UTC)</label>
          <input id={`${ids}-cron`} value={cron} placeholder="0 9 * * 1-5" required onChange={(e) => setCron(e.target.value)} />
        </>
      )}
      <label htmlFor={`${ids}-payload`}>Payload (JSON object; an event's own payload goes over it)</label>
      <textarea
        id={`${ids}-payload`}
        className="payload"
        value={payload}
        spellCheck={false}
        onChange={(e) => setPayload(e.target.value)}
      />
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
      <Refusal error={action.error} />
      <button type="submit" disabled={busy}>
        {busy ? "Adding…" : "Add trigger"}
      </button>
    </form>
  );
}

export function Triggers(props: { workspaceId: string; template: TemplateSummary; onClose(): void }) {
  const write = useWrite();
  const ids = useId();
  const list = useRead("pipelines.triggers.list", { workspace_id: props.workspaceId, templateId: props.template.id });
  const action = useAction();
  const name = props.template.name || props.template.id;
  const act = (what: () => Promise<unknown>) => action.run(what);
  const triggers = list.data?.triggers ?? [];
  return (
    <section className="card triggers" aria-labelledby={`${ids}-title`}>
      <div className="row">
        <h2 id={`${ids}-title`}>Triggers of {name}</h2>
        <button type="button" className="secondary" onClick={props.onClose}>
          Close
        </button>
      </div>
      {list.error && (
        <p className="error" role="alert">
          {list.error.message}
        </p>
      )}
      {list.data === undefined ? (
        !list.error && <p aria-busy="true">Loading triggers…</p>
      ) : triggers.length === 0 ? (
        <p>No triggers yet: runs start only from Run. Add an event or a schedule below.</p>
      ) : (
        <ul className="list" aria-label={`Triggers of ${name}`}>
          {triggers.map((t) => (
            <li key={t.id}>
              <span>
                <strong>{what(t)}</strong>
                {!t.enabled && <span className="hint-inline"> (paused)</span>}{" "}
                <span className="hint-inline">
                  {times(t)}
                  {Object.keys(t.payload).length > 0 && (
                    <>
                      {" "}
                      payload <code>{JSON.stringify(t.payload)}</code>
                    </>
                  )}
                </span>
              </span>
              <span className="row">
                {t.kind !== "manual" && (
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`${t.enabled ? "Pause" : "Resume"} the trigger ${what(t)}`}
                    onClick={() =>
                      void act(() =>
                        write("pipelines.triggers.setEnabled", {
                          workspace_id: props.workspaceId,
                          triggerId: t.id,
                          enabled: !t.enabled,
                        }),
                      )
                    }
                  >
                    {t.enabled ? "Pause" : "Resume"}
                  </button>
                )}
                <button
                  type="button"
                  className="danger"
                  aria-label={`Remove the trigger ${what(t)}`}
                  onClick={() =>
                    void act(() => write("pipelines.triggers.delete", { workspace_id: props.workspaceId, triggerId: t.id }))
                  }
                >
                  Remove
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
      <Refusal error={action.error} />
      <AddTrigger workspaceId={props.workspaceId} templateId={props.template.id} />
    </section>
  );
}
