// A run's brief as a person reads it, written once for the web view (a run's page) and the task brief app (inside the
// host): the run's state in words, the exact sources it read and whether each is current, the steps and their
// status with what changed since the result each replaces, the changed rows, and the preview rows. Where a version
// is named, the caller decides what it is: a link in the web view, a button that reads it through the host in the
// app (`BriefLinks`). The shapes are the brief's (tasks/brief.ts), declared here so views/ imports nothing of tasks.
import { groupDigits } from "../digits.js";
import { html, type SafeHtml } from "./html.js";
import { changedRowsTable, changesWords, columnWords, plural, type ViewChanges } from "./row-changes-view.js";

export type ViewRunStatus = "running" | "succeeded" | "failed" | "awaiting_approval" | "cancelled" | "interrupted";

export interface ViewBriefSource {
  alias: string;
  name: string;
  version: number;
  artifact_id: string;
  current: boolean;
}

export interface ViewBriefStep {
  name: string;
  status: string;
  artifact_id?: string | undefined;
  version?: number | undefined;
  row_count?: number | undefined;
  changes?: (ViewChanges & { since: { artifact_id: string; version: number } }) | undefined;
  columns?: { name: string; type: string }[] | undefined;
  rows?: unknown[] | undefined;
  reason?: string | undefined;
}

export interface ViewBrief {
  task: string;
  run_id: string;
  status: ViewRunStatus;
  current: boolean;
  sources: ViewBriefSource[];
  steps: ViewBriefStep[];
}

/** What a named version becomes: a link (web view) or a button that reads it through the host (app). */
export interface BriefLinks {
  /** A version by `ws_` id, or a name's current version; `text` is what it is called. */
  version(ref: string, text: string): SafeHtml;
  /** The "since vN" of a step's changes: the result it replaced. */
  since(brief: ViewBrief, step: ViewBriefStep, changes: NonNullable<ViewBriefStep["changes"]>): SafeHtml;
}

/** The run's badges (in words, their colours AA on their backgrounds) and the next step's box. */
export const BRIEF_CSS = `.badge { display: inline-block; padding: 0 0.45rem; border-radius: 999px; font-size: 0.8rem; font-weight: 700; border: 1px solid currentColor; }
.badge.stale { background: var(--stale-bg); color: var(--stale-fg); }
.badge.run-succeeded { background: var(--ins-bg); color: var(--ins-fg); }
.badge.run-failed, .badge.run-interrupted, .badge.run-cancelled { background: var(--del-bg); color: var(--del-fg); }
.badge.run-awaiting_approval, .badge.gate { background: var(--stale-bg); color: var(--stale-fg); }
.badge.run-running { background: var(--panel); color: var(--fg); }
.next-step { border-left: 4px solid var(--link); padding: 0.1rem 1rem; background: var(--panel); }
table.steps thead th, table.steps td:nth-child(2), table.steps td:nth-child(5) { overflow-wrap: break-word; }
`;

/** A run's state as a person says it. */
const STATE_WORDS: Record<ViewRunStatus, string> = {
  succeeded: "done",
  running: "running",
  awaiting_approval: "waiting for approval",
  failed: "failed",
  cancelled: "cancelled",
  interrupted: "interrupted",
};

/** The run's state as a badge (words, never colour alone), with "stale" when a source moved since. */
export function runStateBadges(brief: Pick<ViewBrief, "status" | "current">): SafeHtml {
  return html`<span class="badge run-${brief.status}">${STATE_WORDS[brief.status]}</span>${
    brief.current ? "" : html` <span class="badge stale" title="a source it read has a newer version now">stale</span>`
  }`;
}

/** The words of a state, for text that is not a badge. */
export function runStateWords(status: ViewRunStatus): string {
  return STATE_WORDS[status];
}

