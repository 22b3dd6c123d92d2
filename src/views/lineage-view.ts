// The lineage graph, drawn as inline SVG by the web view's lineage page (ui/) and by the lineage app (apps/): dagre
// (@dagrejs/dagre) places the versions left to right, and the markup is written with `html` (no script, no inline
// style: classes LINEAGE_CSS colours in both palettes). Stale paths are dashed and worded, not coloured alone. Text
// widths are estimated from a monospace font's advance, so a long name is shortened in the middle (its whole name
// stays in the title). The drawing area is the box of everything drawn: nodes, every bend of every edge and its
// arrow, and the edge labels, since dagre sizes its graph from nodes and labels only and a long edge's bends (its
// dummy nodes) may lie outside them.
import dagre from "@dagrejs/dagre";
import { html, type SafeHtml } from "./html.js";

/** What the graph needs of a version; the catalog's record and an `inspect` reply both have it. */
export interface LineageVersion {
  artifact_id: string;
  name: string;
  version: number;
  kind: string;
  current: boolean;
  stale: boolean;
}

/**
 * How a version stands to the one the graph is about: the version itself, one it was made from (upstream), one
 * made from it (downstream), an older version of its name that something current still pins, or the current version
 * of a name whose drawn version moved on.
 */
export type LineageRole = "root" | "upstream" | "downstream" | "older" | "now";

export interface LineageNode<R extends LineageVersion = LineageVersion> {
  record: R;
  role: LineageRole;
  /** Levels from the root along "made from" (upstream and downstream alike); 0 for the root, older and now. */
  depth: number;
  /** For a version that is not current: its name's current version, or null when the name was deleted. */
  now?: R | null;
}

export interface LineageEdge {
  /** The input (made from) or the old version (moved to). */
  from: string;
  /** What was made from it, or the name's current version. */
  to: string;
  kind: "made-from" | "moved-to";
  /** A made-from edge whose input is not current or is itself stale: the path a stale result comes by. */
  stale: boolean;
}

/** The versions and links a figure draws, by version id, the root first. */
export interface LineageDrawing<R extends LineageVersion = LineageVersion> {
  nodes: Map<string, LineageNode<R>>;
  edges: LineageEdge[];
}

/** Marks each made-from edge whose input is not current or is itself stale. */
export function markStaleEdges(drawing: LineageDrawing): void {
  for (const edge of drawing.edges) {
    const input = drawing.nodes.get(edge.from)?.record;
    edge.stale = edge.kind === "made-from" && input !== undefined && (!input.current || input.stale);
  }
}

/** A version's standing in words: "current", "stale", "not current — now v3", "not current — name deleted". */
export function standingOf(node: Pick<LineageNode, "record" | "now">): string {
  const words: string[] = [];
  if (node.record.stale) words.push("stale");
  if (!node.record.current) {
    words.push(node.now === null ? "not current — name deleted" : `not current — now v${node.now?.version ?? "?"}`);
  }
  return words.length === 0 ? "current" : words.join(", ");
}

/** Advance of one character of the graph's monospace font (12px) and a line's height, in px. */
const CHAR = 7.3;
const LINE = 17;
const PAD = 10;
/** Room around the drawing: an arrowhead (7 × 1.5 px stroke) and a stroke's width past the outermost point. */
const MARGIN = 12;
/** Characters of a name shown in a box; a longer one keeps its start and end. */
const NAME_CHARS = 34;
/** Wider than this, the graph keeps its size and scrolls; narrower, it shrinks to fit the page (text stays legible). */
const WIDE = 1600;

interface Placed {
  x: number;
  y: number;
  width: number;
  height: number;
}

type PlacedEdge = { points: { x: number; y: number }[]; x?: number; y?: number };

export interface LineageFigureOptions {
  /** The caption's id (the graph's accessible name) and its content. */
  captionId: string;
  caption: SafeHtml;
  /** A version's link; without one a version is a group with a title, not a link. */
  href?: (record: LineageVersion) => string;
  /** What the root's title adds (default: "the version this page is about"). */
  rootNote?: string;
}

