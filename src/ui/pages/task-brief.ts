// A run's brief as the task pages show it: its state in words, the exact sources it read, what each step computed
// (with links to the published results), what waits for approval and how to give it, the error, what was left out
// and the next step. The same fields task_status answers, laid out for a person.
import type { Brief, BriefStep } from "../../tasks/brief.js";
import { type BriefLinks, changesTable, previewTable, sourcesTable, stepsTable } from "../../views/brief-view.js";
import { html, type SafeHtml } from "../../views/html.js";
import { formatCount, plural } from "../format.js";
import { artifactHref, diffHref } from "../links.js";

export { runStateBadges, runStateWords } from "../../views/brief-view.js";

/** The web view's versions are links: to a version's page, and "since vN" to the diff page of the step's rows. */
const LINKS: BriefLinks = {
  version: (ref, text) => html`<a href="${artifactHref(ref)}">${text}</a>`,
  since: (brief, step, changes) =>
    html`since <a href="${diffHref(`tasks/${brief.task}/steps/${step.name}`, changes.since.version, step.version as number, { key: changes.key })}">v${changes.since.version}</a>`,
};

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
${sourcesTable(brief, LINKS)}
${stepsTable(brief, LINKS)}
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

function citations(brief: Brief, headingId: string): SafeHtml {
  return html`<h3 id="${headingId}">Citations</h3><ul aria-labelledby="${headingId}">${brief.citations.map(
    (c) =>
      html`<li><a href="${artifactHref(c.artifact_id)}">${c.name} v${c.version}</a> bytes ${formatCount(c.start)}–${formatCount(c.end)}, for “${c.search}”${c.text === "" ? "" : html`<blockquote class="pre">${c.text}</blockquote>`}</li>`,
  )}</ul>`;
}
