// One task: its current definition (sources, steps with their SQL or code, conditions, approval gates, searches),
// its schedule, the newest run's whole brief, and every run newest first, a page at a time, each with what its steps
// did and its next step. And one run: its whole brief (task_status with run_id), with links to what it produced.
import type { Brief } from "../../tasks/brief.js";
import type { StoredDefinition } from "../../tasks/definition.js";
import { html, type SafeHtml } from "../../views/html.js";
import type { RunRecord, TaskRecord } from "../../workspace/catalog/task-ledger.js";
import { formatTime, plural } from "../format.js";
import { errorPage } from "../layout.js";
import { artifactHref, changesHref, decodePath, taskHref, taskRunHref, tasksHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { briefSections, runStateBadges, runStateWords, stepSummary } from "./task-brief.js";
import { MAX_PAGE, pageNumber, pastLastPage, taskObjective } from "./task-paging.js";
import { scheduleText } from "./tasks-page.js";

/** Runs listed on one page. */
const RUNS_PAGE = 20;
/** Characters of a name or id a "not found" message repeats. */
const SHOWN_CHARS = 120;

export const taskPage: UiRoute = {
  path: /^\/tasks\/(?<name>[^/]+)\/?$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const name = decodePath(request.params.name ?? "");
    const [tasks, { tasks: ledger }] = await Promise.all([request.host.tasks(), request.host.workspace()]);
    const task = name === undefined ? undefined : await ledger.task(name);
    if (name === undefined || task === undefined) return missingTask(name ?? (request.params.name as string));
    const page = pageNumber(request.query("page"), taskHref(name));
    if (typeof page !== "number") return page;
    // The ledger lists runs newest first up to a count: one more than the page shows says whether another follows.
    const [listed, schedule] = await Promise.all([ledger.runs(name, page * RUNS_PAGE + 1), ledger.schedule(name)]);
    const runs = listed.slice((page - 1) * RUNS_PAGE, page * RUNS_PAGE);
    if (runs.length === 0 && page > 1) {
      const pages = Math.max(1, Math.ceil(listed.length / RUNS_PAGE));
      return pastLastPage(plural(listed.length, "run"), page, pages, taskHref(name));
    }
    const briefs = await Promise.all(runs.map((run) => tasks.briefOf(run, task.latest_success)));
    const newest = page === 1 ? briefs[0] : undefined;
    const definition = task.definition.definition as StoredDefinition;
    return {
      type: "page",
      title: `Task ${name}`,
      body: html`${crumbs(name)}
<h1>Task ${name}</h1>
${taskObjective(definition) === "" ? "" : html`<p>${taskObjective(definition)}</p>`}
<dl class="meta">
<dt>Newest run</dt><dd>${newest === undefined ? (page === 1 ? html`<span class="muted">never run: <code>cairn task_run ${name}</code></span>` : html`<a href="${taskHref(name)}">see the first page</a>`) : html`${runStateBadges(newest)} <a href="${taskRunHref(name, newest.run_id)}" class="mono">${newest.run_id}</a>`}</dd>
<dt>Latest success</dt><dd>${task.latest_success === null ? html`<span class="muted">none yet</span>` : html`<a href="${taskRunHref(name, task.latest_success)}" class="mono">${task.latest_success}</a>`}</dd>
<dt>Schedule</dt><dd>${scheduleText(schedule)}</dd>
<dt>Definition</dt><dd>v${task.current_version}, <time datetime="${task.definition.created_at}">${formatTime(task.definition.created_at)}</time>${task.definition.actor === null ? "" : html` by ${task.definition.actor}`}</dd>
<dt>History</dt><dd><a href="${changesHref({ name })}">changes to ${name}</a></dd>
</dl>
${
  newest === undefined
    ? ""
    : html`<section aria-labelledby="newest-heading"><h2 id="newest-heading">Newest run's brief</h2>
${briefSections(newest, "newest")}</section>`
}
${definitionSection(task, definition)}
${runsSection(name, runs, briefs, page, listed.length > page * RUNS_PAGE)}`,
    };
  },
};

