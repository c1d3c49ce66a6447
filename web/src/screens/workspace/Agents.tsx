/** The workspace's agents, and (for admins) creating one: a name and an adapter, `openai` (an OpenAI-compatible
 * endpoint: base URL, model, an API key that is written once and never shown again) or `command` (a command line). */
import { useId, useState, type FormEvent } from "react";
import type { AgentView } from "../../generated/ops";
import { useCall, useRpc } from "../../rpc/hooks";
import { ConfirmButton, Refusal, useAction } from "./common";

/** A command line typed one argument per line: no shell quoting rules to get wrong. */
export function argvOf(text: string): string[] {
  return text
    .split("\n")
    .map((a) => a.trim())
    .filter((a) => a !== "");
}

function adapterSummary(agent: AgentView): string {
  const a = agent.adapter;
  if (a.type === "openai") return `openai · ${a.model} at ${a.baseUrl}${a.hasApiKey ? " · key stored" : ""}`;
  return `command · ${a.argv.join(" ")}`;
}

function CreateAgent({ workspaceId, onCreated }: { workspaceId: string; onCreated(): void }) {
  const client = useRpc();
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
      client.call("agents.create", { workspace_id: workspaceId, name, role, systemPrompt, adapter }),
    );
    // The key leaves the page's memory as soon as the server has it.
    setApiKey("");
    if (made) {
      setName("");
      setSystemPrompt("");
      setArgv("");
      onCreated();
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
            <option value="member">member</option>
            <option value="chiefExecutive">chiefExecutive (answers new conversations)</option>
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

function AgentRow({ workspaceId, agent, admin, onChanged }: {
  workspaceId: string;
  agent: AgentView;
  admin: boolean;
  onChanged(): void;
}) {
  const client = useRpc();
  const action = useAction();
  const remove = async () => {
    const args = { workspace_id: workspaceId, agentId: agent.id };
    if (await action.run(() => client.call("agents.delete", args))) onChanged();
  };
  return (
    <li>
      <div className="row-main">
        <strong>{agent.name}</strong>
        <span className="badge">{agent.role}</span>
        <span className="hint wrap">{adapterSummary(agent)}</span>
      </div>
      {admin && (
        <div className="row-actions">
          <ConfirmButton
            label="Delete"
            name={`Delete agent ${agent.name}`}
            question={`Delete the agent “${agent.name}” and its stored key?`}
            busy={action.busy}
            onConfirm={() => void remove()}
          />
        </div>
      )}
      <Refusal error={action.error} />
    </li>
  );
}

export function Agents({ workspaceId, admin, onChanged }: { workspaceId: string; admin: boolean; onChanged(): void }) {
  const [bump, setBump] = useState(0);
  const reload = () => {
    setBump((n) => n + 1);
    onChanged();
  };
  const agents = useCall("agents.list", { workspace_id: workspaceId }, bump);
  const list = agents.data?.agents;
  return (
    <section aria-labelledby="agents-title" className="panel" id="agents">
      <h2 id="agents-title">Agents</h2>
      <Refusal error={agents.error} />
      {list === undefined ? (
        !agents.error && <p aria-busy="true">Loading agents…</p>
      ) : list.length === 0 ? (
        <p>No agents yet.</p>
      ) : (
        <ul className="list" aria-label="Agents">
          {list.map((a) => (
            <AgentRow key={a.id} workspaceId={workspaceId} agent={a} admin={admin} onChanged={reload} />
          ))}
        </ul>
      )}
      {admin && <CreateAgent workspaceId={workspaceId} onCreated={reload} />}
    </section>
  );
}
