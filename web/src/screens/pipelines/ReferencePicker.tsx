/** Names, not ids, in the template editor: for the step at the cursor (or one chosen from a list), each setting
 * its body reads that names a record of the workspace (`agentId`, `teamId`, `extras.spaceId`, `repoIds`,
 * `extras.templateId`: `pipelines.bodies.list` says which) is a picker of those records by name. Choosing one
 * writes its id into the text (`onSet`); the server checks every id when the template is validated and saved. */
import { useEffect, useId, useMemo, useState } from "react";
import type { BodySetting } from "../../generated/ops";
import { useRead } from "../../data/queries";
import type { Path } from "./templateText";

type Kind = NonNullable<BodySetting["refers"]>;
type Obj = Record<string, unknown>;

const KIND_WORDS: Record<Kind, string> = {
  agent: "Agent",
  team: "Team",
  space: "Space",
  repo: "Repositories",
  template: "Pipeline template",
};

const PLACEHOLDER = "{{";

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface StepRef {
  index: number;
  id: string;
  label: string;
  settings: BodySetting[];
}

/** Where a setting lives in a step: `agentId` → config.agentId, `extras.spaceId` → config.extras.spaceId. */
export function settingPath(index: number, name: string): Path {
  return ["steps", index, "config", ...name.split(".")];
}

/** The value a step holds for a setting (undefined when unset). */
export function settingValue(step: Obj, name: string): unknown {
  let node: unknown = step["config"];
  for (const part of name.split(".")) node = isObj(node) ? node[part] : undefined;
  return node;
}

/** The repo a `repoIds` entry names: `<ref>`, `<ref>@<branch>` or `<ref>#<number>`. */
export function repoRef(spec: string): string {
  return (spec.trim().split("@")[0] ?? "").split("#")[0] ?? "";
}

/** `repoIds` with the repo (its id) added, or every entry naming it (by id or name) removed. */
export function toggledRepos(specs: readonly string[], repo: { id: string; name: string }, on: boolean): string[] {
  const names = (s: string) => [repo.id, repo.name].includes(repoRef(s));
  if (!on) return specs.filter((s) => !names(s));
  return specs.some(names) ? [...specs] : [...specs, repo.id];
}

/** The steps whose body reads settings that name records, in template order. */
export function referringSteps(value: unknown, bodies: ReadonlyMap<string, BodySetting[]>): StepRef[] {
  const steps = isObj(value) && Array.isArray(value["steps"]) ? value["steps"] : [];
  return steps.flatMap((s, index): StepRef[] => {
    if (!isObj(s) || typeof s["id"] !== "string" || typeof s["body"] !== "string") return [];
    const settings = bodies.get(s["body"]) ?? [];
    if (settings.length === 0) return [];
    const config = isObj(s["config"]) ? s["config"] : {};
    const label = typeof config["label"] === "string" && config["label"] ? config["label"] : s["id"];
    return [{ index, id: s["id"], label, settings }];
  });
}

interface Records {
  /** `[id, name]` per kind, in the order the server lists them. */
  options: Record<Kind, Array<[string, string]>>;
  loaded: boolean;
}

function useRecords(workspaceId: string, templateId: string | null): Records {
  const ws = { workspace_id: workspaceId };
  const agents = useRead("agents.list", ws);
  const teams = useRead("teams.list", ws);
  const spaces = useRead("spaces.list", ws);
  const repos = useRead("repos.list", ws);
  const templates = useRead("pipelines.templates.list", ws);
  return {
    options: {
      agent: (agents.data?.agents ?? []).map((a) => [a.id, a.name]),
      team: (teams.data?.teams ?? []).map((t) => [t.id, t.name]),
      space: (spaces.data?.spaces ?? []).map((s) => [s.id, s.title]),
      repo: (repos.data?.repos ?? []).map((r) => [r.id, r.name]),
      template: (templates.data?.templates ?? [])
        .filter((t) => t.id !== templateId)
        .map((t) => [t.id, t.name ? `${t.name} (${t.id})` : t.id]),
    },
    loaded: [agents, teams, spaces, repos, templates].every((c) => !c.loading || c.data !== undefined),
  };
}

function OneRecord(props: {
  setting: BodySetting;
  kind: Kind;
  current: unknown;
  options: Array<[string, string]>;
  onChange(value: string | undefined): void;
}) {
  const id = useId();
  const { setting, current, options } = props;
  const value = typeof current === "string" ? current : current === undefined || current === null ? "" : String(current);
  const known = options.some(([optionId]) => optionId === value);
  const noun = KIND_WORDS[props.kind];
  return (
    <div className="field">
      <label htmlFor={id}>
        {noun} <code>{setting.name}</code>
      </label>
      <select
        id={id}
        value={value}
        aria-describedby={`${id}-doc`}
        aria-invalid={(value !== "" && !known && !value.includes(PLACEHOLDER)) || undefined}
        onChange={(e) => props.onChange(e.target.value || undefined)}
      >
        <option value="">{setting.required ? `Choose a ${noun.toLowerCase()}…` : "None"}</option>
        {options.map(([optionId, name]) => (
          <option key={optionId} value={optionId}>
            {name}
          </option>
        ))}
        {value !== "" && !known && (
          <option value={value}>
            {value.includes(PLACEHOLDER) ? `From the run's state: ${value}` : `Not in this workspace: ${value}`}
          </option>
        )}
      </select>
      <p className="hint" id={`${id}-doc`}>
        {setting.doc}
        {options.length === 0 ? ` This workspace has no ${noun.toLowerCase()} yet.` : ""}
      </p>
    </div>
  );
}

