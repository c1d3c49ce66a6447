/** The chat settings' pure rules, kept the same as the server's (src/hangar/chat/descriptor.py and profile.py):
 * the credential check the connect dialog makes before sending anything, the bot profile's limits and the slash
 * command's normalization. The server checks everything again; these spare a round trip and show its words. */
import type { CredentialFieldView } from "../../generated/ops";

export const DEFAULT_COMMAND = "hangar";

/** Why a credential field's value would be refused (the descriptor's own sentences), or null when it passes. An
 * empty optional field passes: the server keeps the value it has stored. */
export function credentialProblem(field: CredentialFieldView, value: string): string | null {
  const text = value.trim();
  if (!text) return field.required ? `${field.label} is required` : null;
  return text.startsWith(field.prefix) ? null : field.refusal;
}

/** The values to send: trimmed, only the descriptor's fields, empty ones left out (an empty optional field keeps
 * the stored value). */
export function credentialsToSend(fields: CredentialFieldView[], values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    const text = (values[f.id] ?? "").trim();
    if (text) out[f.id] = text;
  }
  return out;
}

/** Leading slashes stripped, lower-cased, characters outside `[a-z0-9_-]` removed; empty: the default word. */
export function normalizeCommand(value: string): string {
  const word = value
    .trim()
    .replace(/^\/+/, "")
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "");
  return word || DEFAULT_COMMAND;
}

export interface ProfileForm {
  appName: string;
  botDisplayName: string;
  description: string;
  agentDescription: string;
  command: string;
  agentEnabled: boolean;
}

export const PROFILE_LIMITS = {
  appName: 35,
  botDisplayName: 80,
  description: 140,
  agentDescription: 300,
  command: 32,
} as const;

type TextField = keyof typeof PROFILE_LIMITS;

export const PROFILE_LABELS: Record<TextField, string> = {
  appName: "App name",
  botDisplayName: "Bot display name",
  description: "Description",
  agentDescription: "Agent description",
  command: "Slash command",
};

/** Runs of white space count as one, as the server collapses them. */
function collapsed(value: string): string {
  return value.split(/\s+/).filter(Boolean).join(" ");
}

export interface ProfileEdits {
  appName?: string;
  botDisplayName?: string;
  description?: string;
  agentDescription?: string;
  command?: string;
  agentEnabled: boolean;
}

/** The edits to send and the problems to show first. An empty box is left out: it leaves the value unchanged. */
export function profileEdits(form: ProfileForm): { edits: ProfileEdits; problems: Partial<Record<TextField, string>> } {
  const edits: ProfileEdits = { agentEnabled: form.agentEnabled };
  const problems: Partial<Record<TextField, string>> = {};
  for (const key of ["appName", "botDisplayName", "description", "agentDescription"] as const) {
    const text = collapsed(form[key]);
    if (!text) continue;
    if (text.length > PROFILE_LIMITS[key]) {
      problems[key] = `${PROFILE_LABELS[key]} is ${text.length} characters; the limit is ${PROFILE_LIMITS[key]}`;
    }
    edits[key] = text;
  }
  if (form.command.trim()) {
    const word = normalizeCommand(form.command);
    if (word.length > PROFILE_LIMITS.command) {
      problems.command = `${PROFILE_LABELS.command} is ${word.length} characters; the limit is ${PROFILE_LIMITS.command}`;
    }
    edits.command = word;
  }
  return { edits, problems };
}

/** `mm:ss` left until `expiresAt` (never below zero). */
export function timeLeft(expiresAt: string, now: number): string {
  const seconds = Math.max(0, Math.floor((Date.parse(expiresAt) - now) / 1000));
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}

/** The slash command a member sends from the chat to redeem a code. */
export function linkCommand(command: string | undefined, code: string): string {
  return `/${normalizeCommand(command ?? "")} link ${code}`;
}
