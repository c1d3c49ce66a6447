/** A template as a graph (CONTRACTS.md section 5): one node per step, an edge for every source a step listens to
 * (`trigger.sourceStepIds`), every step a join waits for (`waitForStepIds`), and every `edges` entry (which carries
 * the route key of a step downstream of a router). Built leniently: the editor draws a template while it is being
 * typed, so anything malformed is left out rather than refused (the server's validation names it). */

export const STEP_KINDS = ["trigger", "listen", "join", "router", "forEach", "terminal"] as const;
export type StepKind = (typeof STEP_KINDS)[number];

export interface GraphNode {
  id: string;
  kind: StepKind | "unknown";
  body: string | null;
  label: string;
}

export interface GraphEdge {
  from: string;
  to: string;
  routeKey: string | null;
  /** A join's wait rather than a listen: drawn dashed. */
  wait: boolean;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

function kindOf(v: unknown): StepKind | "unknown" {
  return STEP_KINDS.find((k) => k === v) ?? "unknown";
}

export function graphOf(template: unknown): Graph {
  const nodes: GraphNode[] = [];
  const seen = new Set<string>();
  const steps = isObj(template) && Array.isArray(template["steps"]) ? template["steps"] : [];
  for (const step of steps) {
    if (!isObj(step) || typeof step["id"] !== "string" || !step["id"] || seen.has(step["id"])) continue;
    const config = isObj(step["config"]) ? step["config"] : {};
    const label = typeof config["label"] === "string" && config["label"] ? config["label"] : step["id"];
    seen.add(step["id"]);
    nodes.push({
      id: step["id"],
      kind: kindOf(step["kind"]),
      body: typeof step["body"] === "string" ? step["body"] : null,
      label,
    });
  }
  const edges = new Map<string, GraphEdge>();
  const add = (from: string, to: string, wait: boolean, routeKey: string | null) => {
    if (!seen.has(from) || !seen.has(to)) return;
    const key = `${from}\u0000${to}`;
    const had = edges.get(key);
    if (had) {
      had.routeKey = routeKey ?? had.routeKey;
      had.wait = had.wait && wait;
    } else {
      edges.set(key, { from, to, routeKey, wait });
    }
  };
  for (const step of steps) {
    if (!isObj(step) || typeof step["id"] !== "string") continue;
    const trigger = isObj(step["trigger"]) ? step["trigger"] : {};
    for (const src of strings(trigger["sourceStepIds"])) add(src, step["id"], false, null);
    for (const w of strings(step["waitForStepIds"])) add(w, step["id"], true, null);
  }
  const listed = isObj(template) && Array.isArray(template["edges"]) ? template["edges"] : [];
  for (const e of listed) {
    if (!isObj(e) || typeof e["from"] !== "string" || typeof e["to"] !== "string") continue;
    add(e["from"], e["to"], false, typeof e["routeKey"] === "string" ? e["routeKey"] : null);
  }
  return { nodes, edges: [...edges.values()] };
}
