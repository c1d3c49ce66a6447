/** The pipeline graph drawn on a canvas: each step kind has its own shape, each status its own colour and mark,
 * edges carry their route keys, and the layout is automatic (`layout.ts`). A canvas is a picture to a screen
 * reader, so the element is an image whose name lists every step with its kind and status; the screens show the
 * same facts as a table beside it. Colours come from the page's theme and follow a light/dark switch.
 *
 * When steps can be selected, each step also has a transparent button over its box: the steps are reachable with
 * Tab in the graph's order (layer by layer, left to right in each), arrow keys move between them, Home and End go to the
 * first and last, and Enter (or Space) opens the step's detail as a click does; the focused step is outlined. */
import { useEffect, useMemo, useRef, type KeyboardEvent, type MouseEvent } from "react";
import type { Graph, GraphNode } from "./graph";
import { layoutGraph, type Box, type Layout } from "./layout";
import { statusText, toneOf, type Tone } from "./status";

export interface NodeState {
  status: string;
  attempts: number;
}

interface Props {
  graph: Graph;
  states?: ReadonlyMap<string, NodeState>;
  selected?: string | null;
  onSelect?: (stepId: string) => void;
  /** What the picture is of (the start of its accessible name). */
  title: string;
}

interface Palette {
  bg: string;
  text: string;
  muted: string;
  border: string;
  tones: Record<Tone, string>;
}

function palette(el: Element): Palette {
  const css = getComputedStyle(el);
  const v = (name: string) => css.getPropertyValue(name).trim() || "#888";
  return {
    bg: v("--bg"),
    text: v("--text"),
    muted: v("--muted"),
    border: v("--border"),
    tones: { idle: v("--muted"), busy: v("--accent"), wait: v("--warn"), good: v("--ok"), bad: v("--danger"), off: v("--muted") },
  };
}

/** A status mark drawn as lines (a font may lack the glyphs): a tick, a cross, a pause, a dash. */
function drawMark(ctx: CanvasRenderingContext2D, tone: Tone, x: number, y: number): void {
  ctx.beginPath();
  switch (tone) {
    case "good":
      ctx.moveTo(x - 6, y);
      ctx.lineTo(x - 2, y + 4);
      ctx.lineTo(x + 6, y - 5);
      break;
    case "bad":
      ctx.moveTo(x - 5, y - 5);
      ctx.lineTo(x + 5, y + 5);
      ctx.moveTo(x + 5, y - 5);
      ctx.lineTo(x - 5, y + 5);
      break;
    case "wait":
      ctx.moveTo(x - 3, y - 6);
      ctx.lineTo(x - 3, y + 6);
      ctx.moveTo(x + 3, y - 6);
      ctx.lineTo(x + 3, y + 6);
      break;
    case "off":
      ctx.moveTo(x - 5, y);
      ctx.lineTo(x + 5, y);
      break;
    default:
      return;
  }
  ctx.stroke();
}

function shapePath(ctx: CanvasRenderingContext2D, kind: GraphNode["kind"], b: Box): void {
  const { x, y, w, h } = b;
  ctx.beginPath();
  switch (kind) {
    case "trigger":
    case "terminal":
      ctx.roundRect(x, y, w, h, h / 2);
      break;
    case "router": {
      const inset = 16;
      ctx.moveTo(x + inset, y);
      ctx.lineTo(x + w - inset, y);
      ctx.lineTo(x + w, y + h / 2);
      ctx.lineTo(x + w - inset, y + h);
      ctx.lineTo(x + inset, y + h);
      ctx.lineTo(x, y + h / 2);
      ctx.closePath();
      break;
    }
    case "join":
      ctx.rect(x, y, w, h);
      break;
    default:
      ctx.roundRect(x, y, w, h, 8);
  }
}

function fitText(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let t = text;
  while (t.length > 1 && ctx.measureText(`${t}…`).width > max) t = t.slice(0, -1);
  return `${t}…`;
}