/** The graph as an <svg> inside a <figure> whose caption names it and says how to read it. */
export function lineageFigure(drawing: LineageDrawing, options: LineageFigureOptions): SafeHtml {
  const g = new dagre.graphlib.Graph<Placed>({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 70, edgesep: 12, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const [id, node] of drawing.nodes) {
    const [first, second] = linesOf(node);
    const width = Math.ceil(Math.max(first.length, second.length) * CHAR) + 2 * PAD;
    g.setNode(id, { width, height: 2 * LINE + 2 * PAD } as Placed);
  }
  drawing.edges.forEach((edge, i) => {
    const label = edgeLabel(edge);
    g.setEdge(
      edge.from,
      edge.to,
      label === "" ? {} : { width: label.length * CHAR, height: LINE, labelpos: "c" },
      `e${i}`,
    );
  });
  dagre.layout(g);
  const placedEdges = drawing.edges.map((_, i) => g.edge({ v: _.from, w: _.to, name: `e${i}` }) as PlacedEdge);
  const box = drawnBox(
    [...drawing.nodes.keys()].map((id) => g.node(id)),
    placedEdges,
    drawing.edges.map((edge) => edgeLabel(edge).length * CHAR),
  );
  const width = Math.ceil(box.right - box.left);
  const height = Math.ceil(box.bottom - box.top);
  const edges = drawing.edges.map((edge, i) => edgeMarkup(drawing, edge, placedEdges[i] as PlacedEdge));
  const nodes = [...drawing.nodes].map(([id, node]) =>
    nodeMarkup(node, g.node(id), options.href, options.rootNote ?? "the version this page is about"),
  );
  return html`<figure class="lineage">
<div class="graph-wrap"><svg class="lineage-graph${width > WIDE ? " wide" : ""}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${round(box.left)} ${round(box.top)} ${width} ${height}" role="group" aria-labelledby="${options.captionId}">
<defs>
<marker id="arrow" class="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"></path></marker>
<marker id="arrow-stale" class="arrow stale" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"></path></marker>
</defs>
<g class="edges">${edges}</g>
<g class="nodes">${nodes}</g>
</svg></div>
<figcaption id="${options.captionId}">${options.caption}</figcaption>
</figure>`;
}

/** The box around the nodes, every point of every edge and the edge labels (`labelWidths`), with MARGIN around. */
export function drawnBox(
  nodes: readonly Placed[],
  edges: readonly PlacedEdge[],
  labelWidths: readonly number[],
): { left: number; top: number; right: number; bottom: number } {
  let left = Number.POSITIVE_INFINITY;
  let top = Number.POSITIVE_INFINITY;
  let right = Number.NEGATIVE_INFINITY;
  let bottom = Number.NEGATIVE_INFINITY;
  const take = (x0: number, y0: number, x1: number, y1: number) => {
    left = Math.min(left, x0);
    top = Math.min(top, y0);
    right = Math.max(right, x1);
    bottom = Math.max(bottom, y1);
  };
  for (const n of nodes) take(n.x - n.width / 2, n.y - n.height / 2, n.x + n.width / 2, n.y + n.height / 2);
  edges.forEach((edge, i) => {
    for (const p of edge.points) take(p.x, p.y, p.x, p.y);
    const half = (labelWidths[i] ?? 0) / 2;
    if (half > 0 && edge.x !== undefined && edge.y !== undefined) {
      take(edge.x - half, edge.y - LINE / 2, edge.x + half, edge.y + LINE / 2);
    }
  });
  if (left === Number.POSITIVE_INFINITY) return { left: 0, top: 0, right: 0, bottom: 0 };
  return {
    left: Math.floor(left - MARGIN),
    top: Math.floor(top - MARGIN),
    right: Math.ceil(right + MARGIN),
    bottom: Math.ceil(bottom + MARGIN),
  };
}

/** The two lines of a version's box: its name and number; its kind and standing. */
function linesOf(node: LineageNode): [string, string] {
  const { record } = node;
  const name =
    record.name.length <= NAME_CHARS
      ? record.name
      : `${record.name.slice(0, NAME_CHARS / 2 - 1)}…${record.name.slice(-(NAME_CHARS / 2))}`;
  return [`${name} v${record.version}`, `${record.kind} · ${standingOf(node)}`];
}

/** What an edge says beside its line; plain edges say nothing (the arrow is "made from"). */
function edgeLabel(edge: LineageEdge): string {
  if (edge.kind === "moved-to") return "moved to";
  return edge.stale ? "stale input" : "";
}

function nodeMarkup(node: LineageNode, placed: Placed, href: LineageFigureOptions["href"], rootNote: string): SafeHtml {
  const [first, second] = linesOf(node);
  const { record } = node;
  const left = placed.x - placed.width / 2;
  const top = placed.y - placed.height / 2;
  const classes = ["node", node.role, record.stale ? "stale" : "", record.current ? "" : "old"].filter(Boolean);
  const title = `${record.name} v${record.version}, ${record.kind}, ${standingOf(node)}${node.role === "root" ? ` — ${rootNote}` : ""}`;
  const inner = html`<title>${title}</title>
<rect x="${left}" y="${top}" width="${placed.width}" height="${placed.height}" rx="6"></rect>
<text x="${left + PAD}" y="${top + PAD + LINE - 4}"><tspan class="name">${first}</tspan><tspan x="${left + PAD}" dy="${LINE}" class="standing">${second}</tspan></text>`;
  return href === undefined
    ? html`<g class="${classes.join(" ")}" data-id="${record.artifact_id}">${inner}</g>`
    : html`<a href="${href(record)}" class="${classes.join(" ")}">
${inner}
</a>`;
}

function edgeMarkup(drawing: LineageDrawing, edge: LineageEdge, placed: PlacedEdge): SafeHtml {
  const from = drawing.nodes.get(edge.from)?.record;
  const to = drawing.nodes.get(edge.to)?.record;
  const path = placed.points.map((p, i) => `${i === 0 ? "M" : "L"}${round(p.x)},${round(p.y)}`).join(" ");
  const label = edgeLabel(edge);
  const what =
    edge.kind === "moved-to"
      ? `${from?.name} v${from?.version} moved to v${to?.version}`
      : `${to?.name} v${to?.version} was made from ${from?.name} v${from?.version}${edge.stale ? ` (stale input: ${from?.current ? "itself stale" : "no longer current"})` : ""}`;
  const classes = ["edge", edge.kind, edge.stale ? "stale" : ""].filter(Boolean).join(" ");
  return html`<g class="${classes}"><title>${what}</title><path d="${path}" marker-end="url(#${edge.stale ? "arrow-stale" : "arrow"})"></path>${
    label === "" || placed.x === undefined || placed.y === undefined
      ? ""
      : html`<text x="${round(placed.x)}" y="${round(placed.y + 4)}" text-anchor="middle" class="edge-label">${label}</text>`
  }</g>`;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/** The graph's rules, in the web view's stylesheet and the lineage app's. */
export const LINEAGE_CSS = `figure.lineage { margin: 0.75rem 0 1rem; }
figure.lineage figcaption { color: var(--muted); font-size: 0.875rem; max-width: 60rem; margin-top: 0.4rem; }
figure.lineage figcaption strong { color: var(--fg); }
.graph-wrap { overflow-x: auto; border: 1px solid var(--line); background: var(--bg); padding: 0.25rem; }
svg.lineage-graph { display: block; max-width: 100%; height: auto; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
svg.lineage-graph.wide { max-width: none; }
svg.lineage-graph .node rect { fill: var(--panel); stroke: var(--muted); stroke-width: 1.5; }
svg.lineage-graph .node text { fill: var(--fg); }
svg.lineage-graph .node .name { font-weight: 700; }
svg.lineage-graph .node.root rect { stroke: var(--link); stroke-width: 3.5; }
svg.lineage-graph .node.old rect { stroke-dasharray: 3 3; }
svg.lineage-graph .node.stale rect { fill: var(--stale-bg); stroke: var(--stale-fg); stroke-dasharray: 7 4; }
svg.lineage-graph .node.stale text { fill: var(--stale-fg); }
svg.lineage-graph .node.root.stale rect { stroke-width: 3.5; }
svg.lineage-graph a:focus-visible rect { stroke: var(--focus); stroke-width: 4; stroke-dasharray: none; }
svg.lineage-graph .edge path { fill: none; stroke: var(--muted); stroke-width: 1.5; }
svg.lineage-graph .edge.stale path { stroke: var(--stale-fg); stroke-width: 2.5; stroke-dasharray: 8 5; }
svg.lineage-graph .edge.moved-to path { stroke-dasharray: 2 4; }
svg.lineage-graph .edge-label { fill: var(--fg); font-size: 11px; paint-order: stroke; stroke: var(--bg); stroke-width: 4px; }
svg.lineage-graph .edge.stale .edge-label { fill: var(--stale-fg); font-weight: 700; }
svg.lineage-graph marker path { fill: var(--muted); }
svg.lineage-graph marker.stale path { fill: var(--stale-fg); }
`;
