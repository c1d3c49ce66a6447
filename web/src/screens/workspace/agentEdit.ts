/** Editing an agent: the form's draft made from the agent as the server returned it, and the `agents.update`
 * arguments made from the draft. The server replaces the adapter settings whole, so the update starts from the
 * current settings (keeping what the form does not show, such as the temperature or environment) and changes
 * only what the form edits. Secrets are write-only: the API key is sent only when a new one was typed. */
import type { AgentsUpdateArgs, AgentView } from "../../generated/ops";

/** Text typed one item per line (a command line's arguments, op names): no quoting rules to get wrong. */
export function linesOf(text: string): string[] {
  return text
    .split("\n")
    .map((a) => a.trim())
    .filter((a) => a !== "");
}

export interface AgentDraft {
  name: string;
  role: string;
  systemPrompt: string;
  /** `openai` */
  baseUrl: string;
  model: string;
  /** A replacement key; empty keeps the stored one. */
  apiKey: string;
  /** `command`, one argument per line */
  argv: string;
  promptVia: "stdin" | "arg";
  /** The product's default tool set (`productTools` left out) or the ops listed in `tools`. */
  defaultTools: boolean;
  tools: string;
}

export function draftOf(agent: AgentView): AgentDraft {
  const a = agent.adapter;
  return {
    name: agent.name,
    role: agent.role,
    systemPrompt: agent.systemPrompt,
    baseUrl: a.type === "openai" ? a.baseUrl : "",
    model: a.type === "openai" ? a.model : "",
    apiKey: "",
    argv: a.type === "command" ? a.argv.join("\n") : "",
    promptVia: a.type === "command" ? (a.promptVia ?? "stdin") : "stdin",
    defaultTools: a.productTools == null,
    tools: (a.productTools ?? []).join("\n"),
  };
}

export function updateArgs(workspaceId: string, agent: AgentView, d: AgentDraft): AgentsUpdateArgs {
  const tools = { productTools: d.defaultTools ? null : linesOf(d.tools) };
  let adapter: Record<string, unknown>;
  if (agent.adapter.type === "openai") {
    // What the view adds (whether a key is stored) is not a setting the server takes back.
    const { hasApiKey: _stored, ...settings } = agent.adapter;
    adapter = { ...settings, ...tools, baseUrl: d.baseUrl.trim(), model: d.model.trim() };
    if (d.apiKey) adapter.apiKey = d.apiKey;
  } else {
    // The secret variables' names are the server's to keep; their values are never in the page.
    const { secretEnvNames: _names, ...settings } = agent.adapter;
    adapter = { ...settings, ...tools, argv: linesOf(d.argv), promptVia: d.promptVia };
  }
  return {
    workspace_id: workspaceId,
    agentId: agent.id,
    name: d.name.trim(),
    role: d.role,
    systemPrompt: d.systemPrompt,
    adapter,
  };
}
