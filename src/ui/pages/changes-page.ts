// The changes page: the workspace's write events newest first (time, actor, role, operation, what: linked names,
// versions, tasks and runs), paged by the `changes` cursor, with the history-expiry note when the listing reaches
// removed events. `changes` has no filter, so the name and actor filters read pages of events here and keep the
// matches: at most SCAN_LIMIT events per request, then a link continues from where the reading stopped.

import { html, type SafeHtml } from "../../views/html.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import type { WorkspaceEvent } from "../../workspace/catalog/event-log.js";
import { CHANGES_LIMITS, type ChangesResult, changesOf } from "../../workspace/provenance.js";
import { formatCount, formatTime, plural } from "../format.js";
import { artifactHref, changesHref, taskHref, taskRunHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

/** Events shown on one unfiltered page. */
const PAGE_SIZE = 50;
/** Events one filtered request reads at most before it offers to continue. */
const SCAN_LIMIT = 1000;
/** Matches a filtered page collects before it stops (it finishes the page of events it is reading). */
const MATCHES = 50;
/** Characters of a filter the page accepts. */
const FILTER_CHARS = 200;

export const changesPage: UiRoute = {
  path: /^\/changes\/?$/,
  nav: { label: "Changes", href: changesHref() },
  async handle(request: UiRequest): Promise<UiReply> {
    const cursor = request.query("cursor");
    const name = filter(request.query("name"));
    const actor = filter(request.query("actor"));
    const workspace = await request.host.workspace();
    const filtered = name !== undefined || actor !== undefined;
    let events: WorkspaceEvent[] = [];
    let scanned = 0;
    let page: ChangesResult = { events: [], next_cursor: cursor ?? null, history: null };
    let first = true;
    // Unfiltered: one page. Filtered: pages of the most `changes` gives until enough match or the bound is read.
    while (first || (filtered && page.next_cursor !== null && events.length < MATCHES && scanned < SCAN_LIMIT)) {
      page = await changesOf(workspace, {
        limit: filtered ? CHANGES_LIMITS.maxLimit : PAGE_SIZE,
        cursor: page.next_cursor ?? undefined,
      });
      first = false;
      scanned += page.events.length;
      events.push(...page.events);
      if (filtered) events = events.filter((e) => matches(e, name, actor));
    }
    const approved = await namesOfApprovals(request, events);
    const filteredEvents = filtered ? events.filter((e) => matches(e, name, actor, approved)) : events;
    return {
      type: "page",
      title: "Changes",
      body: html`<h1>Changes</h1>
<p>Every write to the workspace, newest first: who made it, in which role, by which operation, and what it touched.</p>
${filterForm(name, actor)}
${page.history === null ? "" : html`<div class="callout" role="note"><p><strong>Older history was removed.</strong> ${page.history.note}.</p></div>`}
${summary(filteredEvents.length, scanned, filtered, cursor !== undefined)}
${filteredEvents.length === 0 ? emptyNote(filtered, cursor !== undefined) : table(filteredEvents, approved)}
${pager(cursor, page.next_cursor, name, actor, filtered && scanned >= SCAN_LIMIT && filteredEvents.length < MATCHES)}`,
    };
  },
};

function filter(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed.slice(0, FILTER_CHARS);
}

/**
 * An event matches a name when its ref is the name or under it (`reports` matches `reports/by-state`), or, for an
 * approval, when the approved version's name does; and an actor when it is exactly the actor.
 */
function matches(
  event: WorkspaceEvent,
  name: string | undefined,
  actor: string | undefined,
  approved?: ReadonlyMap<string, VersionRecord>,
): boolean {
  if (actor !== undefined && event.actor !== actor) return false;
  if (name === undefined) return true;
  const ref = event.ref ?? (event.artifact_id === null ? undefined : approved?.get(event.artifact_id)?.name);
  // Approvals name only a version: kept until their names are known (approved undefined), then matched on them.
  if (ref === undefined) return event.artifact_id !== null && approved === undefined;
  return ref === name || ref.startsWith(`${name.replace(/\/+$/, "")}/`);
}

/** The versions approvals name (their events carry an id, not a name), in one lookup. */
async function namesOfApprovals(request: UiRequest, events: readonly WorkspaceEvent[]) {
  const ids = [
    ...new Set(events.filter((e) => e.ref === null && e.artifact_id !== null).map((e) => e.artifact_id as string)),
  ];
  const found = new Map<string, VersionRecord>();
  if (ids.length === 0) return found;
  const records = await (await request.host.workspace()).lookup(ids);
  ids.forEach((id, i) => {
    const record = records[i];
    if (record !== undefined) found.set(id, record);
  });
  return found;
}

function filterForm(name: string | undefined, actor: string | undefined): SafeHtml {
  return html`<form class="find" method="get" action="${changesHref()}" role="search" aria-label="Filter changes">
<div class="field"><label for="changes-name">Name or task</label>
<input type="search" id="changes-name" name="name" value="${name ?? ""}" placeholder="e.g. reports or delays" aria-describedby="changes-hint"></div>
<div class="field"><label for="changes-actor">Actor</label>
<input type="search" id="changes-actor" name="actor" value="${actor ?? ""}" placeholder="an identity" aria-describedby="changes-hint"></div>
<button type="submit">Filter</button>
<p id="changes-hint" class="muted">A name matches itself and every name under it; an actor matches exactly. Each filtered page reads up to ${formatCount(SCAN_LIMIT)} events.</p>
</form>`;
}

function summary(shown: number, scanned: number, filtered: boolean, continued: boolean): SafeHtml {
  if (!filtered) return html`<p>${plural(shown, "event")}${continued ? ", continued" : ""}.</p>`;
  return html`<p>${plural(shown, "matching event")} among the ${plural(scanned, "event")} read${continued ? ", continued" : ""} · <a href="${changesHref()}">All changes</a></p>`;
}

function table(events: readonly WorkspaceEvent[], approved: ReadonlyMap<string, VersionRecord>): SafeHtml {
  return html`<div class="table-wrap"><table class="changes">
<caption>Workspace events, newest first</caption>
<thead><tr><th scope="col" class="num">Seq</th><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Role</th><th scope="col">Operation</th><th scope="col">What</th></tr></thead>
<tbody>${events.map(
    (e) => html`<tr>
<td class="num">${e.seq}</td>
<td><time datetime="${e.at}">${formatTime(e.at)}</time></td>
<th scope="row"><a href="${changesHref({ actor: e.actor })}" title="changes by ${e.actor}">${e.actor}</a></th>
<td>${e.role}</td>
<td><code>${e.operation}</code></td>
<td>${what(e, approved)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

/** What an event touched, linked: a task (and its run), a version of a name, an approved version, a prune's count. */
function what(event: WorkspaceEvent, approved: ReadonlyMap<string, VersionRecord>): SafeHtml {
  const detail = event.detail;
  const runId = typeof detail.run_id === "string" ? detail.run_id : undefined;
  const removed = detail.removed === true;
  if (event.ref !== null && isTaskEvent(event)) {
    const state = typeof detail.state === "string" ? detail.state : undefined;
    return html`task <a href="${taskHref(event.ref)}">${event.ref}</a>${event.operation === "task_define" && event.version !== null ? html` definition v${event.version}` : ""}${event.operation === "task_schedule" && event.version !== null ? html` schedule v${event.version}` : ""}${runId === undefined ? "" : html` · run <a href="${taskRunHref(event.ref, runId)}" class="mono">${runId}</a>`}${state === undefined ? (event.operation === "task_run" && runId !== undefined ? " started" : "") : html` ${state.replace("_", " ")}`}${typeof detail.error === "string" ? html` (<code>${detail.error}</code>)` : ""}${detail.published === true ? ", published" : ""}`;
  }
  if (event.ref !== null && event.operation.startsWith("skill_")) {
    return html`skill <strong>${event.ref}</strong>${event.version === null ? "" : html` v${event.version}`} <span class="muted">(<code>cairn skill_inspect ${event.ref}</code>)</span>`;
  }
  if (event.ref !== null) {
    const version = event.version === null ? "" : html` v${event.version}`;
    const link = removed
      ? html`${event.ref}${version} <span class="muted">(removed)</span>`
      : html`<a href="${artifactHref(event.ref, { v: event.version ?? undefined })}">${event.ref}${version}</a>`;
    return html`${link}${runId === undefined || typeof detail.task !== "string" ? "" : html` · by run <a href="${taskRunHref(detail.task, runId)}" class="mono">${runId}</a>`}`;
  }
  if (event.artifact_id !== null) {
    const record = approved.get(event.artifact_id);
    return record === undefined
      ? html`<code>${event.artifact_id}</code> <span class="muted">(no longer stored)</span>`
      : html`<a href="${artifactHref(event.artifact_id)}">${record.name} v${record.version}</a>${typeof detail.revoked === "number" ? html` · ${plural(detail.revoked, "approval")} revoked` : ""}`;
  }
  if (typeof detail.removed === "number") {
    const versions = Array.isArray(detail.versions) ? (detail.versions as unknown[]).map(String) : [];
    return html`${plural(detail.removed, "version")} removed${versions.length === 0 ? "" : html`: ${versions.join(", ")}${detail.removed > versions.length ? "…" : ""}`}`;
  }
  return html`<span class="muted">the workspace</span>`;
}

function isTaskEvent(event: WorkspaceEvent): boolean {
  return (
    event.operation === "task_define" ||
    event.operation === "task_schedule" ||
    (event.operation === "task_run" && event.artifact_id === null)
  );
}

function emptyNote(filtered: boolean, continued: boolean): SafeHtml {
  if (filtered) return html`<p>No event matches among those read. <a href="${changesHref()}">See all changes</a>.</p>`;
  if (continued) return html`<p>No older events.</p>`;
  return html`<p>No changes yet: every save, import, query saved with <code>--save-as</code>, refresh, delete, prune and task operation is recorded here as it happens.</p>`;
}

function pager(
  cursor: string | undefined,
  next: string | null,
  name: string | undefined,
  actor: string | undefined,
  stoppedAtBound: boolean,
): SafeHtml {
  if (cursor === undefined && next === null) return html``;
  return html`<nav class="pager" aria-label="Pages of changes">
${cursor === undefined ? "" : html`<a href="${changesHref({ name, actor })}">Newest changes</a>`}
${next === null ? html`<span class="muted">Oldest change</span>` : html`<a href="${changesHref({ cursor: next, name, actor })}" rel="next">${stoppedAtBound ? "Continue the search in older changes" : "Older changes"}</a>`}
</nav>`;
}
