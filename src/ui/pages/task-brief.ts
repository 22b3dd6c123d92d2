// A run's brief as the task pages show it: its state in words, the exact sources it read, what each step computed
// (with links to the published results), what waits for approval and how to give it, the error, what was left out
// and the next step. The same fields task_status answers, laid out for a person.
import type { Brief, BriefStatus, BriefStep } from "../../tasks/brief.js";
import { html, type SafeHtml } from "../../views/html.js";
import { formatCount, plural } from "../format.js";
import { artifactHref, diffHref } from "../links.js";
import { changedRowsTable, changesWords, columnWords } from "./row-changes-view.js";

/** A run's state as a person says it. */
const STATE_WORDS: Record<BriefStatus, string> = {
  succeeded: "done",
  running: "running",
  awaiting_approval: "waiting for approval",
  failed: "failed",
  cancelled: "cancelled",
  interrupted: "interrupted",
};

/** The run's state as a badge (words, never colour alone), with "stale" when a source moved since. */
export function runStateBadges(brief: Pick<Brief, "status" | "current">): SafeHtml {
  return html`<span class="badge run-${brief.status}">${STATE_WORDS[brief.status]}</span>${
    brief.current ? "" : html` <span class="badge stale" title="a source it read has a newer version now">stale</span>`
  }`;
}

/** The words of a state, for text that is not a badge. */
export function runStateWords(status: BriefStatus): string {
  return STATE_WORDS[status];
}

/** One line per step: its name, what happened and how many rows. */
export function stepSummary(steps: readonly BriefStep[]): SafeHtml {
  if (steps.length === 0) return html`<span class="muted">no step finished</span>`;
  return html`<ul class="steps-brief">${steps.map(
    (s) =>
      html`<li><strong>${s.name}</strong> ${s.status}${s.row_count === undefined ? "" : html`, ${plural(s.row_count, "row")}`}${
        s.artifact_id === undefined
          ? ""
          : html` · <a href="${artifactHref(s.artifact_id)}">result${s.version === undefined ? "" : html` v${s.version}`}</a>`
      }</li>`,
  )}</ul>`;
}

/** The whole brief: sources, steps with their preview rows, approvals needed, citations, error, omissions, next step. */
export function briefSections(brief: Brief, idPrefix: string): SafeHtml {
  const id = (part: string) => `${idPrefix}-${part}`;
  return html`${brief.error === undefined ? "" : errorNote(brief)}
${approvalsNeeded(brief, id("approvals"))}
${brief.next_step === undefined ? "" : html`<div class="next-step"><h3>Next step</h3><p><code>${brief.next_step}</code></p></div>`}
${sourcesTable(brief)}
${stepsTable(brief)}
${brief.steps.map((s, i) => changesTable(brief, s, `${id("changes")}-${i}`))}
${brief.steps.filter((s) => (s.rows?.length ?? 0) > 0).map((s, i) => previewTable(s, `${id("preview")}-${i}`))}
${brief.citations.length === 0 ? "" : citations(brief, id("citations"))}
${brief.run_artifact === null ? "" : html`<p>Run artifact (what the run pinned and produced): <a href="${artifactHref(brief.run_artifact)}"><code>${brief.run_artifact}</code></a>${brief.published ? "" : " (not published: a newer run published first)"}</p>`}
${brief.omitted.length === 0 ? "" : html`<h3 id="${id("omitted")}">Not in this brief</h3><ul aria-labelledby="${id("omitted")}">${brief.omitted.map((o) => html`<li>${o}</li>`)}</ul>`}`;
}

function errorNote(brief: Brief): SafeHtml {
  const error = brief.error as NonNullable<Brief["error"]>;
  return html`<div class="callout" role="note"><p><strong>Failed${error.step === null ? "" : html` at step <code>${error.step}</code>`}</strong> (<code>${error.code}</code>)</p><p class="pre">${error.message}</p></div>`;
}

function approvalsNeeded(brief: Brief, headingId: string): SafeHtml {
  const needed = brief.approvals_needed ?? [];
  if (needed.length === 0) return html``;
  return html`<section class="callout" aria-labelledby="${headingId}"><h3 id="${headingId}">Waiting for approval</h3>
<p>${needed.length === 1 ? "This exact version must be approved" : "These exact versions must be approved"} before the gated step runs:</p>
<ul>${needed.map(
    (a) =>
      html`<li>Step <code>${a.step}</code> reads ${
        a.artifact_id === null
          ? html`<strong>${a.name}</strong> (not computed yet)`
          : html`<a href="${artifactHref(a.artifact_id)}">${a.name}${a.version === null ? "" : html` v${a.version}`}</a>: an approver runs <code>cairn approve ${a.artifact_id}</code>`
      }</li>`,
  )}</ul>
<p>Then <code>cairn task_run ${brief.task}</code> continues; finished steps are reused.</p></section>`;
}

