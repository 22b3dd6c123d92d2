// One identity of `cairn serve --transport http --ui`, by its label: who it is, its activity, live requests and open
// connections, its stores' usage against their limits, and its handles a page at a time. Handles are private to their
// identity: the page shows what each is (kind, size, label, times), never what it holds.
import type { HandleSummary, SessionSummary } from "../../session/session-summary.js";
import { html, type SafeHtml } from "../../views/html.js";
import { formatBytes, formatCount, plural } from "../format.js";
import { errorPage } from "../layout.js";
import { sessionHref, sessionsHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { nonNegative } from "./previews.js";
import { clientOf, identityOf, notServedHere, storeCell, usage, visibleSessions, when } from "./sessions-page.js";

/** Handles listed at once. */
export const HANDLES_PAGE = 50;
const LABEL = /^s-[0-9a-f]{12}$/;

export const sessionPage: UiRoute = {
  path: /^\/sessions\/(?<label>[^/]+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const label = request.params.label ?? "";
    const visible = await visibleSessions(request);
    if (visible === undefined) return { type: "page", status: 404, title: "No identities here", body: notServedHere() };
    // Another identity is answered as one that does not exist: the page does not tell which it is.
    const session = LABEL.test(label) ? visible.sessions.find((s) => s.label === label) : undefined;
    if (session === undefined) return sessionNotFound(label);
    const offset = nonNegative(request.query("offset")) ?? 0;
    const now = Date.now();
    return {
      type: "page",
      title: `Identity ${session.label}`,
      body: html`<nav class="crumbs" aria-label="Identities"><ol>
<li><a href="${sessionsHref()}">identities</a></li>
<li><span aria-current="page">${session.label}</span></li>
</ol></nav>
<h1>Identity <code>${session.label}</code></h1>
<dl class="meta">
<dt>Identity</dt><dd>${identityOf(session)}</dd>
<dt>Client</dt><dd>${clientOf(session)}</dd>
<dt>First active</dt><dd>${when(session.started_at, now)}</dd>
<dt>Last active</dt><dd>${when(session.last_active_at, now)}</dd>
<dt>Tool calls</dt><dd>${formatCount(session.calls)}${session.running > 0 ? `, ${formatCount(session.running)} running now` : ""}</dd>
<dt>Connections</dt><dd>${formatCount(session.connections)} open <span class="muted">(2025 sessions and stdio; a 2026-07-28 request holds none)</span></dd>
</dl>
${usageSection(session)}
${handlesSection(session, offset, now)}`,
    };
  },
};

function usageSection(s: SessionSummary): SafeHtml {
  return html`<section aria-labelledby="usage-heading"><h2 id="usage-heading">Stores' usage</h2>
<dl class="meta">
<dt>Result store</dt><dd>${storeCell(s.results, "results")} <span class="muted">(results.max_total_bytes, results.max_entries)</span></dd>
<dt>Artifact store</dt><dd>${storeCell(s.artifacts, "artifacts")} <span class="muted">(artifacts.max_total_bytes, artifacts.max_entries)</span></dd>
<dt>Spilled copies</dt><dd>${plural(s.spills.entries, "copy", "copies")} of replies too long to send whole, ${formatBytes(s.spills.bytes)} <span class="muted">(each at most ${formatBytes(s.spills.max_file_bytes)}, output.max_file_bytes)</span></dd>
<dt>Spilled, all identities</dt><dd>${usage(s.spills.process_bytes, s.spills.max_total_bytes, "bytes", "spill-total")} <span class="muted">(output.max_total_bytes, shared by every identity of this server)</span></dd>
</dl></section>`;
}

const KIND_WORDS: Record<HandleSummary["kind"], string> = {
  result: "result (save_result)",
  artifact: "artifact (save_artifact)",
  spill: "spilled reply",
};

function handlesSection(s: SessionSummary, offset: number, now: number): SafeHtml {
  const total = s.handles.length;
  const shown = s.handles.slice(offset, offset + HANDLES_PAGE);
  const heading = html`<h2 id="handles-heading">Handles</h2>
<p>Handles are private to this identity: only its own requests can read them (<code>load_result</code>, <code>load_artifact</code>, <code>read_output</code>), on any connection. This page shows what they are, never what they hold.</p>`;
  if (total === 0) {
    return html`<section aria-labelledby="handles-heading">${heading}<p>This identity holds no handle now.</p></section>`;
  }
  if (shown.length === 0) {
    return html`<section aria-labelledby="handles-heading">${heading}<p>No handles from ${formatCount(offset + 1)} on: it holds ${plural(total, "handle")}. <a href="${sessionHref(s.label)}">See the first ones</a>.</p></section>`;
  }
  const last = offset + shown.length;
  return html`<section aria-labelledby="handles-heading">${heading}
<div class="table-wrap"><table class="handles">
<caption id="handles-caption">Handles ${formatCount(offset + 1)}–${formatCount(last)} of ${formatCount(total)}, newest first</caption>
<thead><tr><th scope="col">Handle</th><th scope="col">Kind</th><th scope="col" class="num">Size</th><th scope="col">Summary</th><th scope="col">Created</th><th scope="col">Expires</th></tr></thead>
<tbody>
${shown.map(
  (h) => html`<tr>
<th scope="row"><code class="handle">${h.handle}</code></th>
<td>${KIND_WORDS[h.kind]}</td>
<td class="num" title="${formatCount(h.bytes)} bytes">${formatBytes(h.bytes)}</td>
<td>${summaryOf(h)}</td>
<td>${when(h.created_at, now)}</td>
<td>${when(h.expires_at, now)}</td>
</tr>`,
)}
</tbody></table></div>
${pager(s.label, offset, last, total)}</section>`;
}

/** The label, the file name and the media type a handle was saved with; "no label" when it has none of them. */
function summaryOf(h: HandleSummary): SafeHtml {
  const parts = [h.label, h.filename, h.media_type].filter((p): p is string => p !== undefined && p !== "");
  if (parts.length === 0) return html`<span class="muted">no label</span>`;
  return html`${h.label ?? ""}${[h.filename, h.media_type].map((p) =>
    p === undefined ? "" : html`<span class="summary">${p}</span>`,
  )}`;
}

function pager(label: string, offset: number, last: number, total: number): SafeHtml {
  if (offset === 0 && last >= total) return html``;
  const previous = Math.max(0, offset - HANDLES_PAGE);
  return html`<nav class="pager" aria-label="Pages of the handles">
${offset > HANDLES_PAGE ? html`<a href="${sessionHref(label)}">First handles</a>` : ""}
${offset === 0 ? "" : html`<a href="${sessionHref(label, { offset: previous > 0 ? previous : undefined })}" rel="prev">Previous handles</a>`}
${last >= total ? html`<span class="muted">Last handles</span>` : html`<a href="${sessionHref(label, { offset: last })}" rel="next">Next handles</a>`}
</nav>`;
}

function sessionNotFound(label: string): UiReply {
  return errorPage(
    404,
    "Identity not found",
    `No identity ${LABEL.test(label) ? label : "with this label"} that you may see.`,
    html`<ul>
<li>An identity is listed from its first request until the server restarts; a restart ends its handles.</li>
<li>Another identity is shown only to its own token and to the server's own.</li>
<li>See <a href="${sessionsHref()}">the identities</a> and open one from the list.</li>
</ul>`,
  );
}
