/** The workspace's agent skills: each with its scan's verdict (pass, review, blocked), whether agents load it, its
 * pinned digest, and every finding of its last scan; an admin installs one from a discovery index, scans one again,
 * overrides a review (with a reason, audited) and removes one. A blocked skill offers no override: it is never
 * loaded. */
import { useId, useState, type FormEvent } from "react";
import type { SkillView } from "../../generated/ops";
import { ConfirmButton } from "../../components/ConfirmButton";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

const VERDICT_LABEL: Record<string, string> = {
  pass: "Passed",
  review: "Needs review",
  blocked: "Blocked",
  unscanned: "Not scanned",
};

function InstallSkill({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [indexUrl, setIndexUrl] = useState("");
  const [name, setName] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.run(() => write("skills.install", { workspace_id: workspaceId, indexUrl, name }))) {
      setName("");
    }
  };
  return (
    <details className="adder">
      <summary>Install a skill from a discovery index</summary>
      <form className="stack-form" onSubmit={submit} aria-label="Install skill">
        <div className="field">
          <label htmlFor={`${id}-index`}>Index URL (agent-skills discovery 0.2.0)</label>
          <input
            id={`${id}-index`}
            value={indexUrl}
            required
            spellCheck={false}
            onChange={(e) => setIndexUrl(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-name`}>Skill name</label>
          <input id={`${id}-name`} value={name} required spellCheck={false} onChange={(e) => setName(e.target.value)} />
        </div>
        <button type="submit" disabled={action.busy || !indexUrl.trim() || !name.trim()}>
          Install and scan
        </button>
        {action.busy && (
          <p className="working" role="status">
            <progress aria-label="Installing and scanning" /> Installing and scanning…
          </p>
        )}
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function Findings({ workspaceId, skill }: { workspaceId: string; skill: SkillView }) {
  const read = useRead("skills.findings", { workspace_id: workspaceId, skillId: skill.id });
  const findings = read.data?.findings;
  return (
    <LoadedList
      noun={`findings of ${skill.name}`}
      items={findings}
      error={read.error}
      empty="No findings: every check passed."
      row={(f) => (
        <li key={`${f.kind}-${f.file ?? ""}-${f.line ?? 0}-${f.message}`}>
          <div className="row-main">
            <span className="badge">{f.severity === "block" ? "blocks" : "review"}</span>
            <strong>{f.kind}</strong>
            {f.file && (
              <code className="wrap">
                {f.file}
                {f.line ? `:${f.line}` : ""}
              </code>
            )}
          </div>
          <p className="wrap">{f.message}</p>
        </li>
      )}
    />
  );
}

function Override({ workspaceId, skill }: { workspaceId: string; skill: SkillView }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [reason, setReason] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run(() => write("skills.override", { workspace_id: workspaceId, skillId: skill.id, reason }));
  };
  return (
    <form className="stack-form" onSubmit={submit} aria-label={`Override the review of ${skill.name}`}>
      <div className="field">
        <label htmlFor={`${id}-reason`}>Why these findings are acceptable (kept in the audit log)</label>
        <textarea id={`${id}-reason`} rows={2} value={reason} required onChange={(e) => setReason(e.target.value)} />
      </div>
      <button type="submit" disabled={action.busy || !reason.trim()}>
        Let agents load it
      </button>
      <Refusal error={action.error} />
    </form>
  );
}

function SkillRow({ workspaceId, skill, admin }: { workspaceId: string; skill: SkillView; admin: boolean }) {
  const write = useWrite();
  const action = useAction();
  const args = { workspace_id: workspaceId, skillId: skill.id };
  return (
    <li>
      <div className="row-main">
        <strong>{skill.name}</strong>
        <span className="badge">{VERDICT_LABEL[skill.verdict] ?? skill.verdict}</span>
        <span className="hint">
          {skill.loaded ? "loaded by agents" : "not loaded"}
          {skill.overridden && ` (review overridden by ${skill.overrideBy ?? "an admin"})`}
        </span>
      </div>
      <p className="hint wrap">
        {skill.description} · {skill.source === "index" ? `from ${skill.url ?? skill.indexUrl}` : "uploaded"} ·{" "}
        <code className="wrap">{skill.digest}</code>
      </p>
      <details>
        <summary>
          {skill.findings} {skill.findings === 1 ? "finding" : "findings"}
        </summary>
        <Findings workspaceId={workspaceId} skill={skill} />
        {admin && skill.verdict === "review" && !skill.overridden && <Override workspaceId={workspaceId} skill={skill} />}
      </details>
      {admin && (
        <div className="row-actions">
          <button type="button" disabled={action.busy} onClick={() => void action.run(() => write("skills.scan", args))}>
            Scan again
          </button>
          <ConfirmButton
            label="Remove"
            name={`Remove skill ${skill.name}`}
            question={`Remove “${skill.name}”? Agent runs started after this do not load it.`}
            busy={action.busy}
            onConfirm={() => void action.run(() => write("skills.remove", args))}
          />
        </div>
      )}
      <Refusal error={action.error} />
    </li>
  );
}

export function Skills({ workspaceId, admin }: { workspaceId: string; admin: boolean }) {
  const read = useRead("skills.list", { workspace_id: workspaceId });
  return (
    <section aria-labelledby="skills-title" className="panel" id="skills">
      <h2 id="skills-title">Agent skills</h2>
      <p className="hint">
        Agents load the skills that passed their supply-chain scan, or whose review an admin overrode. A blocked skill
        is never loaded.
      </p>
      <LoadedList
        noun="skills"
        items={read.data?.skills}
        error={read.error}
        row={(s) => <SkillRow key={s.id} workspaceId={workspaceId} skill={s} admin={admin} />}
      />
      {admin && <InstallSkill workspaceId={workspaceId} />}
    </section>
  );
}