function sourcesTable(brief: Brief): SafeHtml {
  if (brief.sources.length === 0) return html`<p class="muted">No sources.</p>`;
  return html`<div class="table-wrap"><table class="sources">
<caption>Sources: the exact versions the run read</caption>
<thead><tr><th scope="col">Alias</th><th scope="col">Exact version read</th><th scope="col">Now</th></tr></thead>
<tbody>${brief.sources.map(
    (s) => html`<tr><th scope="row"><code>${s.alias}</code></th>
<td><a href="${artifactHref(s.artifact_id)}">${s.name} v${s.version}</a></td>
<td>${s.current ? html`<span class="muted">current</span>` : html`<span class="badge stale">moved since</span> <a href="${artifactHref(s.name)}">current version</a>`}</td></tr>`,
  )}</tbody></table></div>`;
}

function stepsTable(brief: Brief): SafeHtml {
  if (brief.steps.length === 0) return html`<p class="muted">No step has finished yet.</p>`;
  return html`<div class="table-wrap"><table class="steps">
<caption>Steps, in order</caption>
<thead><tr><th scope="col">Step</th><th scope="col">Status</th><th scope="col" class="num">Rows</th><th scope="col">Result</th><th scope="col">Why</th></tr></thead>
<tbody>${brief.steps.map(
    (s) => html`<tr><th scope="row"><code>${s.name}</code></th>
<td>${s.status}</td>
<td class="num">${s.row_count === undefined ? "" : formatCount(s.row_count)}</td>
<td>${s.artifact_id === undefined ? html`<span class="muted">none</span>` : html`<a href="${artifactHref(s.artifact_id)}">tasks/${brief.task}/steps/${s.name}${s.version === undefined ? "" : html` v${s.version}`}</a>`}</td>
<td>${why(brief, s)}</td></tr>`,
  )}</tbody></table></div>`;
}

/** Why a step stands as it does: its reason, and what changed against the result it replaced (issue 31). */
function why(brief: Brief, step: BriefStep): SafeHtml {
  const changes = step.changes;
  const reason = step.reason ?? "";
  if (changes === undefined) return html`${reason}`;
  const since = changes.since.version;
  const link =
    step.version === undefined || "unavailable" in changes
      ? html`since v${since}`
      : html`since <a href="${diffHref(`tasks/${brief.task}/steps/${step.name}`, since, step.version, { key: changes.key })}">v${since}</a>`;
  return html`${reason === "" ? "" : html`${reason}. `}${changesWords(changes)} ${link}`;
}

/** The rows of a step that changed against the result it replaced, changed first. */
function changesTable(brief: Brief, step: BriefStep, captionId: string): SafeHtml {
  const changes = step.changes;
  if (changes === undefined || !("rows" in changes)) return html``;
  const total = changes.added + changes.removed + (changes.changed ?? 0);
  const columns = columnWords(changes);
  return html`${columns === "" ? "" : html`<p>Step ${step.name}: ${columns}</p>`}${changedRowsTable(
    changes.rows,
    total,
    `What changed in step ${step.name} of ${brief.task} since v${changes.since.version}`,
    captionId,
  )}`;
}

function previewTable(step: BriefStep, captionId: string): SafeHtml {
  const rows = (step.rows ?? []) as Record<string, unknown>[];
  const columns = step.columns?.map((c) => c.name) ?? Object.keys(rows[0] ?? {});
  return html`<div class="table-wrap"><table class="rows">
<caption id="${captionId}">First ${plural(rows.length, "row")} of step ${step.name}${step.row_count === undefined ? "" : html` (of ${formatCount(step.row_count)})`}</caption>
<thead><tr>${columns.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${columns.map((c) => cell(r?.[c]))}</tr>`)}</tbody></table></div>`;
}

function cell(value: unknown): SafeHtml {
  if (value === null || value === undefined) return html`<td class="null">null</td>`;
  if (typeof value === "number") return html`<td class="num">${String(value)}</td>`;
  return html`<td>${typeof value === "object" ? JSON.stringify(value) : String(value)}</td>`;
}

function citations(brief: Brief, headingId: string): SafeHtml {
  return html`<h3 id="${headingId}">Citations</h3><ul aria-labelledby="${headingId}">${brief.citations.map(
    (c) =>
      html`<li><a href="${artifactHref(c.artifact_id)}">${c.name} v${c.version}</a> bytes ${formatCount(c.start)}–${formatCount(c.end)}, for “${c.search}”${c.text === "" ? "" : html`<blockquote class="pre">${c.text}</blockquote>`}</li>`,
  )}</ul>`;
}