function drawEdge(
  ctx: CanvasRenderingContext2D,
  p: Palette,
  a: Box,
  b: Box,
  opts: { wait: boolean; back: boolean; routeKey: string | null },
): void {
  ctx.save();
  ctx.strokeStyle = p.muted;
  ctx.fillStyle = p.muted;
  ctx.lineWidth = 1.5;
  if (opts.wait) ctx.setLineDash([5, 4]);
  let end: { x: number; y: number };
  let mid: { x: number; y: number };
  let angle: number;
  ctx.beginPath();
  if (opts.back || b.layer <= a.layer) {
    // Upwards (a cycle, which validation reports): around the right-hand side.
    const sx = a.x + a.w;
    const sy = a.y + a.h / 2;
    end = { x: b.x + b.w, y: b.y + b.h / 2 };
    const out = Math.max(sx, end.x) + 40;
    ctx.moveTo(sx, sy);
    ctx.bezierCurveTo(out, sy, out, end.y, end.x, end.y);
    mid = { x: out - 10, y: (sy + end.y) / 2 };
    angle = Math.PI;
  } else {
    const sx = a.x + a.w / 2;
    const sy = a.y + a.h;
    end = { x: b.x + b.w / 2, y: b.y };
    const bend = (end.y - sy) / 2;
    ctx.moveTo(sx, sy);
    ctx.bezierCurveTo(sx, sy + bend, end.x, end.y - bend, end.x, end.y);
    mid = { x: (sx + end.x) / 2, y: (sy + end.y) / 2 };
    angle = Math.PI / 2;
  }
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.beginPath();
  ctx.moveTo(end.x, end.y);
  ctx.lineTo(end.x - 8 * Math.cos(angle - 0.4), end.y - 8 * Math.sin(angle - 0.4));
  ctx.lineTo(end.x - 8 * Math.cos(angle + 0.4), end.y - 8 * Math.sin(angle + 0.4));
  ctx.closePath();
  ctx.fill();
  if (opts.routeKey) {
    ctx.font = "600 11px system-ui, sans-serif";
    const text = fitText(ctx, opts.routeKey, 90);
    const w = ctx.measureText(text).width + 10;
    ctx.fillStyle = p.bg;
    ctx.strokeStyle = p.border;
    ctx.beginPath();
    ctx.roundRect(mid.x - w / 2, mid.y - 9, w, 18, 9);
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = p.text;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(text, mid.x, mid.y + 0.5);
  }
  ctx.restore();
}

function drawNode(
  ctx: CanvasRenderingContext2D,
  p: Palette,
  node: GraphNode,
  b: Box,
  state: NodeState | undefined,
  selected: boolean,
  spin: number,
): void {
  const tone = toneOf(state?.status);
  const colour = state ? p.tones[tone] : p.border;
  ctx.save();
  if (node.kind === "forEach") {
    // A stack of cards: the step runs once per item.
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5;
    ctx.fillStyle = p.bg;
    ctx.beginPath();
    ctx.roundRect(b.x + 6, b.y - 6, b.w, b.h, 8);
    ctx.fill();
    ctx.stroke();
  }
  shapePath(ctx, node.kind, b);
  ctx.fillStyle = p.bg;
  ctx.fill();
  if (state && tone !== "idle") {
    ctx.globalAlpha = 0.16;
    ctx.fillStyle = colour;
    ctx.fill();
    ctx.globalAlpha = 1;
  }
  ctx.strokeStyle = colour;
  ctx.lineWidth = selected ? 3.5 : tone === "busy" ? 2.5 : 1.5;
  if (tone === "off" || node.kind === "unknown") ctx.setLineDash([4, 3]);
  ctx.stroke();
  ctx.setLineDash([]);
  if (node.kind === "terminal") {
    ctx.beginPath();
    ctx.roundRect(b.x + 4, b.y + 4, b.w - 8, b.h - 8, (b.h - 8) / 2);
    ctx.stroke();
  }
  if (node.kind === "join") {
    ctx.fillStyle = colour;
    ctx.fillRect(b.x, b.y, b.w, 4);
    ctx.fillRect(b.x, b.y + b.h - 4, b.w, 4);
  }
  const inner = node.kind === "router" ? 22 : 14;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  ctx.fillStyle = p.muted;
  ctx.font = "11px system-ui, sans-serif";
  const tag = node.body && node.kind !== "trigger" ? `${node.kind} · ${node.body}` : node.kind;
  ctx.fillText(fitText(ctx, tag, b.w - inner * 2 - 18), b.x + inner, b.y + 16);
  ctx.fillStyle = p.text;
  ctx.font = "600 13px system-ui, sans-serif";
  ctx.fillText(fitText(ctx, node.label, b.w - inner * 2 - 18), b.x + inner, b.y + 35);
  const mx = b.x + b.w - inner - 4;
  const my = b.y + b.h / 2;
  if (tone === "busy") {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2.5;
    ctx.beginPath();
    ctx.arc(mx, my, 7, spin, spin + Math.PI * 1.4);
    ctx.stroke();
  } else if (state) {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2.5;
    ctx.lineCap = "round";
    drawMark(ctx, tone, mx, my);
  }
  if (state && state.attempts > 1) {
    ctx.fillStyle = p.muted;
    ctx.font = "600 10px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(`×${state.attempts}`, b.x + b.w - inner + 6, b.y + b.h - 9);
  }
  ctx.restore();
}

