// One artifact: a version (the current one unless `v` says which, or a ws_ id in the path), its metadata, why it is
// stale, what it pins, a checkpoint's fields or a saved query's SQL, a preview, a download link, and its versions
// with links to the line changes between text versions.
import { isTextMediaType } from "../../media-type.js";
import { html, type SafeHtml } from "../../views/html.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { isTableVersion } from "../../workspace/table-diff.js";
import { actionsSection } from "../actions-section.js";
import { formatBytes, formatCount, formatTime } from "../format.js";
import { artifactHref, diffHref, downloadHref, lineageHref, workspaceHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { requestedVersion } from "./lookup.js";
import { nonNegative, previewOf } from "./previews.js";

/** Versions listed at once. */
const VERSIONS_PAGE = 20;

export const artifactPage: UiRoute = {
  path: /^\/artifact\/(?<ref>.+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const requested = await requestedVersion(request);
    if ("reply" in requested) return requested.reply;
    const { record } = requested;
    const workspace = await request.host.workspace();
    const before = nonNegative(request.query("before"));
    const history = await workspace.versions(record.name, { limit: VERSIONS_PAGE, before });
    const [current] = record.current ? [record] : await workspace.lookup([record.name]);
    const dependencies = await workspace.lookup(record.dependencies);
    return {
      type: "page",
      title: `${record.name} v${record.version}`,
      body: html`<nav class="crumbs" aria-label="Namespace"><ol>
<li><a href="${workspaceHref()}">workspace</a></li>
${namespacesOf(record.name).map((ns) => html`<li><a href="${workspaceHref({ ns })}">${ns.split("/").at(-1)}</a></li>`)}
</ol></nav>
<h1>${record.name} <span class="muted">v${record.version}</span></h1>
${record.summary ? html`<p>${record.summary}</p>` : ""}
${versionNote(record, current)}
${staleNote(record)}
<p><a href="${downloadHref(record.artifact_id)}" download>Download this version</a> <span class="muted">(${formatBytes(record.bytes)}, ${record.media_type})</span></p>
<p><a href="${lineageHref(record.name, { v: record.current ? undefined : record.version })}">Lineage of this version</a> <span class="muted">(what it was made from and what was made from it)</span></p>
${record.checkpoint === null ? "" : checkpointSection(record)}
${record.sql === null ? "" : querySection(record, dependencies)}
${record.dependencies.length === 0 || record.sql !== null ? "" : dependencySection(record, dependencies)}
${await previewOf(request, record)}
${versionsSection(record, history)}
${metadataList(record)}
${await actionsSection(request, record, current)}`,
    };
  },
};

/** "a/b/c" -> ["a", "a/b"]: the namespaces above a name. */
function namespacesOf(name: string): string[] {
  const parts = name.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

function versionNote(record: VersionRecord, current: VersionRecord | undefined): SafeHtml {
  if (record.current) return html``;
  if (current === undefined)
    return html`<p class="callout">This version's name has no current version any more (it was deleted).</p>`;
  return html`<p class="callout">This is version ${record.version}, superseded: the current version is <a href="${artifactHref(record.name)}">v${current.version}</a>.</p>`;
}

function staleNote(record: VersionRecord): SafeHtml {
  if (!record.stale) return html``;
  return html`<div class="callout" role="note"><p><span class="badge stale">stale</span> It was made from versions that are no longer current:</p>
<ul>
${record.stale_inputs.map(
  (s) =>
    html`<li><a href="${artifactHref(s.name, { v: s.version })}">${s.name} v${s.version}</a>, ${record.dependencies.includes(s.artifact_id) ? "which it pins" : "an input of what it pins"}, ${
      s.current_version === null
        ? "has no current version any more (its name was deleted)"
        : html`is now at <a href="${artifactHref(s.name)}">v${s.current_version}</a>`
    }.</li>`,
)}
</ul>
<p>${record.sql === null ? (record.kind === "checkpoint" ? "A session that resumes it reads these exact versions: save a new checkpoint to hand over the current ones." : "Save it again from the current inputs to bring it up to date.") : html`Refresh it to re-run its SQL on the current inputs: <code>cairn refresh ${record.name} --cascade</code>.`}</p></div>`;
}

function metadataList(record: VersionRecord): SafeHtml {
  const rows: [string, SafeHtml | string][] = [
    ["Kind", record.kind],
    ["Media type", record.media_type],
    ["Size", html`${formatBytes(record.bytes)} <span class="muted">(${formatCount(record.bytes)} bytes)</span>`],
    ["Created", html`<time datetime="${record.created_at}">${formatTime(record.created_at)}</time>`],
    ["Version id", html`<code>${record.artifact_id}</code>`],
    ["SHA-256", html`<code>${record.sha256}</code>`],
  ];
  if (record.filename) rows.push(["File name", record.filename]);
  if (record.source) rows.push(["Source", record.source]);
  return html`<section aria-labelledby="meta-heading"><h2 id="meta-heading">Metadata</h2><dl class="meta">
${rows.map(([label, value]) => html`<dt>${label}</dt><dd>${value}</dd>`)}
</dl></section>`;
}

function checkpointSection(record: VersionRecord): SafeHtml {
  const fields = record.checkpoint;
  if (fields === null) return html``;
  const entries: [string, string | undefined][] = [
    ["Objective", fields.objective],
    ["Verified", fields.verified],
    ["Next step", fields.next_step],
    ["Notes", fields.notes],
  ];
  return html`<section aria-labelledby="checkpoint-heading"><h2 id="checkpoint-heading">Checkpoint</h2><dl class="meta">
${entries.filter(([, v]) => v !== undefined && v !== "").map(([label, value]) => html`<dt>${label}</dt><dd class="pre">${value}</dd>`)}
</dl></section>
${record.dependencies.length === 0 ? "" : html`<p class="muted">It pins the versions below: a session that resumes it reads exactly these.</p>`}`;
}

function querySection(record: VersionRecord, inputs: (VersionRecord | undefined)[]): SafeHtml {
  return html`<section aria-labelledby="query-heading"><h2 id="query-heading">Saved query</h2>
<pre><code>${record.sql}</code></pre>
${Array.isArray(record.parameters) && record.parameters.length > 0 ? html`<p>Parameters: <code>${JSON.stringify(record.parameters)}</code></p>` : ""}
<p>Inputs, as <code>input1</code>…:</p>
${versionList(record.dependencies, inputs)}
</section>`;
}

function dependencySection(record: VersionRecord, dependencies: (VersionRecord | undefined)[]): SafeHtml {
  return html`<section aria-labelledby="deps-heading"><h2 id="deps-heading">Pinned versions</h2>
${versionList(record.dependencies, dependencies)}</section>`;
}

function versionList(ids: readonly string[], records: readonly (VersionRecord | undefined)[]): SafeHtml {
  return html`<ol>
${ids.map((id, i) => {
  const r = records[i];
  if (r === undefined) return html`<li><code>${id}</code> <span class="muted">(no longer stored)</span></li>`;
  return html`<li><a href="${artifactHref(r.name, { v: r.version })}">${r.name} v${r.version}</a> <span class="muted">${r.kind}, ${formatBytes(r.bytes)}</span>${r.current ? "" : html` <span class="badge stale">not current</span>`}</li>`;
})}
</ol>`;
}

function versionsSection(
  record: VersionRecord,
  history: { versions: VersionRecord[]; next_before: number | null },
): SafeHtml {
  // Text versions compare by lines, tables (CSV, Parquet) by rows.
  const text = (r: VersionRecord) => isTextMediaType(r.media_type) || isTableVersion(r);
  const list = history.versions;
  const comparable = list.filter(text);
  return html`<section aria-labelledby="versions-heading"><h2 id="versions-heading">Versions</h2>
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="versions-caption"><table class="versions">
<caption id="versions-caption">Stored versions of ${record.name}, newest first</caption>
<thead><tr><th scope="col" class="num">Version</th><th scope="col">Created</th><th scope="col" class="num">Size</th><th scope="col">Summary</th><th scope="col">Changes</th></tr></thead>
<tbody>
${list.map((r, i) => {
  const previous = list[i + 1];
  const label = html`v${r.version}${r.current ? " (current)" : ""}`;
  return html`<tr${r.version === record.version ? html` aria-current="true"` : ""}>
<th scope="row" class="num">${r.version === record.version ? html`<strong>${label}</strong>` : html`<a href="${artifactHref(r.name, { v: r.current ? undefined : r.version })}">${label}</a>`}</th>
<td><time datetime="${r.created_at}">${formatTime(r.created_at)}</time></td>
<td class="num">${formatBytes(r.bytes)}</td>
<td>${r.summary ?? ""}</td>
<td>${previous !== undefined && text(r) && text(previous) ? html`<a href="${diffHref(r.name, previous.version, r.version)}">changes from v${previous.version}</a>` : ""}</td>
</tr>`;
})}
</tbody></table></div>
${history.next_before === null ? "" : html`<p><a href="${artifactHref(record.name, { v: record.current ? undefined : record.version, before: history.next_before })}#versions-heading">Older versions</a></p>`}
${comparable.length >= 2 ? compareForm(record.name, comparable) : ""}
</section>`;
}

/** Two version pickers, each with its label, that open the line changes between them. */
function compareForm(name: string, versions: readonly VersionRecord[]): SafeHtml {
  const options = (selected: number) =>
    versions.map(
      (v) => html`<option value="${v.version}"${v.version === selected ? html` selected` : ""}>v${v.version}</option>`,
    );
  const newest = versions[0] as VersionRecord;
  const older = versions[1] as VersionRecord;
  return html`<form class="compare" method="get" action="${diffHref(name, older.version, newest.version).split("?")[0]}">
<div class="field"><label for="compare-from">From version</label><select id="compare-from" name="from">${options(older.version)}</select></div>
<div class="field"><label for="compare-to">To version</label><select id="compare-to" name="to">${options(newest.version)}</select></div>
<button type="submit">Compare</button>
</form>`;
}
