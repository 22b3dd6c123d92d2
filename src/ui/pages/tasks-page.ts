// The tasks page: every task by name with its newest run's state in words (done, running, waiting for approval,
// failed, stale when a source moved since), when it last ran and its schedule; a page of 50 at a time. Each row's
// state is the brief task_status would answer, so it costs one catalog snapshot per task shown.
import type { ScheduleSettings } from "../../tasks/schedule.js";
import type { TaskService } from "../../tasks/tasks.js";
import { html, type SafeHtml } from "../../views/html.js";
import type { RunRecord, ScheduleRecord, TaskLedger, TaskRecord } from "../../workspace/catalog/task-ledger.js";
import { formatTime, plural } from "../format.js";
import { taskHref, taskRunHref, tasksHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { runStateBadges } from "./task-brief.js";
import { pageNumber, pastLastPage, taskObjective } from "./task-paging.js";

/** Tasks listed on one page. */
const PAGE_SIZE = 50;

export const tasksPage: UiRoute = {
  path: /^\/tasks\/?$/,
  nav: { label: "Tasks", href: tasksHref() },
  async handle(request: UiRequest): Promise<UiReply> {
    const page = pageNumber(request.query("page"), tasksHref());
    if (typeof page !== "number") return page;
    const [tasks, { tasks: ledger }] = await Promise.all([request.host.tasks(), request.host.workspace()]);
    const all = await ledger.tasks();
    const pages = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
    if (page > pages) return pastLastPage(`${plural(all.length, "task")}`, page, pages, tasksHref());
    const shown = all.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
    const rows = await Promise.all(shown.map((task) => rowOf(tasks, ledger, task)));
    return {
      type: "page",
      title: "Tasks",
      body: html`<h1>Tasks</h1>
${
  all.length === 0
    ? emptyNote()
    : html`<p>${plural(all.length, "task")}, by name. A task's state is its newest run's; <em>stale</em> means a source it read has a newer version now.</p>
${table(rows)}
${pager(page, pages)}`
}`,
    };
  },
};

interface Row {
  task: TaskRecord;
  run: RunRecord | undefined;
  brief: Awaited<ReturnType<TaskService["briefOf"]>> | undefined;
  schedule: ScheduleRecord | undefined;
}

async function rowOf(tasks: TaskService, ledger: TaskLedger, task: TaskRecord): Promise<Row> {
  const [[run], schedule] = await Promise.all([ledger.runs(task.name, 1), ledger.schedule(task.name)]);
  const brief = run === undefined ? undefined : await tasks.briefOf(run, task.latest_success);
  return { task, run, brief, schedule };
}

function table(rows: readonly Row[]): SafeHtml {
  return html`<div class="table-wrap"><table class="tasks">
<caption>Tasks and their newest run</caption>
<thead><tr><th scope="col">Task</th><th scope="col">Newest run</th><th scope="col">Last run</th><th scope="col">Schedule</th><th scope="col" class="num">Definition</th></tr></thead>
<tbody>
${rows.map(
  (r) => html`<tr>
<th scope="row"><a href="${taskHref(r.task.name)}">${r.task.name}</a><span class="summary">${taskObjective(r.task.definition.definition)}</span></th>
<td>${r.brief === undefined || r.run === undefined ? html`<span class="muted">never run</span>` : html`${runStateBadges(r.brief)} <a href="${taskRunHref(r.task.name, r.run.run_id)}" class="mono">${r.run.run_id}</a>`}</td>
<td>${r.run === undefined ? "" : html`<time datetime="${r.run.finished_at ?? r.run.started_at}">${formatTime(r.run.finished_at ?? r.run.started_at)}</time>${r.run.finished_at === null ? html` <span class="muted">(started)</span>` : ""}`}</td>
<td>${scheduleText(r.schedule)}</td>
<td class="num">v${r.task.current_version}</td>
</tr>`,
)}
</tbody></table></div>`;
}

/** A schedule in words: "every 1 h, on change · next 2026-… UTC", "paused", "none". */
export function scheduleText(schedule: ScheduleRecord | undefined): SafeHtml {
  if (schedule === undefined) return html`<span class="muted">none</span>`;
  const settings = schedule.settings as ScheduleSettings;
  const triggers = [
    ...(settings.every_s === null ? [] : [`every ${seconds(settings.every_s)}`]),
    ...(settings.on_change ? ["when a source changes"] : []),
  ];
  if (!settings.enabled) return html`paused <span class="muted">(${triggers.join(", ") || "no trigger"})</span>`;
  if (triggers.length === 0) return html`<span class="muted">none</span>`;
  const next = schedule.next_due === null ? undefined : new Date(schedule.next_due).toISOString();
  return html`${triggers.join(", ")}${next === undefined ? "" : html` <span class="muted">· next <time datetime="${next}">${formatTime(next)}</time></span>`}`;
}

function seconds(s: number): string {
  if (s % 86_400 === 0) return plural(s / 86_400, "day");
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

function emptyNote(): SafeHtml {
  return html`<div class="next-step"><h2>No tasks yet</h2>
<p>A task is a named, repeatable computation over workspace artifacts: ordered SQL or code steps, optional approval gates, a brief of what each run found. Define one with <code>task_define</code> (an MCP tool, or the CLI), then run it with <code>task_run</code>:</p>
<pre><code>cairn task_define busiest --objective "Busiest states" --sources '{"flights":"flights/2001"}' \\
  --steps '{"name":"by_origin","inputs":["flights"],"sql":"SELECT origin, count(*) AS n FROM input1 GROUP BY ALL"}'
cairn task_run busiest</code></pre></div>`;
}

function pager(page: number, pages: number): SafeHtml {
  if (pages === 1) return html``;
  return html`<nav class="pager" aria-label="Pages of tasks">
${page === 1 ? "" : html`<a href="${withPage(page - 1)}" rel="prev">Previous page</a>`}
<span>Page ${page} of ${pages}</span>
${page === pages ? "" : html`<a href="${withPage(page + 1)}" rel="next">Next page</a>`}
</nav>`;
}

function withPage(page: number): string {
  return page === 1 ? tasksHref() : `${tasksHref()}?page=${page}`;
}