export const taskRunPage: UiRoute = {
  path: /^\/tasks\/(?<name>[^/]+)\/runs\/(?<run>[^/]+)\/?$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const name = decodePath(request.params.name ?? "");
    const runId = decodePath(request.params.run ?? "");
    const [tasks, { tasks: ledger }] = await Promise.all([request.host.tasks(), request.host.workspace()]);
    const task = name === undefined ? undefined : await ledger.task(name);
    if (name === undefined || task === undefined) return missingTask(name ?? (request.params.name as string));
    const run = runId === undefined ? undefined : await ledger.run(runId);
    if (runId === undefined || run === undefined || run.task !== name) {
      return errorPage(
        404,
        "Not found",
        `Task ${name} has no run “${(runId ?? (request.params.run as string)).slice(0, SHOWN_CHARS)}”.`,
        html`<ul><li><a href="${taskHref(name)}">See task ${name}</a> and its runs, newest first.</li>
<li><code>cairn task_status ${name}</code> names its newest run.</li></ul>`,
      );
    }
    const brief = await tasks.briefOf(run, task.latest_success);
    return {
      type: "page",
      title: `Run ${run.run_id} of ${name}`,
      body: html`${crumbs(name, run.run_id)}
<h1>Run <span class="mono">${run.run_id}</span> ${runStateBadges(brief)}</h1>
<p>Of task <a href="${taskHref(name)}">${name}</a>${brief.objective === "" ? "" : html`: ${brief.objective}`}</p>
${runFacts(run, brief, task)}
${briefSections(brief, "run")}`,
    };
  },
};

/** The 404 page for a task the ledger does not hold, naming the tasks page and how tasks are made. */
function missingTask(name: string): UiReply {
  return errorPage(
    404,
    "Not found",
    `The workspace holds no task “${name.slice(0, SHOWN_CHARS)}”.`,
    html`<ul><li>See <a href="${tasksHref()}">every task</a>, by name.</li>
<li>Define it with <code>task_define</code> (<code>cairn task_define --help</code>); a deleted one's history is on <a href="${changesHref()}">the changes page</a>.</li></ul>`,
  );
}

function crumbs(name: string, runId?: string): SafeHtml {
  return html`<nav class="crumbs" aria-label="Breadcrumbs"><ol>
<li><a href="${tasksHref()}">tasks</a></li>
${runId === undefined ? html`<li><span aria-current="page">${name}</span></li>` : html`<li><a href="${taskHref(name)}">${name}</a></li><li><span aria-current="page">${runId}</span></li>`}
</ol></nav>`;
}

function runFacts(run: RunRecord, brief: Brief, task: TaskRecord): SafeHtml {
  return html`<dl class="meta">
<dt>State</dt><dd>${runStateWords(brief.status)}${brief.current ? "" : " (a source moved since: stale)"}</dd>
<dt>Started</dt><dd><time datetime="${run.started_at}">${formatTime(run.started_at)}</time></dd>
<dt>Finished</dt><dd>${run.finished_at === null ? html`<span class="muted">not yet</span>` : html`<time datetime="${run.finished_at}">${formatTime(run.finished_at)}</time>`}</dd>
<dt>Definition</dt><dd>v${run.definition_version}${run.definition_version === task.current_version ? " (current)" : html` <span class="muted">(the task is now at v${task.current_version})</span>`}</dd>
<dt>Attempt</dt><dd>generation ${run.generation}${task.latest_success === run.run_id ? ", the latest success" : ""}${brief.published ? ", published" : ", not published"}</dd>
<dt>Ran on</dt><dd>${run.owner.host}, process ${run.owner.pid}</dd>
</dl>`;
}

