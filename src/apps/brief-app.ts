/// <reference lib="dom" />
// The task brief app (ui://cairn/brief.html): a `task_run` or `task_status` brief inside the host, changes first —
// what each step's result changed against the result it replaced (decision 0282), keyed rows before → after — then
// the run's state, the sources and whether each is still current, the steps and their status, and the preview rows,
// all drawn by the web view's own code (views/brief-view.ts). Drill-downs are tool calls through the host: a
// version's rows (a step's result, the result it replaced, a source) are `query` pages of it by id, another run of
// the task is `task_status {name, run_id}`; the resource's CSP allows no network.
import {
  type BriefLinks,
  changesTable,
  previewTable,
  runStateBadges,
  sourcesTable,
  stepsTable,
  type ViewBrief,
  type ViewBriefStep,
} from "../views/brief-view.js";
import { html, type SafeHtml } from "../views/html.js";
import { changesTotal, changesWords, plural } from "../views/row-changes-view.js";
import { pageSql, tableMarkup } from "../views/table-view.js";
import { AppChannel, type ToolResult } from "./app-channel.js";
import { applyHostContext, FrameSize, replyError, replyJson, showNote } from "./app-frame.js";
import { isQueryShape, type QueryShape } from "./table-source.js";

/** A brief as task_run and task_status answer it (tasks/brief.ts), the fields this app reads. */
interface AppBrief extends ViewBrief {
  objective: string;
  latest_success: string | null;
  omitted: string[];
  brief_complete: boolean;
  next_step?: string;
  error?: { step: string | null; code: string; message: string };
  approvals_needed?: { step: string; artifact_id: string | null; name: string; version: number | null }[];
}

/** Rows of one version a drill-down pages. */
const PAGE_ROWS = 25;

const root = document.getElementById("app") as HTMLElement;
let args: Record<string, unknown> = {};
/** The briefs opened, the first the tool's own; "Back" returns to the one before. */
const opened: AppBrief[] = [];
/** The version whose rows are open: a page of them, and whether more follow. */
let rows: { ref: string; label: string; offset: number; reply: QueryShape; more: boolean } | undefined;
let busy = false;

const channel = new AppChannel({
  toolInput: (input) => {
    args = input;
  },
  toolResult: (result) => show(result),
  toolCancelled: () => note("The call was cancelled: there is no brief to show."),
  hostContext: (context) => applyHostContext(context),
});
const size = new FrameSize(root, channel);

function note(text: string): void {
  showNote(root, text);
  size.report(true);
}

function isBrief(value: unknown): value is AppBrief {
  const v = value as Partial<AppBrief> | undefined;
  return typeof v?.task === "string" && typeof v.run_id === "string" && Array.isArray(v.steps);
}

function show(result: ToolResult): void {
  const error = replyError(result);
  const reply = replyJson(result) as Record<string, unknown> | undefined;
  opened.length = 0;
  rows = undefined;
  if (error !== undefined) {
    note(`The call failed: ${error.code}. Its reply says why.`);
    return;
  }
  if (reply?.delivery === "unchanged" && typeof reply.run_id === "string") {
    unchanged(reply);
    return;
  }
  if (!isBrief(reply)) {
    note("This reply holds no brief.");
    return;
  }
  opened.push(reply);
  render();
}

/** `unchanged`: the caller holds this run's brief already; it opens through task_status when asked. */
function unchanged(reply: Record<string, unknown>): void {
  const task = typeof args.name === "string" ? args.name : undefined;
  root.innerHTML = html`<h1>Task ${task ?? ""} <span class="muted">run ${String(reply.run_id)}</span></h1>
<p>Unchanged since run <code>${String(reply.base_run)}</code>, the brief the caller holds: nothing to show again.</p>
${task === undefined ? "" : html`<p><button type="button" data-run="${String(reply.run_id)}">Open the brief of run ${String(reply.run_id)}</button></p>`}
<p id="status" class="muted" role="status" aria-live="polite"></p>`.toString();
  size.report(true);
}

/** Versions open their rows here; "since vN" opens the rows of the result it replaced. */
const LINKS: BriefLinks = {
  version: (ref, text) =>
    html`<button type="button" class="link" data-rows="${ref}" data-label="${text}">${text}</button>`,
  since: (_brief, _step, changes) =>
    html`since <button type="button" class="link" data-rows="${changes.since.artifact_id}" data-label="the result it replaced, v${changes.since.version}" aria-label="since v${changes.since.version}: open the rows of the result it replaced">v${changes.since.version}</button>`,
};

