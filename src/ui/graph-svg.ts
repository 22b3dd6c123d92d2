// The web view's lineage graph: the shared drawing (views/lineage-view.ts, which the lineage app draws with too),
// every version a link to its artifact page.

import type { SafeHtml } from "../views/html.js";
import { lineageFigure as drawLineage } from "../views/lineage-view.js";
import type { LineageGraph } from "./graph-lineage.js";
import { artifactHref } from "./links.js";

/** The graph as an <svg> inside a <figure> whose caption (id `captionId`) names it and says how to read it. */
export function lineageFigure(graph: LineageGraph, captionId: string, caption: SafeHtml): SafeHtml {
  return drawLineage(graph, {
    captionId,
    caption,
    href: (record) => artifactHref(record.name, { v: record.current ? undefined : record.version }),
  });
}
