// The workspace page: current versions by namespace (each namespace a link one level down), filtered by kind, a
// page at a time through list cursors; or, with a find text, the best matches of `find`. Stale versions are marked
// in words, not by colour alone.

import { html, type SafeHtml } from "../../views/html.js";
import { ARTIFACT_KINDS, type ArtifactKind } from "../../workspace/catalog/catalog.js";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import type { ListedArtifact, ListResult } from "../../workspace/types.js";
import { formatBytes, formatCount, formatTime, plural } from "../format.js";
import { artifactHref, namespacesHref, workspaceHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

/** Rows of one page of the listing. */
const PAGE_SIZE = 50;
/** find's matches shown at once (its maximum). */
const FIND_RESULTS = WORKSPACE_LIMITS.findResults.max;

export const workspacePage: UiRoute = {
  path: /^\/$/,
  nav: { label: "Workspace", href: "/" },
  async handle(request: UiRequest): Promise<UiReply> {
    const q = request.query("q");
    const ns = request.query("ns")?.replace(/\/+$/, "");
    const kindParam = request.query("kind");
    const kind = ARTIFACT_KINDS.includes(kindParam as ArtifactKind) ? (kindParam as ArtifactKind) : undefined;
    const cursor = request.query("cursor");
    const workspace = await request.host.workspace();
    if (q !== undefined) {
      const found = await workspace.find({ text: q, limit: FIND_RESULTS });
      return {
        type: "page",
        title: `Find “${q}”`,
        body: html`<h1>Find “${q}”</h1>
${findForm(q)}
<p>${found.note ?? plural(found.results.length, "match", "matches")}${found.results.length === FIND_RESULTS ? ` (the best ${FIND_RESULTS})` : ""} · <a href="${workspaceHref()}">Back to the whole workspace</a></p>
${artifactTable(
  found.results.map((r) => ({ ...r, summary: r.summary })),
  `Artifacts matching “${q}”`,
  found.results.map((r) => r.snippet),
)}`,
      };
    }
    const page = await workspace.list({ namespace: ns, kind, limit: PAGE_SIZE, cursor });
    // Later pages come without the counts: ask for them apart (one row, the overview).
    const overview = page.total === undefined ? await workspace.list({ namespace: ns, kind, limit: 1 }) : page;
    const title = ns === undefined ? "Workspace" : ns;
    return {
      type: "page",
      title,
      body: html`<h1>${title}</h1>
${crumbs(ns)}
${findForm(undefined)}
${namespaceList(overview, ns, kind)}
${kindList(overview, ns, kind)}
<p>${plural(overview.total ?? 0, "artifact")}${ns === undefined ? "" : html` under <code>${ns}/</code>`}${kind === undefined ? "" : html` of kind <strong>${kind}</strong>`}${cursor === undefined ? "" : ", continued"}</p>
${page.artifacts.length === 0 ? emptyNote(ns, kind) : artifactTable(page.artifacts, listCaption(ns, kind))}
${pager(ns, kind, cursor, page.next_cursor)}`,
    };
  },
};

function findForm(q: string | undefined): SafeHtml {
  return html`<form class="find" id="find" method="get" action="/" role="search">
<div class="field"><label for="find-text">Find</label>
<input type="search" id="find-text" name="q" value="${q ?? ""}" placeholder="words of a name, summary or content" aria-describedby="find-hint"></div>
<button type="submit">Find</button>
<p id="find-hint" class="muted">Searches names, summaries and the start of every text version. Press / to come back here.</p>
</form>`;
}

function crumbs(ns: string | undefined): SafeHtml {
  if (ns === undefined) return html``;
  const parts = ns.split("/");
  return html`<nav class="crumbs" aria-label="Namespace"><ol>
<li><a href="${workspaceHref()}">workspace</a></li>
${parts.map((part, i) => {
  const path = parts.slice(0, i + 1).join("/");
  return i === parts.length - 1
    ? html`<li><span aria-current="page">${part}</span></li>`
    : html`<li><a href="${workspaceHref({ ns: path })}">${part}</a></li>`;
})}
</ol></nav>`;
}

function namespaceList(overview: ListResult, ns: string | undefined, kind: string | undefined): SafeHtml {
  const namespaces = overview.namespaces ?? [];
  if (namespaces.length === 0) return html``;
  return html`<h2 id="namespaces">Namespaces</h2>
<ul class="chips" aria-labelledby="namespaces">
${namespaces.map((n) => html`<li><a href="${workspaceHref({ ns: n.namespace, kind })}">${n.namespace.slice((ns?.length ?? -1) + 1)}/</a> <span class="muted">${formatCount(n.count)}</span></li>`)}
${overview.more_namespaces ? html`<li><a href="${namespacesHref({ ns, kind })}">and ${plural(overview.more_namespaces, "more namespace")}</a></li>` : ""}
</ul>`;
}

function kindList(overview: ListResult, ns: string | undefined, kind: string | undefined): SafeHtml {
  const kinds = Object.entries(overview.kinds ?? {});
  if (kinds.length === 0 && kind === undefined) return html``;
  return html`<h2 id="kinds">Kinds</h2>
<ul class="chips" aria-labelledby="kinds">
<li>${kind === undefined ? html`<strong aria-current="true">all</strong>` : html`<a href="${workspaceHref({ ns })}">all</a>`}</li>
${kinds.map(([k, count]) =>
  k === kind
    ? html`<li><strong aria-current="true">${k}</strong> <span class="muted">${formatCount(count ?? 0)}</span></li>`
    : html`<li><a href="${workspaceHref({ ns, kind: k })}">${k}</a> <span class="muted">${formatCount(count ?? 0)}</span></li>`,
)}
</ul>`;
}

type Row = Pick<ListedArtifact, "name" | "version" | "kind" | "bytes" | "created_at" | "summary" | "stale">;

/** The artifacts table; `snippets` (find's matched words, in [brackets]) go under each name when given. */
function artifactTable(rows: readonly Row[], caption: string, snippets?: readonly string[]): SafeHtml {
  if (rows.length === 0) return html``;
  return html`<div class="table-wrap"><table class="artifacts">
<caption>${caption}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col" class="num">Size</th><th scope="col" class="num">Version</th><th scope="col">Created</th><th scope="col">Status</th></tr></thead>
<tbody>
${rows.map(
  (r, i) => html`<tr>
<th scope="row"><a href="${artifactHref(r.name)}">${r.name}</a>${r.summary ? html`<span class="summary">${r.summary}</span>` : ""}${snippets?.[i] ? html`<span class="summary">…${snippets[i]}…</span>` : ""}</th>
<td>${r.kind}</td>
<td class="num" title="${formatCount(r.bytes)} bytes">${formatBytes(r.bytes)}</td>
<td class="num">v${r.version}</td>
<td><time datetime="${r.created_at}">${formatTime(r.created_at)}</time></td>
<td>${r.stale ? html`<span class="badge stale" title="an input it was made from has a newer version">stale</span>` : html`<span class="muted">current</span>`}</td>
</tr>`,
)}
</tbody></table></div>`;
}

function listCaption(ns: string | undefined, kind: string | undefined): string {
  return `Current versions${ns === undefined ? "" : ` under ${ns}/`}${kind === undefined ? "" : ` of kind ${kind}`}, most recently saved first`;
}

function emptyNote(ns: string | undefined, kind: string | undefined): SafeHtml {
  if (ns === undefined && kind === undefined) {
    return html`<p>The workspace is empty. Save or import something first, e.g. <code>cairn import ./data.csv --name data/sales</code>.</p>`;
  }
  return html`<p>Nothing here. <a href="${workspaceHref()}">See the whole workspace</a>.</p>`;
}

function pager(
  ns: string | undefined,
  kind: string | undefined,
  cursor: string | undefined,
  next: string | null,
): SafeHtml {
  if (cursor === undefined && next === null) return html``;
  return html`<nav class="pager" aria-label="Pages of the list">
${cursor === undefined ? "" : html`<a href="${workspaceHref({ ns, kind })}">First page</a>`}
${next === null ? html`<span class="muted">Last page</span>` : html`<a href="${workspaceHref({ ns, kind, cursor: next })}" rel="next">Next page</a>`}
</nav>`;
}