/** One line per step that has something to compare: what changed, in words. */
function changesFirst(brief: AppBrief): SafeHtml {
  const compared = brief.steps.filter((s) => s.changes !== undefined);
  const changed = compared.filter((s) => s.changes?.unavailable !== undefined || changesTotal(s.changes ?? {}) > 0);
  const summary =
    compared.length === 0
      ? "No step has a result before this run's to compare with: each is a first result."
      : changed.length === 0
        ? `No step's result changed against the one it replaced (${plural(compared.length, "step")} compared).`
        : `${plural(changed.length, "step")} of ${plural(compared.length, "compared step")} changed.`;
  return html`<section aria-labelledby="changes-heading"><h2 id="changes-heading">What changed since the run before</h2>
<p>${summary}</p>
${changed.length === 0 ? "" : html`<ul>${changed.map((s) => html`<li><code>${s.name}</code>: ${stepChangeWords(s)}</li>`)}</ul>`}
${changed.map((s, i) => changesTable(brief, s, `changes-${i}`))}</section>`;
}

function stepChangeWords(step: ViewBriefStep): SafeHtml {
  const changes = step.changes as NonNullable<ViewBriefStep["changes"]>;
  return html`${changesWords(changes)} since v${changes.since.version}`;
}

function render(): void {
  const brief = opened.at(-1) as AppBrief;
  const moved = brief.sources.filter((s) => !s.current);
  const needed = brief.approvals_needed ?? [];
  root.innerHTML =
    html`<h1>Task ${brief.task} <span class="muted">run ${brief.run_id}</span> ${runStateBadges(brief)}</h1>
<p>${brief.objective}</p>
<p class="nav">${navigation(brief)}</p>
${brief.error === undefined ? "" : html`<div class="callout" role="note"><p><strong>Failed${brief.error.step === null ? "" : html` at step ${brief.error.step}`}</strong> (${brief.error.code}): ${brief.error.message}</p></div>`}
${needed.length === 0 ? "" : html`<div class="callout" role="note"><p>Waiting for approval before the gated step runs:</p><ul>${needed.map((a) => html`<li>step ${a.step} reads ${a.name}${a.version === null ? " (not computed yet)" : ` v${a.version}`}</li>`)}</ul></div>`}
${moved.length === 0 ? "" : html`<div class="callout" role="note"><p>Stale: ${moved.map((s) => `${s.name} v${s.version}`).join(", ")} moved on since this run read ${moved.length === 1 ? "it" : "them"}.</p></div>`}
${changesFirst(brief)}
<h2>Run</h2>
${brief.next_step === undefined ? "" : html`<div class="next-step"><p>Next step: <code>${brief.next_step}</code></p></div>`}
${sourcesTable(brief, LINKS)}
${stepsTable(brief, LINKS)}
<section id="rows" aria-labelledby="rows-heading"${rows === undefined ? html` hidden` : ""}>${rows === undefined ? "" : rowsMarkup(rows)}</section>
${brief.steps.filter((s) => (s.rows?.length ?? 0) > 0).map((s, i) => previewTable(s, `preview-${i}`))}
${brief.omitted.length === 0 ? "" : html`<h2 id="omitted-heading">Not in this brief</h2><ul aria-labelledby="omitted-heading">${brief.omitted.map((o) => html`<li>${o}</li>`)}</ul>`}
<p id="status" class="muted" role="status" aria-live="polite"></p>`.toString();
  size.report(true);
}

/**
 * Back to the brief before, and the other runs this one names: its task's latest success, and the run the call
 * named (task_run's base_run or resume_from, task_status's base_run). No tool lists a task's runs (decision 0312).
 */
function navigation(brief: AppBrief): SafeHtml {
  const named = [
    [brief.latest_success, "the latest success"],
    [args.base_run, "the run the call compared with"],
    [args.resume_from, "the run it resumed"],
  ] as const;
  const seen = new Set(opened.map((b) => b.run_id));
  const runs = named.flatMap(([id, what]) => {
    if (typeof id !== "string" || seen.has(id)) return [];
    seen.add(id);
    return [html`<button type="button" data-run="${id}">Open ${what}, run ${id}</button>`];
  });
  const back =
    opened.length > 1
      ? html`<button type="button" data-back="1">Back to run ${(opened.at(-2) as AppBrief).run_id}</button>`
      : "";
  return html`${back}${runs}`;
}

