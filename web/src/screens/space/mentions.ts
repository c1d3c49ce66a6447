/** @mentions of agents in a message: which agents a text names, and what the composer suggests while typing. */

export interface Named {
  id: string;
  name: string;
}

const WORD = /[\p{L}\p{N}_-]/u;

function startsMention(text: string, at: number): boolean {
  return text[at] === "@" && (at === 0 || !WORD.test(text[at - 1] ?? ""));
}

/** The agents `text` mentions, in the order they appear, each once. An agent's name may hold spaces, so names
 * are matched whole (case-insensitively), the longest first, and must end at a word boundary. */
export function mentionedAgents<T extends Named>(text: string, agents: readonly T[]): T[] {
  const byLength = [...agents].sort((a, b) => b.name.length - a.name.length);
  const found: T[] = [];
  const lower = text.toLowerCase();
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", at + 1)) {
    if (!startsMention(text, at)) continue;
    const agent = byLength.find((a) => {
      const name = a.name.toLowerCase();
      return name && lower.startsWith(name, at + 1) && !WORD.test(text[at + 1 + name.length] ?? "");
    });
    if (agent && !found.includes(agent)) found.push(agent);
  }
  return found;
}

export interface MentionQuery {
  /** Where the `@` is. */
  start: number;
  /** What follows it up to the caret. */
  query: string;
}

/** The mention being typed at `caret` (an `@` at a word start, with no line break after it), or null. */
export function mentionAt(text: string, caret: number): MentionQuery | null {
  const before = text.slice(0, caret);
  const at = before.lastIndexOf("@");
  if (at < 0 || !startsMention(text, at)) return null;
  const query = before.slice(at + 1);
  if (query.includes("\n") || query.length > 40) return null;
  return { start: at, query };
}

/** The agents whose names fit what is typed after `@` (prefix matches first), at most `limit`. */
export function suggest<T extends Named>(query: string, agents: readonly T[], limit = 6): T[] {
  const q = query.toLowerCase();
  const prefix = agents.filter((a) => a.name.toLowerCase().startsWith(q));
  const inner = agents.filter((a) => !prefix.includes(a) && a.name.toLowerCase().includes(q));
  return [...prefix, ...inner].slice(0, limit);
}

/** `text` with the mention at `mention` completed to `@name `; the caret goes after it. */
export function complete(text: string, mention: MentionQuery, name: string): { text: string; caret: number } {
  const end = mention.start + 1 + mention.query.length;
  const inserted = `@${name} `;
  return { text: text.slice(0, mention.start) + inserted + text.slice(end), caret: mention.start + inserted.length };
}

/** The agents' names as a sentence names them: "Ada", "Ada and Bob", "Ada, Bob and Cy"; empty for none. */
export function namesOf(agents: readonly Named[]): string {
  const names = agents.map((a) => a.name);
  if (names.length <= 1) return names[0] ?? "";
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}
