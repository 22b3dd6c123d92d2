// The lineage overview: current versions that are stale, each with the inputs that moved and a link to its lineage
// graph, and the names current versions were made from, most depended on first. Each list pages on its own.

import { html, type SafeHtml } from "../../views/html.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { formatCount, formatTime } from "../format.js";
import { artifactHref, lineageHref, lineageOverviewHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { nonNegative } from "./previews.js";

/** Rows of each list at once. */
const PAGE_SIZE = 25;
/** Moved inputs named in a stale version's row; the rest are counted. */
const REASONS = 3;

export const lineageOverviewPage: UiRoute = {
  path: /^\/lineage$/,
  nav: { label: "Lineage", href: "/lineage" },
  async handle(request: UiRequest): Promise<UiReply> {
    const workspace = await request.host.workspace();
    const staleCursor = request.query("stale");
    const offset = nonNegative(request.query("offset")) ?? 0;
    const stale = await workspace.staleVersions({ limit: PAGE_SIZE, ...(staleCursor ? { cursor: staleCursor } : {}) });
    const depended = await workspace.mostDependedOn({ limit: PAGE_SIZE, offset });
    const empty = staleCursor === undefined && offset === 0 && stale.versions.length === 0 && depended.total === 0;
    return {
      type: "page",
      title: "Lineage",
      body: html`<h1>Lineage</h1>
${
  empty
    ? html`<p>Nothing in this workspace was made from another version yet, so there is no lineage to show.</p>
<p>Lineage comes from versions made from exact versions of others: a query saved with <code>save_as</code> (<code>cairn query "SELECT … FROM input1" --input data/sales --save-as reports/totals</code>, or <code>query</code> with <code>save_as</code> from an agent), a refresh of such a query, a task's steps, or a save that pins versions (a checkpoint's <code>dependencies</code>). Each artifact's page then links to its lineage graph.</p>`
    : html`${staleSection(stale, staleCursor, offset)}
${dependedSection(depended, staleCursor, offset)}`
}`,
    };
  },
};

function staleSection(
  stale: { versions: VersionRecord[]; next_cursor: string | null },
  cursor: string | undefined,
  offset: number,
): SafeHtml {
  const keep = offset === 0 ? undefined : offset;
  return html`<section aria-labelledby="stale-heading"><h2 id="stale-heading">Stale current versions</h2>
${
  stale.versions.length === 0
    ? html`<p>${cursor === undefined ? "No current version is stale: everything was made from its inputs' current versions." : "No more stale versions."}</p>`
    : html`<p class="muted">Made from a version that is no longer current (directly, or through an input), most recently saved first. A saved query is brought up to date with <code>cairn refresh NAME --cascade</code>.</p>
<div class="table-wrap"><table class="stale-versions">
<caption>Current versions that are stale${cursor === undefined ? "" : ", continued"}</caption>
<thead><tr><th scope="col">Version</th><th scope="col">Kind</th><th scope="col">Saved</th><th scope="col">Why it is stale</th><th scope="col">Lineage</th></tr></thead>
<tbody>
${stale.versions.map(
  (r) => html`<tr>
<th scope="row"><a href="${artifactHref(r.name)}">${r.name} v${r.version}</a> <span class="badge stale">stale</span></th>
<td>${r.kind}</td>
<td><time datetime="${r.created_at}">${formatTime(r.created_at)}</time></td>
<td>${reasonOf(r)}</td>
<td><a href="${lineageHref(r.name)}">lineage<span class="visually-hidden"> of ${r.name}</span></a></td>
</tr>`,
)}
</tbody></table></div>`
}
${
  cursor === undefined && stale.next_cursor === null
    ? ""
    : html`<nav class="pager" aria-label="Pages of the stale versions">
${cursor === undefined ? "" : html`<a href="${lineageOverviewHref({ offset: keep })}">First page</a>`}
${stale.next_cursor === null ? html`<span class="muted">Last page</span>` : html`<a href="${lineageOverviewHref({ stale: stale.next_cursor, offset: keep })}" rel="next">Next stale versions</a>`}
</nav>`
}
</section>`;
}

/** "made from geo/airports v1 (now v2)", the first few, the rest counted. */
function reasonOf(record: VersionRecord): SafeHtml {
  const shown = record.stale_inputs.slice(0, REASONS);
  const rest = record.stale_inputs.length - shown.length;
  return html`made from ${shown.map(
    (s, i) =>
      html`${i === 0 ? "" : ", "}<a href="${artifactHref(s.name, { v: s.version })}">${s.name} v${s.version}</a>${
        record.dependencies.includes(s.artifact_id) ? "" : " (through an input)"
      } — ${s.current_version === null ? "its name was deleted" : `now v${s.current_version}`}`,
  )}${rest > 0 ? `, and ${rest} more` : ""}`;
}

function dependedSection(
  depended: { names: { name: string; dependents: number; current_version: number | null }[]; total: number },
  staleCursor: string | undefined,
  offset: number,
): SafeHtml {
  const previous = Math.max(0, offset - PAGE_SIZE);
  const more = offset + depended.names.length < depended.total;
  return html`<section aria-labelledby="depended-heading"><h2 id="depended-heading">Most depended on</h2>
${
  depended.names.length === 0
    ? html`<p>${offset === 0 ? "No current version was made from another one." : "No more names."}</p>`
    : html`<div class="table-wrap"><table class="depended">
<caption>Names that current versions were made from, most first${offset === 0 ? "" : `, from number ${offset + 1}`} (of ${formatCount(depended.total)})</caption>
<thead><tr><th scope="col">Name</th><th scope="col" class="num">Current version</th><th scope="col" class="num">Current versions made from it</th><th scope="col">Lineage</th></tr></thead>
<tbody>
${depended.names.map(
  (n) => html`<tr>
<th scope="row">${n.current_version === null ? html`${n.name} <span class="muted">(deleted)</span>` : html`<a href="${artifactHref(n.name)}">${n.name}</a>`}</th>
<td class="num">${n.current_version === null ? "none" : `v${n.current_version}`}</td>
<td class="num">${formatCount(n.dependents)}</td>
<td>${n.current_version === null ? "" : html`<a href="${lineageHref(n.name)}">lineage<span class="visually-hidden"> of ${n.name}</span></a>`}</td>
</tr>`,
)}
</tbody></table></div>`
}
${
  offset === 0 && !more
    ? ""
    : html`<nav class="pager" aria-label="Pages of the most depended-on names">
${offset === 0 ? "" : html`<a href="${lineageOverviewHref({ stale: staleCursor, offset: previous === 0 ? undefined : previous })}">Previous names</a>`}
${more ? html`<a href="${lineageOverviewHref({ stale: staleCursor, offset: offset + PAGE_SIZE })}" rel="next">Next names</a>` : html`<span class="muted">Last page</span>`}
</nav>`
}
</section>`;
}
