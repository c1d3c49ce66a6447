/** The workspace's agents, and (for admins) creating one: a name and an adapter, `openai` (an OpenAI-compatible
 * endpoint: base URL, model, an API key that is written once and never shown again) or `command` (a command line);
 * editing one (name, role, instructions, the adapter's settings, its product tools, a replacement key) and deleting
 * one. */
import { useId, useState, type FormEvent } from "react";
import type { AgentView } from "../../generated/ops";
import { agentRoleLabel } from "../../labels";
import { draftOf, linesOf, updateArgs, type AgentDraft } from "./agentEdit";
import { EditDeleteActions } from "../../components/EditDeleteActions";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";

/** A command line typed one argument per line: no shell quoting rules to get wrong. */
export const argvOf = linesOf;

function adapterSummary(agent: AgentView): string {
  const a = agent.adapter;
  if (a.type === "openai") return `openai · ${a.model} at ${a.baseUrl}${a.hasApiKey ? " · key stored" : ""}`;
  return `command · ${a.argv.join(" ")}`;
}

function AgentRoleOptions() {
  return (
    <>
      <option value="member">{agentRoleLabel("member")}</option>
      <option value="chiefExecutive">{agentRoleLabel("chiefExecutive")} (answers new conversations)</option>
    </>
  );
}

function CreateAgent({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [name, setName] = useState("");
  const [role, setRole] = useState("member");
  const [systemPrompt, setSystemPrompt] = useState("");
  const [type, setType] = useState<"openai" | "command">("openai");
  const [baseUrl, setBaseUrl] = useState("");
  const [model, setModel] = useState("");
  const [apiKey, setApiKey] = useState("");
  const [argv, setArgv] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const adapter =
      type === "openai"
        ? { type, baseUrl, model, ...(apiKey ? { apiKey } : {}) }
        : { type, argv: argvOf(argv) };
    const made = await action.run(() =>
      write("agents.create", { workspace_id: workspaceId, name, role, systemPrompt, adapter }),
    );
    // The key leaves the page's memory as soon as the server has it.
    setApiKey("");
    if (made) {
      setName("");
      setSystemPrompt("");
      setArgv("");
    }
  };
  return (
    <details className="adder">
      <summary>Create an agent</summary>
      <form className="stack-form" onSubmit={submit} aria-label="New agent">
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} value={name} required onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-role`}>Role</label>
          <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value)}>
            <AgentRoleOptions />
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-prompt`}>System prompt</label>
          <textarea
            id={`${id}-prompt`}
            rows={2}
            value={systemPrompt}
            onChange={(e) => setSystemPrompt(e.target.value)}
          />
        </div>
        <fieldset>
          <legend>Adapter</legend>
          <label className="check">
            <input type="radio" name={`${id}-type`} checked={type === "openai"} onChange={() => setType("openai")} />
            {" "}
            openai (an OpenAI-compatible endpoint)
          </label>
          <label className="check">
            <input
              type="radio"
              name={`${id}-type`}
              checked={type === "command"}
              onChange={() => setType("command")}
            />{" "}
            command (a command-line agent)
          </label>
        </fieldset>
        {type === "openai" ? (
          <>
            <div className="field">
              <label htmlFor={`${id}-url`}>Base URL</label>
              <input
                id={`${id}-url`}
                type="url"
                placeholder="https://api.example.com/v1"
                value={baseUrl}
                required
                onChange={(e) => setBaseUrl(e.target.value)}
              />
            </div>
            <div className="field">
              <label htmlFor={`${id}-model`}>Model</label>
              <input id={`${id}-model`} value={model} required onChange={(e) => setModel(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={`${id}-key`}>API key</label>
              <input
                id={`${id}-key`}
                type="password"
                autoComplete="new-password"
                value={apiKey}
                aria-describedby={`${id}-key-hint`}
                onChange={(e) => setApiKey(e.target.value)}
              />
              <p className="hint" id={`${id}-key-hint`}>
                Stored in the server's secrets; it is never shown again, here or anywhere.
              </p>
            </div>
          </>
        ) : (
          <div className="field">
            <label htmlFor={`${id}-argv`}>Command line, one argument per line</label>
            <textarea
              id={`${id}-argv`}
              rows={3}
              value={argv}
              required
              spellCheck={false}
              onChange={(e) => setArgv(e.target.value)}
            />
          </div>
        )}
        <button type="submit" disabled={action.busy || !name.trim()}>
          Create agent
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function AgentEditor({ workspaceId, agent, onDone }: {
  workspaceId: string;
  agent: AgentView;
  onDone(saved: boolean): void;
}) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [draft, setDraft] = useState<AgentDraft>(() => draftOf(agent));
  const set = <K extends keyof AgentDraft>(key: K, value: AgentDraft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const text = (key: "name" | "systemPrompt" | "baseUrl" | "model" | "apiKey" | "argv" | "tools") =>
    (e: { target: { value: string } }) => set(key, e.target.value);
  const a = agent.adapter;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const saved = await action.run(() => write("agents.update", updateArgs(workspaceId, agent, draft)));
    // A typed key leaves the page's memory whether or not the server took it.
    set("apiKey", "");
    if (saved) onDone(true);
  };
  return (
    <form className="stack-form editor" onSubmit={submit} aria-label={`Edit agent ${agent.name}`}>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={draft.name} required onChange={text("name")} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-role`}>Role</label>
        <select id={`${id}-role`} value={draft.role} onChange={(e) => set("role", e.target.value)}>
          <AgentRoleOptions />
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-prompt`}>Instructions (system prompt)</label>
        <textarea id={`${id}-prompt`} rows={3} value={draft.systemPrompt} onChange={text("systemPrompt")} />
      </div>
      {a.type === "openai" ? (
        <>
          <div className="field">
            <label htmlFor={`${id}-url`}>Base URL</label>
            <input id={`${id}-url`} type="url" value={draft.baseUrl} required onChange={text("baseUrl")} />
          </div>
          <div className="field">
            <label htmlFor={`${id}-model`}>Model</label>
            <input id={`${id}-model`} value={draft.model} required onChange={text("model")} />
          </div>
          <div className="field">
            <label htmlFor={`${id}-key`}>Replace the API key</label>
            <input
              id={`${id}-key`}
              type="password"
              autoComplete="new-password"
              value={draft.apiKey}
              aria-describedby={`${id}-key-hint`}
              onChange={text("apiKey")}
            />
            <p className="hint" id={`${id}-key-hint`}>
              {a.hasApiKey ? "A key is stored; leave this empty to keep it." : "No key is stored."} Keys are never
              shown.
            </p>
          </div>
        </>
      ) : (
        <>
          <div className="field">
            <label htmlFor={`${id}-argv`}>Command line, one argument per line</label>
            <textarea
              id={`${id}-argv`}
              rows={3}
              value={draft.argv}
              required
              spellCheck={false}
              onChange={text("argv")}
            />
          </div>
          <div className="field">
            <label htmlFor={`${id}-via`}>Prompt given on</label>
            <select
              id={`${id}-via`}
              value={draft.promptVia}
              onChange={(e) => set("promptVia", e.target.value === "arg" ? "arg" : "stdin")}
            >
              <option value="stdin">standard input</option>
              <option value="arg">the last argument</option>
            </select>
          </div>
          {(a.secretEnvNames ?? []).length > 0 && (
            <p className="hint">Secret variables stored (values never shown): {a.secretEnvNames?.join(", ")}</p>
          )}
        </>
      )}
      <fieldset>
        <legend>Product tools</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={draft.defaultTools}
            onChange={(e) => set("defaultTools", e.target.checked)}
          />{" "}
          the default set (rigs in its space; reading spaces, messages and tickets)
        </label>
        {!draft.defaultTools && (
          <div className="field">
            <label htmlFor={`${id}-tools`}>Ops it may call, one per line (none when empty)</label>
            <textarea
              id={`${id}-tools`}
              rows={4}
              value={draft.tools}
              spellCheck={false}
              placeholder={"tickets.list\nmessages.list"}
              onChange={text("tools")}
            />
          </div>
        )}
      </fieldset>
      <div className="filter-buttons">
        <button type="submit" disabled={action.busy || !draft.name.trim()}>
          {action.busy ? "Saving…" : "Save agent"}
        </button>
        <button type="button" className="secondary" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
      <Refusal error={action.error} />
    </form>
  );
}

