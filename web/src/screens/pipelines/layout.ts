/** Automatic layout of a pipeline graph, top to bottom, in the layered manner (Sugiyama's, much reduced):
 * 1. edges that close a cycle are set aside (a template with a cycle is invalid, but the editor still draws it);
 * 2. each step's layer is the longest path to it from a step nothing feeds, so every edge points downwards;
 * 3. the order within a layer is improved by a few sweeps that move each step to the mean position of its
 *    neighbours in the layers already placed (the barycentre heuristic), which removes most crossings;
 * 4. layers are centred on the widest one.
 * Templates have tens of steps, so the quadratic parts do not matter; a library would cost more than this. */
import type { Graph } from "./graph";

export const NODE_W = 168;
export const NODE_H = 54;
export const GAP_X = 36;
export const GAP_Y = 58;
export const MARGIN = 16;

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
  layer: number;
}

export interface Layout {
  boxes: Map<string, Box>;
  width: number;
  height: number;
  /** The edges set aside to break cycles (`from→to`): drawn, but not used for layering. */
  backEdges: Set<string>;
}

const SWEEPS = 4;

function backEdgesOf(ids: string[], out: Map<string, string[]>): Set<string> {
  const back = new Set<string>();
  const state = new Map<string, 1 | 2>(); // 1: on the DFS stack, 2: done
  for (const root of ids) {
    if (state.has(root)) continue;
    // An explicit stack: a long chain of steps must not overflow the call stack.
    const stack: Array<{ id: string; next: number }> = [{ id: root, next: 0 }];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const kids = out.get(top.id) ?? [];
      if (top.next >= kids.length) {
        state.set(top.id, 2);
        stack.pop();
        continue;
      }
      const kid = kids[top.next++]!;
      const s = state.get(kid);
      if (s === 1) back.add(`${top.id}\u0000${kid}`);
      else if (s === undefined) {
        state.set(kid, 1);
        stack.push({ id: kid, next: 0 });
      }
    }
  }
  return back;
}

function layersOf(ids: string[], forward: Array<[string, string]>): Map<string, number> {
  const indeg = new Map(ids.map((id) => [id, 0]));
  const out = new Map<string, string[]>();
  for (const [a, b] of forward) {
    indeg.set(b, (indeg.get(b) ?? 0) + 1);
    out.set(a, [...(out.get(a) ?? []), b]);
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  const queue = ids.filter((id) => indeg.get(id) === 0);
  while (queue.length) {
    const id = queue.shift()!;
    for (const kid of out.get(id) ?? []) {
      layer.set(kid, Math.max(layer.get(kid) ?? 0, (layer.get(id) ?? 0) + 1));
      const left = (indeg.get(kid) ?? 1) - 1;
      indeg.set(kid, left);
      if (left === 0) queue.push(kid);
    }
  }
  return layer;
}

function orderLayers(ids: string[], layer: Map<string, number>, edges: Array<[string, string]>): string[][] {
  const count = Math.max(0, ...ids.map((id) => layer.get(id) ?? 0)) + 1;
  const rows: string[][] = Array.from({ length: count }, () => []);
  for (const id of ids) rows[layer.get(id) ?? 0]!.push(id);
  const ups = new Map<string, string[]>();
  const downs = new Map<string, string[]>();
  for (const [a, b] of edges) {
    ups.set(b, [...(ups.get(b) ?? []), a]);
    downs.set(a, [...(downs.get(a) ?? []), b]);
  }
  const position = new Map<string, number>();
  const remember = () => rows.forEach((row) => row.forEach((id, i) => position.set(id, i / Math.max(1, row.length))));
  remember();
  const sweep = (row: string[], neighbours: Map<string, string[]>) => {
    const keyed = row.map((id, i) => {
      const near = (neighbours.get(id) ?? []).map((n) => position.get(n)).filter((p) => p !== undefined);
      const centre = near.length ? near.reduce((s, p) => s + p, 0) / near.length : i / Math.max(1, row.length);
      return { id, centre, i };
    });
    keyed.sort((a, b) => a.centre - b.centre || a.i - b.i);
    return keyed.map((k) => k.id);
  };
  for (let s = 0; s < SWEEPS; s++) {
    const down = s % 2 === 0;
    const order = down ? rows.keys() : [...rows.keys()].reverse();
    for (const r of order) {
      if ((down && r === 0) || (!down && r === rows.length - 1)) continue;
      rows[r] = sweep(rows[r]!, down ? ups : downs);
      rows[r]!.forEach((id, i) => position.set(id, i / Math.max(1, rows[r]!.length)));
    }
  }
  return rows;
}

export function layoutGraph(graph: Graph): Layout {
  const ids = graph.nodes.map((n) => n.id);
  const out = new Map<string, string[]>();
  for (const e of graph.edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  const backEdges = backEdgesOf(ids, out);
  const forward = graph.edges
    .filter((e) => !backEdges.has(`${e.from}\u0000${e.to}`) && e.from !== e.to)
    .map((e): [string, string] => [e.from, e.to]);
  const layer = layersOf(ids, forward);
  const rows = orderLayers(ids, layer, forward);
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = MARGIN * 2 + widest * NODE_W + (widest - 1) * GAP_X;
  const height = MARGIN * 2 + rows.length * NODE_H + Math.max(0, rows.length - 1) * GAP_Y;
  const boxes = new Map<string, Box>();
  rows.forEach((row, r) => {
    const rowWidth = row.length * NODE_W + Math.max(0, row.length - 1) * GAP_X;
    const left = (width - rowWidth) / 2;
    row.forEach((id, i) => {
      boxes.set(id, { x: left + i * (NODE_W + GAP_X), y: MARGIN + r * (NODE_H + GAP_Y), w: NODE_W, h: NODE_H, layer: r });
    });
  });
  return { boxes, width: ids.length ? width : 0, height: ids.length ? height : 0, backEdges };
}
