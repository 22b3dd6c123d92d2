// Checkpoints, newest first, a page at a time: each one's objective, what was verified, the next step, and the
// versions it pins (a session that resumes it reads exactly those), saying in words which have moved on since.

import { html, type SafeHtml } from "../../views/html.js";
import type { CheckpointFields, VersionRecord } from "../../workspace/catalog/catalog.js";
import { formatTime, plural } from "../format.js";
import { artifactHref, checkpointsHref, lineageHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

/** Checkpoints on one page. */
const PAGE_SIZE = 20;

export const checkpointsPage: UiRoute = {
  path: /^\/checkpoints$/,
  nav: { label: "Checkpoints", href: "/checkpoints" },
  async handle(request: UiRequest): Promise<UiReply> {
    const workspace = await request.host.workspace();
    const cursor = request.query("cursor");
    const page = await workspace.list({ kind: "checkpoint", limit: PAGE_SIZE, cursor });
    // One snapshot for the checkpoints' whole records, one for every version they pin.
    const records = (await workspace.lookup(page.artifacts.map((a) => a.name))).filter((r) => r !== undefined);
    const pinnedIds = [...new Set(records.flatMap((r) => r.dependencies))];
    const pinned = new Map<string, VersionRecord>();
    (await workspace.lookup(pinnedIds)).forEach((r, i) => {
      if (r !== undefined) pinned.set(pinnedIds[i] as string, r);
    });
    return {
      type: "page",
      title: "Checkpoints",
      body: html`<h1>Checkpoints</h1>
${
  records.length === 0 && cursor === undefined
    ? emptyNote()
    : html`<p>${page.total === undefined ? "Continued: " : `${plural(page.total, "checkpoint")}, `}newest first. A session that resumes one reads exactly the versions it pins.</p>
${records.map((r) => checkpointArticle(r, pinned))}`
}
${
  cursor === undefined && page.next_cursor === null
    ? ""
    : html`<nav class="pager" aria-label="Pages of the checkpoints">
${cursor === undefined ? "" : html`<a href="${checkpointsHref()}">First page</a>`}
${page.next_cursor === null ? html`<span class="muted">Last page</span>` : html`<a href="${checkpointsHref({ cursor: page.next_cursor })}" rel="next">Older checkpoints</a>`}
</nav>`
}`,
    };
  },
};

function emptyNote(): SafeHtml {
  return html`<p>No checkpoint is saved in this workspace yet.</p>
<p>A checkpoint hands work from one session to the next: an agent saves one with <code>save</code> and a <code>checkpoint</code> of <code>{objective, verified, next_step, notes}</code>, pinning the versions it relied on in <code>dependencies</code>; the next session calls <code>resume</code> and reads those exact versions. From the command line: <code>cairn save handoff/report --checkpoint '{"objective": "…", "next_step": "…"}' --dependencies reports/totals</code>.</p>`;
}

function checkpointArticle(record: VersionRecord, pinned: ReadonlyMap<string, VersionRecord>): SafeHtml {
  const fields: CheckpointFields = record.checkpoint ?? { objective: "" };
  const headingId = `cp-${record.artifact_id}`;
  const entries: [string, string | undefined][] = [
    ["Objective", fields.objective],
    ["Verified", fields.verified],
    ["Next step", fields.next_step],
  ];
  const moved = record.dependencies.filter((id) => pinned.get(id)?.current === false).length;
  return html`<article class="checkpoint" aria-labelledby="${headingId}">
<h2 id="${headingId}"><a href="${artifactHref(record.name)}">${record.name}</a> <span class="muted">v${record.version}</span></h2>
<p class="muted">Saved <time datetime="${record.created_at}">${formatTime(record.created_at)}</time>${record.summary ? ` · ${record.summary}` : ""}</p>
<dl class="meta">
${entries.map(([label, value]) => html`<dt>${label}</dt><dd class="pre">${value === undefined || value === "" ? html`<span class="muted">not given</span>` : value}</dd>`)}
<dt>Pins</dt><dd>${
    record.dependencies.length === 0
      ? html`<span class="muted">no versions</span>`
      : html`${plural(record.dependencies.length, "version")}${moved === 0 ? ", all still current" : html`, <span class="badge stale">${moved} moved</span> since`}
<ul class="pins">${record.dependencies.map((id) => pinLine(id, pinned.get(id), record))}</ul>`
  }</dd>
</dl>
</article>`;
}

/** One pinned version and, in words, whether its name has moved on since. */
function pinLine(id: string, version: VersionRecord | undefined, checkpoint: VersionRecord): SafeHtml {
  if (version === undefined) return html`<li><code>${id}</code> <span class="muted">(no longer stored)</span></li>`;
  const link = html`<a href="${artifactHref(version.name, { v: version.current ? undefined : version.version })}">${version.name} v${version.version}</a>`;
  if (version.current) {
    return html`<li>${link} <span class="muted">${version.kind}</span> — still current${version.stale ? html`, but <span class="badge stale">stale</span> (<a href="${lineageHref(version.name)}">lineage</a>)` : ""}</li>`;
  }
  const now = checkpoint.stale_inputs.find((s) => s.artifact_id === id)?.current_version;
  return html`<li>${link} <span class="muted">${version.kind}</span> — <span class="badge stale">moved</span> ${
    now === null || now === undefined
      ? "its name was deleted since"
      : html`its name is now at <a href="${artifactHref(version.name)}">v${now}</a>`
  } (<a href="${lineageHref(version.name, { v: version.version })}">lineage</a>)</li>`;
}