function rowsMarkup(shown: NonNullable<typeof rows>): SafeHtml {
  const { reply, offset } = shown;
  const last = offset + reply.rows.length;
  const total = rowTotal(shown.ref);
  const range =
    reply.rows.length === 0
      ? "no rows"
      : `rows ${offset + 1}–${last}${total === undefined ? (shown.more ? ", more follow" : "") : ` of ${total}`}`;
  return html`<h2 id="rows-heading" tabindex="-1">Rows of ${shown.label}</h2>
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="rows-caption">${tableMarkup({
    columns: reply.columns,
    rows: reply.rows,
    offset,
    caption: `${shown.label}: ${range}`,
    captionId: "rows-caption",
  })}</div>
<nav class="pager" aria-label="Pages of ${shown.label}"><button type="button" data-page="${Math.max(0, offset - PAGE_ROWS)}"${offset === 0 ? " disabled" : ""}>Previous</button><button type="button" data-page="${last}"${shown.more ? "" : " disabled"}>Next</button><button type="button" data-close="1">Close the rows</button></nav>`;
}

function status(text: string): void {
  const line = document.getElementById("status");
  if (line) line.textContent = text;
}

/**
 * A page of one version's rows, by id (or a name's current version): `query` through the host, one row more than a
 * page so that its row_count says whether more follow.
 */
async function openRows(ref: string, label: string, offset: number): Promise<void> {
  const result = await channel.callServerTool("query", {
    inputs: [ref],
    sql: pageSql("SELECT * FROM input1", { offset, limit: PAGE_ROWS + 1 }),
    allow_historical: true,
  });
  const reply = replyJson(result);
  const error = replyError(result);
  if (error !== undefined || !isQueryShape(reply)) {
    status(error ? `The rows could not be read: ${error.code}: ${error.message}` : "The reply holds no rows.");
    return;
  }
  const page = reply.rows.slice(0, PAGE_ROWS);
  rows = { ref, label, offset, reply: { ...reply, rows: page }, more: reply.row_count > page.length };
  render();
  document.getElementById("rows-heading")?.focus();
}

/** How many rows a version holds, when the brief says (a step's result). */
function rowTotal(ref: string): number | undefined {
  const brief = opened.at(-1);
  return brief?.steps.find((s) => s.artifact_id === ref)?.row_count;
}

/** Another run of the same task: `task_status {name, run_id}` through the host. */
async function openRun(runId: string): Promise<void> {
  const task = opened.at(-1)?.task ?? (typeof args.name === "string" ? args.name : "");
  const result = await channel.callServerTool("task_status", { name: task, run_id: runId });
  const reply = replyJson(result);
  const error = replyError(result);
  if (error !== undefined || !isBrief(reply)) {
    status(error ? `Run ${runId} could not be read: ${error.code}: ${error.message}` : "The reply holds no brief.");
    return;
  }
  opened.push(reply);
  rows = undefined;
  render();
}

root.addEventListener("click", (event) => {
  const button = (event.target as HTMLElement).closest("button") as HTMLButtonElement | null;
  if (button === null || busy) return;
  const data = button.dataset;
  let work: Promise<void> | undefined;
  if (data.rows !== undefined) work = openRows(data.rows, data.label ?? data.rows, 0);
  else if (data.page !== undefined && rows !== undefined) work = openRows(rows.ref, rows.label, Number(data.page));
  else if (data.run !== undefined) work = openRun(data.run);
  else if (data.close !== undefined) {
    rows = undefined;
    render();
  } else if (data.back !== undefined && opened.length > 1) {
    opened.pop();
    rows = undefined;
    render();
  }
  if (work === undefined) return;
  busy = true;
  status("Asking the host…");
  work
    .catch((error: Error) => status(`The host did not answer: ${error.message}`))
    .finally(() => {
      busy = false;
    });
});

channel.connect({ name: "cairn-brief", version: "1" }).then(applyHostContext, (error: Error) => {
  note(`The host did not start this view: ${error.message}`);
});
