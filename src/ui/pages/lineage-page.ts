// The lineage of one version: a graph of what it was made from and what was made from it (graph-lineage.ts, drawn by
// graph-svg.ts), stale paths dashed and worded, then the same versions and links as two tables, so the graph is never
// the only way to read it. Bounded: what a bound left out is said, and the direct dependents page on.

import { html, type SafeHtml } from "../../views/html.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { plural } from "../format.js";
import { LINEAGE_LIMITS, type LineageGraph, type LineageNode, lineageAround, standingOf } from "../graph-lineage.js";
import { lineageFigure } from "../graph-svg.js";
import { artifactHref, lineageHref, lineageOverviewHref, workspaceHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { requestedVersion } from "./lookup.js";

export const lineagePage: UiRoute = {
  path: /^\/lineage\/(?<ref>.+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const requested = await requestedVersion(request);
    if ("reply" in requested) return requested.reply;
    const { record } = requested;
    const workspace = await request.host.workspace();
    const after = request.query("after");
    const graph = await lineageAround(workspace, record, after);
    const v = record.current ? undefined : record.version;
    const alone = graph.nodes.size === 1;
    return {
      type: "page",
      title: `Lineage of ${record.name} v${record.version}`,
      body: html`<nav class="crumbs" aria-label="Where this is"><ol>
<li><a href="${workspaceHref()}">workspace</a></li>
<li><a href="${lineageOverviewHref()}">lineage</a></li>
</ol></nav>
<h1>Lineage of ${record.name} <span class="muted">v${record.version}</span></h1>
<p><a href="${artifactHref(record.name, { v })}">Open ${record.name} v${record.version}</a> <span class="muted">(${record.kind}, ${standingOf(graph.nodes.get(record.artifact_id) as LineageNode)})</span></p>
${staleSummary(record)}
${alone ? html`<p>Nothing current was made from it, and it pins no other version: it has no lineage yet. Lineage comes from a query saved with <code>save_as</code>, a refresh, a task's steps, or a save (a checkpoint) that pins versions.</p>` : ""}
${after === undefined ? "" : html`<p class="callout">Showing a later page of the versions made from it. <a href="${lineageHref(record.name, { v })}">Back to the first page</a>.</p>`}
${lineageFigure(graph, "lineage-caption", caption(graph))}
${boundNotes(graph, v)}
${nodeTable(graph)}
${edgeTable(graph)}
${graph.downstream.next === null ? "" : html`<nav class="pager" aria-label="Pages of the versions made from it"><a href="${lineageHref(record.name, { v, after: graph.downstream.next })}" rel="next">Next page of versions made from it</a></nav>`}`,
    };
  },
};

function staleSummary(record: VersionRecord): SafeHtml {
  if (!record.stale) return html``;
  return html`<div class="callout" role="note"><p><span class="badge stale">stale</span> It was made from versions that are no longer current:</p>
<ul>${record.stale_inputs.map(
    (s) =>
      html`<li><a href="${artifactHref(s.name, { v: s.version })}">${s.name} v${s.version}</a> ${
        s.current_version === null
          ? "— its name was deleted"
          : html`— now <a href="${artifactHref(s.name)}">v${s.current_version}</a>`
      }</li>`,
  )}</ul></div>`;
}

function caption(graph: LineageGraph): SafeHtml {
  const { root } = graph;
  return html`<strong>Lineage graph of ${root.name} v${root.version}</strong>: ${plural(graph.nodes.size, "version")}, ${plural(graph.edges.length, "link")}. Arrows run from what a version was made from to what was made from it, left to right; the box with the thick border is this version. A <strong>dashed line labelled “stale input”</strong> is a stale path: made from a version that is no longer current, or that is stale itself. A <strong>dotted line labelled “moved to”</strong> joins an old version to its name's current one. Each box is a link to its version; the tables below list the same versions and links.`;
}

function boundNotes(graph: LineageGraph, v: number | undefined): SafeHtml {
  const notes: SafeHtml[] = [];
  const { upstream, downstream, root } = graph;
  if (upstream.omitted > 0) {
    notes.push(
      html`<li>${plural(upstream.omitted, "more version")} it was made from ${upstream.omitted === 1 ? "is" : "are"} not drawn: ${
        upstream.pastDepth
          ? `the graph walks ${LINEAGE_LIMITS.upstreamDepth} levels upstream, and what lies further was not read`
          : `the graph draws at most ${LINEAGE_LIMITS.upstreamVersions} versions upstream`
      }. Open the version at the left edge to follow its lineage further.</li>`,
    );
  }
  if (downstream.next !== null) {
    notes.push(
      html`<li>More current versions were made from it than the ${LINEAGE_LIMITS.downstreamVersions} drawn: <a href="${lineageHref(root.name, { v, after: downstream.next })}">the next page</a> draws the next ones.</li>`,
    );
  }
  if (downstream.more) {
    notes.push(
      html`<li>Some current versions made from the drawn ones are not drawn: the graph walks ${LINEAGE_LIMITS.downstreamDepth} levels downstream and ${LINEAGE_LIMITS.downstreamVersions} versions at most. Open a version at the right edge to follow it further.</li>`,
    );
  }
  if (downstream.olderNotAsked) {
    notes.push(
      html`<li>Only what was made from the newest ${LINEAGE_LIMITS.nameVersions} versions of ${root.name} is drawn; older versions of it may have dependents too (their own lineage pages show them).</li>`,
    );
  }
  if (notes.length === 0) return html``;
  return html`<section aria-labelledby="bounds-heading"><h2 id="bounds-heading">Not drawn</h2><ul class="bounds">${notes}</ul></section>`;
}

function relationOf(node: LineageNode, root: VersionRecord): string {
  switch (node.role) {
    case "root":
      return "this version";
    case "upstream":
      return node.depth === 1 ? "it was made from this" : `made from this, ${node.depth} levels up`;
    case "downstream":
      return node.depth === 1 ? "made from it" : `made from it, ${node.depth} levels down`;
    case "older":
      return `an older version of ${root.name}`;
    case "now":
      return "the current version of a name that moved on";
  }
}

function versionLink(record: VersionRecord): SafeHtml {
  return html`<a href="${artifactHref(record.name, { v: record.current ? undefined : record.version })}">${record.name} v${record.version}</a>`;
}

function nodeTable(graph: LineageGraph): SafeHtml {
  return html`<h2 id="list-heading">The graph as a list</h2>
<div class="table-wrap"><table class="lineage-nodes">
<caption>Versions in the lineage of ${graph.root.name} v${graph.root.version}</caption>
<thead><tr><th scope="col">Version</th><th scope="col">Kind</th><th scope="col">Standing</th><th scope="col">Relation</th><th scope="col">Lineage</th></tr></thead>
<tbody>
${[...graph.nodes.values()].map((node) => {
  const standing = standingOf(node);
  return html`<tr>
<th scope="row">${versionLink(node.record)}</th>
<td>${node.record.kind}</td>
<td>${node.record.stale ? html`<span class="badge stale">stale</span>${standing.slice("stale".length)}` : standing}</td>
<td>${relationOf(node, graph.root)}</td>
<td>${node.role === "root" ? "" : html`<a href="${lineageHref(node.record.name, { v: node.record.current ? undefined : node.record.version })}">lineage<span class="visually-hidden"> of ${node.record.name} v${node.record.version}</span></a>`}</td>
</tr>`;
})}
</tbody></table></div>`;
}

function edgeTable(graph: LineageGraph): SafeHtml {
  if (graph.edges.length === 0) return html``;
  const record = (id: string) => graph.nodes.get(id)?.record as VersionRecord;
  return html`<div class="table-wrap"><table class="lineage-edges">
<caption>Links between them</caption>
<thead><tr><th scope="col">Version</th><th scope="col">Link</th><th scope="col">Version</th><th scope="col">Stale path</th></tr></thead>
<tbody>
${graph.edges.map((edge) =>
  edge.kind === "moved-to"
    ? html`<tr><th scope="row">${versionLink(record(edge.from))}</th><td>moved to</td><td>${versionLink(record(edge.to))}</td><td>no</td></tr>`
    : html`<tr${edge.stale ? html` class="stale"` : ""}><th scope="row">${versionLink(record(edge.to))}</th><td>was made from</td><td>${versionLink(record(edge.from))}</td><td>${
        edge.stale
          ? html`<span class="badge stale">stale input</span> ${record(edge.from).current ? "it is stale itself" : "no longer current"}`
          : "no"
      }</td></tr>`,
)}
</tbody></table></div>`;
}
