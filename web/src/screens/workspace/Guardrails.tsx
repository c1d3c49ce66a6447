/** Guardrails, workspace-wide and per space: read-only mode, and the action classes that must ask a person first. */
import { useId, useState, type FormEvent } from "react";
import type { GuardrailPolicy } from "../../generated/ops";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

/** The action classes ops declare (the manual's guardrails concept page describes them). */
export const ACTION_CLASSES: ReadonlyArray<readonly [string, string]> = [
  ["secretAccess", "reads or writes stored secrets"],
  ["networkEgress", "reaches the network outside the server"],
  ["enclosureControl", "changes a sandbox's boundary"],
  ["processSpawn", "starts processes"],
  ["packageInstall", "installs software"],
];

function PolicyForm(props: {
  workspaceId: string;
  spaceId: string | null;
  policy: GuardrailPolicy;
  where: string;
  canChange: boolean;
}) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [readOnly, setReadOnly] = useState(props.policy.readOnly);
  const [askFirst, setAskFirst] = useState<string[]>(props.policy.askFirst);
  const [saved, setSaved] = useState(false);
  const toggle = (c: string, on: boolean) => {
    setSaved(false);
    setAskFirst((a) => (on ? [...a, c] : a.filter((x) => x !== c)));
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const args = { workspace_id: props.workspaceId, spaceId: props.spaceId, readOnly, askFirst };
    const policy = await action.run(() => write("guardrails.set", args));
    if (policy) {
      // What the server now holds (it sorts the classes).
      setReadOnly(policy.readOnly);
      setAskFirst(policy.askFirst);
      setSaved(true);
    }
  };
  return (
    <form className="stack-form" onSubmit={submit} aria-label={`Guardrails of ${props.where}`}>
      <label className="check">
        <input
          type="checkbox"
          checked={readOnly}
          disabled={!props.canChange}
          aria-describedby={`${id}-ro`}
          onChange={(e) => {
            setSaved(false);
            setReadOnly(e.target.checked);
          }}
        />{" "}
        Read-only mode
      </label>
      <p className="hint" id={`${id}-ro`}>
        Refuses every change and every action of a risky class in {props.where}.
      </p>
      <fieldset>
        <legend>Ask a person first before actions that</legend>
        {ACTION_CLASSES.map(([c, meaning]) => (
          <label className="check" key={c}>
            <input
              type="checkbox"
              checked={askFirst.includes(c)}
              disabled={!props.canChange}
              onChange={(e) => toggle(c, e.target.checked)}
            />{" "}
            {meaning} (<code>{c}</code>)
          </label>
        ))}
      </fieldset>
      {props.canChange && (
        <button type="submit" disabled={action.busy}>
          Save guardrails of {props.where}
        </button>
      )}
      <Refusal error={action.error} />
      {saved && <p role="status">Saved.</p>}
    </form>
  );
}

function Policy(props: { workspaceId: string; spaceId: string | null; where: string; canChange: boolean }) {
  const policy = useRead("guardrails.get", { workspace_id: props.workspaceId, spaceId: props.spaceId });
  if (policy.error) return <Refusal error={policy.error} />;
  if (!policy.data) return <p aria-busy="true">Loading guardrails…</p>;
  return <PolicyForm key={props.spaceId ?? ""} {...props} policy={policy.data} />;
}

export function Guardrails({ workspaceId, canChange }: { workspaceId: string; canChange: boolean }) {
  const id = useId();
  const [spaceId, setSpaceId] = useState("");
  const spaces = useRead("spaces.list", { workspace_id: workspaceId, includeHidden: true });
  const space = spaces.data?.spaces.find((s) => s.id === spaceId);
  return (
    <>
      <p className="hint">
        Both the workspace's policy and a space's apply; the stricter wins. An admin can always lift them.
      </p>
      <h3>The whole workspace</h3>
      <Policy workspaceId={workspaceId} spaceId={null} where="this workspace" canChange={canChange} />
      <h3>One space</h3>
      <div className="field">
        <label htmlFor={`${id}-space`}>Space</label>
        <select id={`${id}-space`} value={spaceId} onChange={(e) => setSpaceId(e.target.value)}>
          <option value="">Choose a space…</option>
          {(spaces.data?.spaces ?? []).map((s) => (
            <option key={s.id} value={s.id}>
              {s.title}
              {s.hidden ? " (hidden)" : ""}
            </option>
          ))}
        </select>
      </div>
      {space && (
        <Policy
          workspaceId={workspaceId}
          spaceId={space.id}
          where={`the space “${space.title}”`}
          canChange={canChange}
        />
      )}
    </>
  );
}