function definitionSection(task: TaskRecord, definition: StoredDefinition): SafeHtml {
  const gated = new Set(definition.approvals ?? []);
  const sources = Object.entries(definition.sources ?? {});
  return html`<section aria-labelledby="definition-heading"><h2 id="definition-heading">Definition v${task.current_version}</h2>
<div class="table-wrap"><table class="sources">
<caption>Sources by alias</caption>
<thead><tr><th scope="col">Alias</th><th scope="col">Reads</th><th scope="col">Follows</th></tr></thead>
<tbody>${sources.map(
    ([alias, s]) => html`<tr><th scope="row"><code>${alias}</code></th>
<td>${s.pinned ? html`<a href="${artifactHref(s.artifact_id)}">${s.name} v${s.version}</a>` : html`<a href="${artifactHref(s.name)}">${s.name}</a>`}</td>
<td>${s.pinned ? "this exact version (pinned)" : "its current version at each run"}</td></tr>`,
  )}</tbody></table></div>
<h3 id="steps-heading">Steps, in order</h3>
<ol class="task-steps" aria-labelledby="steps-heading">${definition.steps.map(
    (
      step,
    ) => html`<li><p><strong><code>${step.name}</code></strong>${gated.has(step.name) ? html` <span class="badge gate">approval gate</span>` : ""}
${step.inputs === undefined || step.inputs.length === 0 ? "" : html` · reads ${step.inputs.map((input, i) => html`${i === 0 ? "" : ", "}<code>${input}</code> as <code>input${i + 1}</code>`)}`}
${step.when === undefined ? "" : html` · only when <code>${step.when}</code>`}
${step.code === undefined ? "" : html` · code${step.pure ? " (pure: reused when its inputs are unchanged)" : ""}`}</p>
<pre><code>${step.sql ?? step.code ?? ""}</code></pre>
${step.parameters === undefined || step.parameters.length === 0 ? "" : html`<p>Parameters: <code>${JSON.stringify(step.parameters)}</code></p>`}</li>`,
  )}</ol>
${gated.size === 0 ? html`<p class="muted">No approval gates: every step runs without waiting.</p>` : html`<p>Approval gates: ${[...gated].map((g, i) => html`${i === 0 ? "" : ", "}<code>${g}</code>`)} ${gated.size === 1 ? "waits" : "wait"} until an approver approves the exact versions ${gated.size === 1 ? "it reads" : "they read"}.</p>`}
${
  (definition.conditions ?? []).length === 0
    ? ""
    : html`<h3 id="conditions-heading">Conditions</h3><ul aria-labelledby="conditions-heading">${definition.conditions.map(
        (c) =>
          html`<li><code>${c.name}</code>: step <code>${c.step}</code>'s ${c.column === undefined ? "row count" : html`<code>${c.column}</code>`} ${c.op} <code>${JSON.stringify(c.value)}</code></li>`,
      )}</ul>`
}
${(definition.searches ?? []).length === 0 ? "" : html`<h3 id="searches-heading">Evidence searches</h3><ul aria-labelledby="searches-heading">${definition.searches.map((s) => html`<li>${s}</li>`)}</ul>`}
${definition.origin === undefined ? "" : html`<p class="muted">Defined from skill ${definition.origin.skill} v${definition.origin.version}.</p>`}
</section>`;
}

function runsSection(name: string, runs: readonly RunRecord[], briefs: readonly Brief[], page: number, more: boolean) {
  return html`<section aria-labelledby="runs-heading"><h2 id="runs-heading">Runs</h2>
${
  runs.length === 0
    ? html`<p class="muted">No runs yet: <code>cairn task_run ${name}</code> runs it.</p>`
    : html`<div class="table-wrap"><table class="runs">
<caption>Runs of ${name}, newest first${page === 1 ? "" : html`, page ${page}`}</caption>
<thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Started</th><th scope="col">Steps</th><th scope="col">Waiting for</th><th scope="col">Next step</th></tr></thead>
<tbody>${runs.map((run, i) => runRow(name, run, briefs[i] as Brief))}</tbody></table></div>`
}
${
  page === 1 && !more
    ? ""
    : html`<nav class="pager" aria-label="Pages of runs">
${page === 1 ? "" : html`<a href="${taskHref(name, { page: page - 1 })}#runs-heading" rel="prev">Newer runs</a>`}
<span>Page ${page}</span>
${more && page < MAX_PAGE ? html`<a href="${taskHref(name, { page: page + 1 })}#runs-heading" rel="next">Older runs</a>` : html`<span class="muted">${more ? `The view lists the newest ${MAX_PAGE * RUNS_PAGE} runs` : "Oldest run"}</span>`}
</nav>`
}
</section>`;
}

function runRow(name: string, run: RunRecord, brief: Brief): SafeHtml {
  const waiting = brief.approvals_needed ?? [];
  return html`<tr>
<th scope="row"><a href="${taskRunHref(name, run.run_id)}" class="mono">${run.run_id}</a><span class="summary">definition v${run.definition_version}, generation ${run.generation}</span></th>
<td>${runStateBadges(brief)}${brief.error === undefined ? "" : html`<span class="summary">${brief.error.code}${brief.error.step === null ? "" : ` at ${brief.error.step}`}</span>`}</td>
<td><time datetime="${run.started_at}">${formatTime(run.started_at)}</time></td>
<td>${stepSummary(brief.steps)}</td>
<td>${waiting.length === 0 ? html`<span class="muted">nothing</span>` : html`<ul class="steps-brief">${waiting.map((a) => html`<li>approval of ${a.artifact_id === null ? a.name : html`<a href="${artifactHref(a.artifact_id)}">${a.name}${a.version === null ? "" : html` v${a.version}`}</a>`} (step ${a.step})</li>`)}</ul>`}</td>
<td>${brief.next_step === undefined ? html`<span class="muted">none</span>` : html`<code>${brief.next_step}</code>`}</td>
</tr>`;
}