/** The exact versions the run read, and for each whether its name still points to it. */
export function sourcesTable(brief: ViewBrief, links: BriefLinks): SafeHtml {
  if (brief.sources.length === 0) return html`<p class="muted">No sources.</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Sources"><table class="sources">
<caption>Sources: the exact versions the run read</caption>
<thead><tr><th scope="col">Alias</th><th scope="col">Exact version read</th><th scope="col">Now</th></tr></thead>
<tbody>${brief.sources.map(
    (s) => html`<tr><th scope="row"><code>${s.alias}</code></th>
<td>${links.version(s.artifact_id, `${s.name} v${s.version}`)}</td>
<td>${s.current ? html`<span class="muted">current</span>` : html`<span class="badge stale">moved since</span> ${links.version(s.name, `current version of ${s.name}`)}`}</td></tr>`,
  )}</tbody></table></div>`;
}

/** The steps in order: status, rows, the published result, and why (its reason and what changed since). */
export function stepsTable(brief: ViewBrief, links: BriefLinks): SafeHtml {
  if (brief.steps.length === 0) return html`<p class="muted">No step has finished yet.</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Steps"><table class="steps">
<caption>Steps, in order</caption>
<thead><tr><th scope="col">Step</th><th scope="col">Status</th><th scope="col" class="num">Rows</th><th scope="col">Result</th><th scope="col">Why</th></tr></thead>
<tbody>${brief.steps.map(
    (s) => html`<tr><th scope="row"><code>${s.name}</code></th>
<td>${s.status}</td>
<td class="num">${s.row_count === undefined ? "" : groupDigits(s.row_count)}</td>
<td>${s.artifact_id === undefined ? html`<span class="muted">none</span>` : links.version(s.artifact_id, `tasks/${brief.task}/steps/${s.name}${s.version === undefined ? "" : ` v${s.version}`}`)}</td>
<td>${why(brief, s, links)}</td></tr>`,
  )}</tbody></table></div>`;
}

/** Why a step stands as it does: its reason, and what changed against the result it replaced. */
function why(brief: ViewBrief, step: ViewBriefStep, links: BriefLinks): SafeHtml {
  const changes = step.changes;
  const reason = step.reason ?? "";
  if (changes === undefined) return html`${reason}`;
  const since =
    step.version === undefined || changes.unavailable !== undefined
      ? html`since v${changes.since.version}`
      : links.since(brief, step, changes);
  return html`${reason === "" ? "" : html`${reason}. `}${changesWords(changes)} ${since}`;
}

/** The rows of a step that changed against the result it replaced, changed first (nothing for a first result). */
export function changesTable(brief: ViewBrief, step: ViewBriefStep, captionId: string): SafeHtml {
  const changes = step.changes;
  if (changes?.rows === undefined) return html``;
  const total = (changes.added ?? 0) + (changes.removed ?? 0) + (changes.changed ?? 0);
  const columns = columnWords(changes);
  return html`${columns === "" ? "" : html`<p>Step ${step.name}: ${columns}</p>`}${changedRowsTable(
    changes.rows,
    total,
    `What changed in step ${step.name} of ${brief.task} since v${changes.since.version}`,
    captionId,
  )}`;
}

/** A step's first rows, as the brief holds them. */
export function previewTable(step: ViewBriefStep, captionId: string): SafeHtml {
  const rows = (step.rows ?? []) as Record<string, unknown>[];
  const columns = step.columns?.map((c) => c.name) ?? Object.keys(rows[0] ?? {});
  return html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="${captionId}"><table class="rows">
<caption id="${captionId}">First ${plural(rows.length, "row")} of step ${step.name}${step.row_count === undefined ? "" : html` (of ${groupDigits(step.row_count)})`}</caption>
<thead><tr>${columns.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${columns.map((c) => cell(r?.[c]))}</tr>`)}</tbody></table></div>`;
}

function cell(value: unknown): SafeHtml {
  if (value === null || value === undefined) return html`<td class="null">null</td>`;
  if (typeof value === "number") return html`<td class="num">${String(value)}</td>`;
  return html`<td>${typeof value === "object" ? JSON.stringify(value) : String(value)}</td>`;
}
