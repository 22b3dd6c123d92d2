// The shared lineage drawing (views/lineage-view.ts): the drawing area holds every edge, even a long one dagre
// routes around the nodes (the web view's defect "the lineage graph's edges run outside its drawing area").
import { describe, expect, it } from "vitest";
import { html } from "../../src/views/html.js";
import {
  type LineageDrawing,
  type LineageVersion,
  lineageFigure,
  markStaleEdges,
} from "../../src/views/lineage-view.js";

const version = (name: string, extra: Partial<LineageVersion> = {}): LineageVersion => ({
  artifact_id: `ws_${name}`,
  name,
  version: 1,
  kind: "table",
  current: true,
  stale: false,
  ...extra,
});

/** root made from a, b and c; a and c made from b too; c made from an old version that moved on. */
function drawing(): LineageDrawing {
  const records = [
    version("reports/root", { stale: true }),
    version("a"),
    version("b"),
    version("c", { stale: true }),
    version("old", { current: false }),
    version("old-now", { version: 2 }),
  ];
  const roles = ["root", "upstream", "upstream", "upstream", "upstream", "now"] as const;
  const nodes = new Map(records.map((r, i) => [r.artifact_id, { record: r, role: roles[i] ?? "upstream", depth: 1 }]));
  const edge = (from: string, to: string, kind: "made-from" | "moved-to" = "made-from") => ({
    from: `ws_${from}`,
    to: `ws_${to}`,
    kind,
    stale: false,
  });
  const edges = [
    edge("a", "reports/root"),
    edge("b", "reports/root"),
    edge("c", "reports/root"),
    edge("b", "a"),
    edge("old", "c"),
    edge("old", "old-now", "moved-to"),
    edge("b", "c"),
  ];
  const made = { nodes, edges };
  markStaleEdges(made);
  return made;
}

function parse(svg: string) {
  const [x = 0, y = 0, w = 0, h = 0] = (/viewBox="([^"]+)"/.exec(svg)?.[1] ?? "").split(" ").map(Number);
  const paths = [...svg.matchAll(/<g class="edge[^"]*"><title>[^<]*<\/title><path d="([^"]+)"/g)].map((m) =>
    [...(m[1] as string).matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((p) => ({ x: Number(p[1]), y: Number(p[2]) })),
  );
  const rects = [...svg.matchAll(/<rect x="(-?[\d.]+)" y="(-?[\d.]+)" width="([\d.]+)" height="([\d.]+)"/g)].map(
    (m) => m.slice(1, 5).map(Number) as [number, number, number, number],
  );
  return { box: { x, y, w, h }, paths, rects };
}

describe("lineageFigure", () => {
  it("keeps every edge's path, and every version, inside the SVG's viewBox", () => {
    const svg = lineageFigure(drawing(), { captionId: "c", caption: html`Lineage` }).toString();
    const { box, paths, rects } = parse(svg);
    expect(paths).toHaveLength(7);
    const inside = (p: { x: number; y: number }) =>
      p.x >= box.x && p.y >= box.y && p.x <= box.x + box.w && p.y <= box.y + box.h;
    const outside = paths.flat().filter((p) => !inside(p));
    expect(outside).toEqual([]);
    for (const [x, y, w, h] of rects) {
      expect(inside({ x, y }) && inside({ x: x + w, y: y + h })).toBe(true);
    }
    // The fixture is one where an edge bends past the versions' own box: dagre's size alone would cut it off.
    const nodeBottom = Math.max(...rects.map(([, y, , h]) => y + h));
    const nodeTop = Math.min(...rects.map(([, y]) => y));
    expect(paths.flat().some((p) => p.y > nodeBottom || p.y < nodeTop)).toBe(true);
  });

  it("marks stale paths and draws versions as links only when given an href", () => {
    const made = drawing();
    expect(made.edges.filter((e) => e.stale).map((e) => `${e.from}>${e.to}`)).toEqual([
      "ws_c>ws_reports/root",
      "ws_old>ws_c",
    ]);
    const plain = lineageFigure(made, { captionId: "c", caption: html`x` }).toString();
    expect(plain).not.toContain("<a ");
    expect(plain).toContain('data-id="ws_a"');
    const linked = lineageFigure(made, { captionId: "c", caption: html`x`, href: (r) => `/a/${r.name}` }).toString();
    expect(linked.match(/<a href="\/a\//g)).toHaveLength(6);
    expect(linked).toContain("stale input");
  });
});
