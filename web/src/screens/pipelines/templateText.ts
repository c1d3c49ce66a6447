/** A template as text: YAML or JSON in, the document out, and where in the text each validation problem lies.
 *
 * The server names what is wrong in one sentence (`pipelines.templates.validate`): `step check: config.reducer
 * sum needs config.outputKey`, `steps[check].config.timeoutMs: Input should be a valid integer`, `edge a→b: needs
 * a routeKey (a is a router)`. `problemPath` turns such a sentence into a path in the document; the YAML parser
 * (which reads JSON too, keeping source positions) turns the path into a line. The parser is loaded only with the
 * editor (`loadYaml`), never with the rest of the app. */
import type { Document, LineCounter } from "yaml";

export type YamlModule = typeof import("yaml");
export type Format = "yaml" | "json";
export type Path = Array<string | number>;

let loading: Promise<YamlModule> | null = null;

export function loadYaml(): Promise<YamlModule> {
  loading ??= import("yaml");
  return loading;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function listOf(value: unknown, key: string): unknown[] {
  return isObj(value) && Array.isArray(value[key]) ? value[key] : [];
}

function stepIndex(value: unknown, id: string): number | null {
  const i = listOf(value, "steps").findIndex((s) => isObj(s) && s["id"] === id);
  return i >= 0 ? i : null;
}

function stepIds(value: unknown): string[] {
  return listOf(value, "steps")
    .map((s) => (isObj(s) && typeof s["id"] === "string" ? s["id"] : null))
    .filter((id): id is string => id !== null && id !== "")
    .sort((a, b) => b.length - a.length); // the longest first: `step a-b:` is not step `a`
}

const STEP_FIELDS = new Set(["config", "trigger", "waitForStepIds", "body", "kind", "id"]);

/** `config.extras.templateId` → ["config", "extras", "templateId"]: the dotted field a sentence starts with. */
function fieldPath(rest: string): Path {
  const m = /^([A-Za-z]+(?:\.[A-Za-z0-9_]+)*)/.exec(rest);
  if (!m?.[1]) return [];
  const parts = m[1].split(".");
  return STEP_FIELDS.has(parts[0]!) ? parts : [];
}

/** A pydantic location as the server writes it: `steps[check].config.timeoutMs`, `edges[0].from`, `id`. */
function locationPath(loc: string, value: unknown): Path | null {
  const path: Path = [];
  const re = /([A-Za-z_][A-Za-z0-9_]*)|\[([^\]]*)\]|\./gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(loc)) !== null) {
    if (m[1] !== undefined) path.push(m[1]);
    else if (m[2] !== undefined) {
      const byId = path.length === 1 && path[0] === "steps" ? stepIndex(value, m[2]) : null;
      const n = Number(m[2]);
      if (byId !== null) path.push(byId);
      else if (Number.isInteger(n)) path.push(n);
      else return null;
    }
    if (re.lastIndex === loc.length) return path;
  }
  return null;
}

/** Where in the document a problem of `pipelines.templates.validate` points, or null when it names no place. */
export function problemPath(problem: string, value: unknown): Path | null {
  for (const id of stepIds(value)) {
    if (problem.startsWith(`step ${id}: `)) {
      const i = stepIndex(value, id);
      return i === null ? null : ["steps", i, ...fieldPath(problem.slice(`step ${id}: `.length))];
    }
  }
  const named = /^(?:step id|the trigger step) '(.+?)' /.exec(problem);
  if (named?.[1] !== undefined) {
    const i = stepIndex(value, named[1]);
    if (i !== null) return ["steps", i];
  }
  const edge = /^edge (.+?)→(.+?): /.exec(problem);
  if (edge) {
    const i = listOf(value, "edges").findIndex((e) => isObj(e) && e["from"] === edge[1] && e["to"] === edge[2]);
    if (i >= 0) return ["edges", i];
    const to = stepIndex(value, edge[2]!);
    return to === null ? null : ["steps", to];
  }
  if (problem.startsWith("template.id ")) return ["id"];
  const colon = problem.indexOf(": ");
  if (colon > 0) return locationPath(problem.slice(0, colon), value);
  return null;
}