function RepoList(props: {
  setting: BodySetting;
  current: unknown;
  options: Array<[string, string]>;
  onChange(value: string[] | undefined): void;
}) {
  const specs = Array.isArray(props.current) ? props.current.map(String) : [];
  const known = new Set(props.options.flatMap(([id, name]) => [id, name]));
  const others = specs.filter((s) => !known.has(repoRef(s)));
  const set = (next: string[]) => props.onChange(next.length ? next : undefined);
  return (
    <fieldset className="repo-picks">
      <legend>
        {KIND_WORDS.repo} <code>{props.setting.name}</code>
      </legend>
      {props.options.length === 0 && <p className="hint">This workspace has no repositories yet.</p>}
      {props.options.map(([id, name]) => {
        const spec = specs.find((s) => [id, name].includes(repoRef(s)));
        const branch = spec && spec.trim() !== id && spec.trim() !== name ? spec.slice(repoRef(spec).length) : "";
        return (
          <label key={id} className="check">
            <input
              type="checkbox"
              checked={spec !== undefined}
              onChange={(e) => set(toggledRepos(specs, { id, name }, e.target.checked))}
            />{" "}
            {name}
            {branch && <code> {branch}</code>}
          </label>
        );
      })}
      {others.map((spec) => (
        <label key={spec} className="check">
          <input type="checkbox" checked onChange={() => set(specs.filter((s) => s !== spec))} /> Not in this
          workspace: <code>{spec}</code>
        </label>
      ))}
    </fieldset>
  );
}

export function ReferencePicker(props: {
  workspaceId: string;
  templateId: string | null;
  /** The parsed template (the last one that parsed). */
  value: unknown;
  /** The step at the cursor, by index. */
  cursorStep: number | null;
  onSet(path: Path, value: unknown): void;
}) {
  const ids = useId();
  const bodies = useRead("pipelines.bodies.list", { workspace_id: props.workspaceId });
  const records = useRecords(props.workspaceId, props.templateId);
  const referring = useMemo(() => {
    const map = new Map<string, BodySetting[]>();
    for (const b of bodies.data?.bodies ?? []) {
      const settings = b.config.filter((c) => c.refers !== null);
      if (settings.length) map.set(b.key, settings);
    }
    return map;
  }, [bodies.data]);
  const steps = referringSteps(props.value, referring);
  const [chosen, setChosen] = useState<string | null>(null);
  // Following the cursor: a step with references that the cursor enters becomes the one shown.
  const atCursor = steps.find((s) => s.index === props.cursorStep)?.id ?? null;
  useEffect(() => {
    if (atCursor !== null) setChosen(atCursor);
  }, [atCursor]);
  const step = steps.find((s) => s.id === chosen) ?? steps[0];

  const allSteps: unknown[] = isObj(props.value) && Array.isArray(props.value["steps"]) ? props.value["steps"] : [];
  const stepValue = step ? allSteps[step.index] : undefined;
  return (
    <section className="references" aria-labelledby={`${ids}-title`}>
      <h3 id={`${ids}-title`}>Agents, teams, spaces and repositories</h3>
      {bodies.error ? (
        <p className="error">{bodies.error.message}</p>
      ) : !bodies.data || !records.loaded ? (
        <p aria-busy="true">Loading…</p>
      ) : !step || !isObj(stepValue) ? (
        <p className="hint">
          No step names an agent, team, space or repository yet. A step with such a body (an agent prompt, a team, a
          space to open) offers them here by name.
        </p>
      ) : (
        <>
          <div className="field">
            <label htmlFor={`${ids}-step`}>Step</label>
            <select id={`${ids}-step`} value={step.id} onChange={(e) => setChosen(e.target.value)}>
              {steps.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.label === s.id ? s.id : `${s.label} (${s.id})`}
                </option>
              ))}
            </select>
          </div>
          {step.settings.map((setting) => {
            const kind = setting.refers as Kind;
            const current = settingValue(stepValue, setting.name);
            const set = (value: unknown) => props.onSet(settingPath(step.index, setting.name), value);
            return kind === "repo" ? (
              <RepoList
                key={setting.name}
                setting={setting}
                current={current}
                options={records.options.repo}
                onChange={set}
              />
            ) : (
              <OneRecord
                key={setting.name}
                setting={setting}
                kind={kind}
                current={current}
                options={records.options[kind]}
                onChange={set}
              />
            );
          })}
        </>
      )}
    </section>
  );
}