function AgentRow({ workspaceId, agent, admin }: { workspaceId: string; agent: AgentView; admin: boolean }) {
  const write = useWrite();
  const action = useAction();
  const [editing, setEditing] = useState(false);
  const remove = async () => {
    const args = { workspace_id: workspaceId, agentId: agent.id };
    await action.run(() => write("agents.delete", args));
  };
  return (
    <li>
      <div className="row-main">
        <strong>{agent.name}</strong>
        <span className="badge">{agentRoleLabel(agent.role)}</span>
        <span className="hint wrap">{adapterSummary(agent)}</span>
      </div>
      {admin && !editing && (
        <EditDeleteActions
          what={`agent ${agent.name}`}
          question={`Delete the agent “${agent.name}” and its stored key?`}
          busy={action.busy}
          onEdit={() => {
            action.clear();
            setEditing(true);
          }}
          onDelete={() => void remove()}
        />
      )}
      {editing && (
        <AgentEditor
          workspaceId={workspaceId}
          agent={agent}
          onDone={() => setEditing(false)}
        />
      )}
      <Refusal error={action.error} />
    </li>
  );
}

export function Agents({ workspaceId, admin }: { workspaceId: string; admin: boolean }) {
  const agents = useRead("agents.list", { workspace_id: workspaceId });
  const list = agents.data?.agents;
  return (
    <section aria-labelledby="agents-title" className="panel" id="agents">
      <h2 id="agents-title">Agents</h2>
      <LoadedList
        noun="agents"
        items={list}
        error={agents.error}
        row={(a) => <AgentRow key={a.id} workspaceId={workspaceId} agent={a} admin={admin} />}
      />
      {admin && <CreateAgent workspaceId={workspaceId} />}
    </section>
  );
}