export interface ParsedText {
  /** The document, or undefined when the text does not parse. */
  value: unknown;
  /** The parser's complaint, with its line (1-based) when it knows one. */
  syntaxError: { message: string; line: number | null } | null;
  /** The 1-based line of a path, or of the nearest enclosing part of it that is in the text. */
  lineOf(path: Path): number | null;
  /** The index of the step whose text holds the 1-based line, or null (the cursor is outside every step). */
  stepAt(line: number): number | null;
}

export function parseTemplateText(yaml: YamlModule, text: string): ParsedText {
  const lineCounter: LineCounter = new yaml.LineCounter();
  const doc: Document.Parsed = yaml.parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const lineOf = (path: Path): number | null => {
    for (let p = path; ; p = p.slice(0, -1)) {
      const node: unknown = p.length ? doc.getIn(p, true) : doc.contents;
      if (yaml.isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
      if (p.length === 0) return null;
    }
  };
  const stepAt = (line: number): number | null => {
    const steps: unknown = doc.getIn(["steps"], true);
    if (!yaml.isSeq(steps)) return null;
    const found = steps.items.findIndex((item) => {
      if (!yaml.isNode(item) || !item.range) return false;
      const [start, , end] = item.range;
      return lineCounter.linePos(start).line <= line && line <= lineCounter.linePos(Math.max(start, end - 1)).line;
    });
    return found >= 0 ? found : null;
  };
  const first = doc.errors[0];
  if (first) {
    const line = lineCounter.linePos(first.pos[0]).line;
    const message = first.message.split("\n")[0] ?? first.message;
    return { value: undefined, syntaxError: { message, line }, lineOf, stepAt };
  }
  return { value: doc.toJS({ maxAliasCount: 100 }) as unknown, syntaxError: null, lineOf, stepAt };
}

/** The text with the value at `path` set (or removed, for `undefined`): YAML keeps its comments and layout, as a
 * person wrote them; JSON is written out again. Null when the text does not parse (nothing to change safely). */
export function setInText(yaml: YamlModule, text: string, format: Format, path: Path, value: unknown): string | null {
  const doc = yaml.parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return null;
  if (value === undefined) doc.deleteIn(path);
  else {
    try {
      doc.setIn(path, value);
    } catch {
      // A part of the path holds a scalar (`config:` left empty): that part becomes the map the path needs.
      for (let k = path.length - 1; k > 0; k--) {
        const prefix = path.slice(0, k);
        const node: unknown = doc.getIn(prefix, true);
        if (node === undefined || yaml.isCollection(node)) continue;
        let nested: unknown = value;
        for (let j = path.length - 1; j >= k; j--) nested = { [String(path[j])]: nested };
        doc.setIn(prefix, nested);
        break;
      }
    }
  }
  if (format === "json") return templateToText(yaml, doc.toJS({ maxAliasCount: 100 }), "json");
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false }); // `[start]` stays as it was typed
}

/** The document as text in the format asked for (YAML keeps the order of the keys, as JSON does). */
export function templateToText(yaml: YamlModule, value: unknown, format: Format): string {
  return format === "json" ? `${JSON.stringify(value, null, 2)}\n` : yaml.stringify(value, { lineWidth: 0 });
}

export const NEW_TEMPLATE = `id: my-pipeline
name: My pipeline
steps:
  - id: start
    kind: trigger
    body: pipeline.trigger
  - id: hello
    kind: listen
    body: shell.run
    trigger:
      sourceStepIds: [start]
    config:
      label: Say hello
      script: echo hello
      outputKey: greeting
  - id: end
    kind: terminal
    trigger:
      sourceStepIds: [hello]
`;
