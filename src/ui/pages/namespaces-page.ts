// The namespace index: every namespace one level below a namespace (or the top), most recently written first, with
// how many current versions each holds. The workspace page names the 50 most recent and links here for the rest.

import { html } from "../../views/html.js";
import { ARTIFACT_KINDS, type ArtifactKind } from "../../workspace/catalog/catalog.js";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import { formatCount, plural } from "../format.js";
import { namespacesHref, workspaceHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

/** Namespaces in one page of the index. */
export const NAMESPACES_PAGE_SIZE = 200;
const MAX_LISTED = WORKSPACE_LIMITS.namespacesListed;
const LAST_PAGE = Math.ceil(MAX_LISTED / NAMESPACES_PAGE_SIZE);

export const namespacesPage: UiRoute = {
  path: /^\/namespaces$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const ns = request.query("ns")?.replace(/\/+$/, "") || undefined;
    const kindParam = request.query("kind");
    const kind = ARTIFACT_KINDS.includes(kindParam as ArtifactKind) ? (kindParam as ArtifactKind) : undefined;
    const pageParam = request.query("page") ?? "1";
    const page = /^\d{1,6}$/.test(pageParam) ? Number(pageParam) : Number.NaN;
    if (!(page >= 1 && page <= LAST_PAGE)) {
      return {
        type: "page",
        status: 400,
        title: "No such page",
        body: html`<h1>No such page</h1>
<p>The namespace index has pages 1 to ${LAST_PAGE}; “${pageParam}” is not one of them. <a href="${namespacesHref({ ns, kind })}">Go to the first page</a>.</p>`,
      };
    }
    const workspace = await request.host.workspace();
    // The catalog names the most recent ones first: ask for every one up to the end of this page.
    const { namespaces, count } = await workspace.namespaces({
      namespace: ns,
      kind,
      limit: page * NAMESPACES_PAGE_SIZE,
    });
    const shown = namespaces.slice((page - 1) * NAMESPACES_PAGE_SIZE);
    const first = (page - 1) * NAMESPACES_PAGE_SIZE + 1;
    const where = ns === undefined ? "the workspace" : `${ns}/`;
    const title = ns === undefined ? "Namespaces" : `Namespaces under ${ns}/`;
    const hasNext = page < LAST_PAGE && count > page * NAMESPACES_PAGE_SIZE;
    return {
      type: "page",
      title,
      body: html`<h1>${title}</h1>
<p>${plural(count, "namespace")} one level below ${where}${kind === undefined ? "" : html` holding versions of kind <strong>${kind}</strong>`}, most recently written first. <a href="${workspaceHref({ ns, kind })}">Back to ${where}</a>.</p>
${
  shown.length === 0
    ? html`<p>${count === 0 ? "No namespaces here: names without a slash below it are listed on the workspace page." : "No namespaces on this page."}</p>`
    : html`<div class="table-wrap"><table class="namespaces">
<caption>Namespaces ${formatCount(first)}–${formatCount(first + shown.length - 1)} of ${formatCount(count)}</caption>
<thead><tr><th scope="col">Namespace</th><th scope="col" class="num">Current versions</th></tr></thead>
<tbody>
${shown.map((n) => html`<tr><th scope="row"><a href="${workspaceHref({ ns: n.namespace, kind })}">${n.namespace}/</a></th><td class="num">${formatCount(n.count)}</td></tr>`)}
</tbody></table></div>`
}
${
  page > 1 || hasNext
    ? html`<nav class="pager" aria-label="Pages of the namespace index">
${page > 1 ? html`<a href="${namespacesHref({ ns, kind, page: page - 1 })}" rel="prev">Previous page</a>` : ""}
${hasNext ? html`<a href="${namespacesHref({ ns, kind, page: page + 1 })}" rel="next">Next page</a>` : html`<span class="muted">Last page</span>`}
</nav>`
    : ""
}
${count > MAX_LISTED && !hasNext ? html`<p class="muted">The index stops at ${formatCount(MAX_LISTED)} namespaces; find the others by name with the find box on the workspace page.</p>` : ""}`,
    };
  },
};