function draw(canvas: HTMLCanvasElement, layout: Layout, props: Props, spin: number): void {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const ratio = window.devicePixelRatio || 1;
  const w = Math.max(1, layout.width);
  const h = Math.max(1, layout.height);
  if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
  }
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const p = palette(canvas);
  for (const e of props.graph.edges) {
    const a = layout.boxes.get(e.from);
    const b = layout.boxes.get(e.to);
    if (a && b && e.from !== e.to) {
      const back = layout.backEdges.has(`${e.from}\u0000${e.to}`);
      drawEdge(ctx, p, a, b, { wait: e.wait, back, routeKey: e.routeKey });
    }
  }
  for (const n of props.graph.nodes) {
    const b = layout.boxes.get(n.id);
    if (b) drawNode(ctx, p, n, b, props.states?.get(n.id), props.selected === n.id, spin);
  }
}

/** A step as words: its label (and id), kind, status and attempts. */
function stepName(n: GraphNode, s: NodeState | undefined): string {
  const label = n.label === n.id ? n.id : `${n.label} (${n.id})`;
  const tries = s && s.attempts > 1 ? ` after ${s.attempts} attempts` : "";
  return `${label}: ${n.kind}${s ? `, ${statusText(s.status)}${tries}` : ""}`;
}

export function describeGraph(graph: Graph, states?: ReadonlyMap<string, NodeState>): string {
  const steps = graph.nodes.map((n) => stepName(n, states?.get(n.id)));
  return steps.length ? steps.join("; ") : "no steps";
}

export function GraphCanvas(props: Props) {
  const ref = useRef<HTMLCanvasElement>(null);
  const layout = useMemo(() => layoutGraph(props.graph), [props.graph]);
  const latest = useRef(props);
  latest.current = props;
  const running = props.graph.nodes.some((n) => props.states?.get(n.id)?.status === "running");

  useEffect(() => {
    const canvas = ref.current;
    if (!canvas) return;
    let frame = 0;
    const paint = (t: number) => draw(canvas, layout, latest.current, (t / 160) % (Math.PI * 2));
    paint(performance.now());
    // A running step's spinner turns; nothing else needs frames, so an idle graph costs nothing.
    const loop = (t: number) => {
      paint(t);
      frame = requestAnimationFrame(loop);
    };
    if (running) frame = requestAnimationFrame(loop);
    const scheme = window.matchMedia("(prefers-color-scheme: dark)");
    const repaint = () => paint(performance.now());
    scheme.addEventListener("change", repaint);
    return () => {
      cancelAnimationFrame(frame);
      scheme.removeEventListener("change", repaint);
    };
  }, [layout, running, props.states, props.selected]);

  const onClick = (e: MouseEvent<HTMLCanvasElement>) => {
    if (!props.onSelect) return;
    const rect = e.currentTarget.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top;
    for (const [id, b] of layout.boxes) {
      if (x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + b.h) props.onSelect(id);
    }
  };

  const order = useMemo(() => stepOrder(props.graph, layout), [props.graph, layout]);
  const buttons = useRef(new Map<string, HTMLButtonElement>());
  const onKey = (e: KeyboardEvent<HTMLButtonElement>, index: number) => {
    const next = { ArrowRight: index + 1, ArrowDown: index + 1, ArrowLeft: index - 1, ArrowUp: index - 1, Home: 0, End: order.length - 1 }[
      e.key
    ];
    if (next === undefined) return;
    e.preventDefault();
    const target = order[Math.max(0, Math.min(order.length - 1, next))];
    if (target) buttons.current.get(target.node.id)?.focus();
  };

  return (
    <div className="graph-scroll">
      <div className="graph-box" style={{ width: layout.width, height: layout.height }}>
        <canvas
          ref={ref}
          className="graph"
          role="img"
          aria-label={`${props.title}: ${describeGraph(props.graph, props.states)}`}
          data-testid="pipeline-graph"
          onClick={onClick}
        />
        {props.onSelect &&
          order.map(({ node, box }, i) => (
            <button
              key={node.id}
              ref={(el) => {
                if (el) buttons.current.set(node.id, el);
                else buttons.current.delete(node.id);
              }}
              type="button"
              className="graph-step"
              style={{ left: box.x, top: box.y, width: box.w, height: box.h }}
              aria-label={`Step ${stepName(node, props.states?.get(node.id))}`}
              aria-current={props.selected === node.id ? "step" : undefined}
              onClick={() => props.onSelect?.(node.id)}
              onKeyDown={(e) => onKey(e, i)}
            />
          ))}
      </div>
    </div>
  );
}

/** The steps in reading order: layer by layer (the layers run top to bottom), left to right within a layer. */
export function stepOrder(graph: Graph, layout: Layout): { node: GraphNode; box: Box }[] {
  const placed: { node: GraphNode; box: Box }[] = [];
  for (const node of graph.nodes) {
    const box = layout.boxes.get(node.id);
    if (box) placed.push({ node, box });
  }
  return placed.sort((a, b) => a.box.layer - b.box.layer || a.box.x - b.box.x || a.box.y - b.box.y);
}
