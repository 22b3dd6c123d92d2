// The lineage graph drawn as inline SVG: dagre (@dagrejs/dagre) places the versions left to right on the server, and
// the markup is written with `html` like every page (no script, no inline style: classes the stylesheet colours in
// both palettes). Every version is a link with a <title>; stale paths are dashed and worded, not coloured alone.
// Text widths are estimated from a monospace font's advance, so a long name is shortened in the middle (its whole
// name stays in the title and in the list below the graph).
import dagre from "@dagrejs/dagre";
import { html, type SafeHtml } from "../views/html.js";
import type { LineageEdge, LineageGraph, LineageNode } from "./graph-lineage.js";
import { standingOf } from "./graph-lineage.js";
import { artifactHref } from "./links.js";

/** Advance of one character of the graph's monospace font (12px) and a line's height, in px. */
const CHAR = 7.3;
const LINE = 17;
const PAD = 10;
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

/** The graph as an <svg> inside a <figure> whose caption (id `captionId`) names it and says how to read it. */
export function lineageFigure(graph: LineageGraph, captionId: string, caption: SafeHtml): SafeHtml {
  const g = new dagre.graphlib.Graph<Placed>({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 70, edgesep: 12, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const [id, node] of graph.nodes) {
    const [first, second] = linesOf(node);
    const width = Math.ceil(Math.max(first.length, second.length) * CHAR) + 2 * PAD;
    g.setNode(id, { width, height: 2 * LINE + 2 * PAD } as Placed);
  }
  graph.edges.forEach((edge, i) => {
    const label = edgeLabel(edge);
    g.setEdge(
      edge.from,
      edge.to,
      label === "" ? {} : { width: label.length * CHAR, height: LINE, labelpos: "c" },
      `e${i}`,
    );
  });
  dagre.layout(g);
  const size = g.graph();
  const width = Math.ceil(size.width ?? 0);
  const height = Math.ceil(size.height ?? 0);
  const edges = graph.edges.map((edge, i) => {
    const placed = g.edge({ v: edge.from, w: edge.to, name: `e${i}` }) as { points: { x: number; y: number }[] } & {
      x?: number;
      y?: number;
    };
    return edgeMarkup(graph, edge, placed);
  });
  const nodes = [...graph.nodes].map(([id, node]) => nodeMarkup(node, g.node(id)));
  return html`<figure class="lineage">
<div class="graph-wrap"><svg class="lineage-graph${width > WIDE ? " wide" : ""}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="group" aria-labelledby="${captionId}">
<defs>
<marker id="arrow" class="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"></path></marker>
<marker id="arrow-stale" class="arrow stale" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"></path></marker>
</defs>
<g class="edges">${edges}</g>
<g class="nodes">${nodes}</g>
</svg></div>
<figcaption id="${captionId}">${caption}</figcaption>
</figure>`;
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

function nodeMarkup(node: LineageNode, placed: Placed): SafeHtml {
  const [first, second] = linesOf(node);
  const { record } = node;
  const left = placed.x - placed.width / 2;
  const top = placed.y - placed.height / 2;
  const classes = ["node", node.role, record.stale ? "stale" : "", record.current ? "" : "old"].filter(Boolean);
  const title = `${record.name} v${record.version}, ${record.kind}, ${standingOf(node)}${node.role === "root" ? " — the version this page is about" : ""}`;
  return html`<a href="${artifactHref(record.name, { v: record.current ? undefined : record.version })}" class="${classes.join(" ")}">
<title>${title}</title>
<rect x="${left}" y="${top}" width="${placed.width}" height="${placed.height}" rx="6"></rect>
<text x="${left + PAD}" y="${top + PAD + LINE - 4}"><tspan class="name">${first}</tspan><tspan x="${left + PAD}" dy="${LINE}" class="standing">${second}</tspan></text>
</a>`;
}

function edgeMarkup(
  graph: LineageGraph,
  edge: LineageEdge,
  placed: { points: { x: number; y: number }[]; x?: number; y?: number },
): SafeHtml {
  const from = graph.nodes.get(edge.from)?.record;
  const to = graph.nodes.get(edge.to)?.record;
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
