/// <reference lib="dom" />
// The table app (ui://cairn/table.html): a query result inside the host's conversation, paged and sorted over the
// whole result, with a chart of its numeric columns. Every other page is a `query` call through the host
// (tools/call), never a request of its own: the resource's CSP allows no network at all. An execute_code reply that
// holds an APPROVAL_REQUIRED error is drawn by the approval app's panel (decision 0313).
import { chooseChart } from "../views/chart-view.js";
import { tableMarkup, type ViewSort } from "../views/table-view.js";
import { AppChannel, type ToolResult } from "./app-channel.js";
import { ApprovalPanel, approvalRequest } from "./approval-panel.js";
import { type DrawnChart, drawChart } from "./chart.js";
import { type QueryShape, type TableSource, tableSource } from "./table-source.js";

const root = document.getElementById("app") as HTMLElement;
let args: Record<string, unknown> = {};
let tool: string | undefined;
let source: TableSource | undefined;
let shown: QueryShape | undefined;
let offset = 0;
let sort: ViewSort | undefined;
let chart: DrawnChart | undefined;
let busy = false;

const channel = new AppChannel({
  toolInput: (input) => {
    args = input;
  },
  toolResult: (result) => show(result),
  toolCancelled: () => note("The call was cancelled: there is no table to show."),
  hostContext: (context) => applyTheme(context),
});

function applyTheme(context: Record<string, unknown>): void {
  if (context.theme === "dark" || context.theme === "light") document.documentElement.dataset.theme = context.theme;
  const info = context.toolInfo as { tool?: { name?: unknown } } | undefined;
  if (typeof info?.tool?.name === "string") tool = info.tool.name;
}

function textOf(result: ToolResult): string | undefined {
  return result.content?.find((block) => block.type === "text")?.text;
}

function show(result: ToolResult): void {
  // A snippet's gated call refused for want of approval: the approval app's panel, here (a tool names one app).
  const request = approvalRequest(result);
  if (request !== undefined) {
    source = undefined;
    shown = undefined;
    void approvals.show(request);
    return;
  }
  const found = result.isError ? undefined : tableSource(tool, args, textOf(result));
  if (found === undefined) {
    note(result.isError ? "The call failed: its reply says why." : "This reply holds no table.");
    return;
  }
  source = found;
  shown = found.reply;
  offset = 0;
  sort = undefined;
  render();
}

function note(text: string): void {
  root.replaceChildren();
  const p = document.createElement("p");
  p.className = "note";
  p.textContent = text;
  root.append(p);
  resize(true);
}

/** The page size the server answers: the rows the first reply carried (its preview), at least one. */
function pageRows(): number {
  return Math.max(1, source?.reply.rows.length ?? 1);
}

async function turn(to: number, order: ViewSort | undefined): Promise<void> {
  if (source?.page === undefined || busy) return;
  busy = true;
  status(`Loading rows ${(to + 1).toLocaleString("en-US")}…`);
  try {
    const result = await channel.callServerTool("query", source.page({ offset: to, limit: pageRows(), sort: order }));
    const text = textOf(result);
    const parsed = text === undefined || result.isError ? undefined : (JSON.parse(text) as unknown);
    const page = tableSource("query", {}, text)?.reply;
    if (page === undefined) {
      const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      status(`The page could not be read${error ? `: ${error.code} ${error.message}` : ""}`);
      return;
    }
    // The page query counts only its own rows: the whole result's count is the first reply's.
    shown = { ...page, row_count: source.reply.row_count };
    offset = to;
    sort = order;
    render();
  } catch (error) {
    status(`The host did not answer: ${(error as Error).message}`);
  } finally {
    busy = false;
  }
}

function status(text: string): void {
  const line = document.getElementById("status");
  if (line) line.textContent = text;
}

function render(): void {
  if (shown === undefined || source === undefined) return;
  const { columns, rows, row_count: total } = shown;
  const first = rows.length === 0 ? 0 : offset + 1;
  const caption = `${source.title}: rows ${first.toLocaleString("en-US")}–${(offset + rows.length).toLocaleString("en-US")} of ${total.toLocaleString("en-US")}${sort ? `, by ${sort.column} ${sort.descending ? "descending" : "ascending"}` : ""}`;
  const pageable = source.page !== undefined;
  const size = pageRows();
  const last = Math.max(0, Math.floor((total - 1) / size) * size);
  const table = tableMarkup({
    columns,
    rows,
    offset,
    caption,
    captionId: "table-caption",
    sortable: pageable,
    sort,
  });
  const button = (label: string, to: number, disabled: boolean) =>
    `<button type="button" class="page" data-offset="${to}"${disabled ? " disabled" : ""}>${label}</button>`;
  // After a page the byte limit cut short, the next one starts where it stopped.
  const next = offset + Math.max(1, rows.length);
  const pager = pageable
    ? `<nav class="pager" aria-label="Pages of the table">${button("First", 0, offset === 0)}${button("Previous", Math.max(0, offset - size), offset === 0)}${button("Next", next, next >= total)}${button("Last", last, offset >= last)}</nav>`
    : total > rows.length
      ? `<p class="muted">The first ${rows.length.toLocaleString("en-US")} rows: this result was saved nowhere, so no other page can be asked for (save it with save_as to page it).</p>`
      : "";
  const choice = chooseChart(columns);
  root.innerHTML = `${choice ? `<figure class="chart"><div id="chart"></div><figcaption id="chart-caption"></figcaption></figure>` : ""}<div class="table-wrap" tabindex="0" role="region" aria-labelledby="table-caption">${table}</div>${pager}<p id="status" class="muted" role="status" aria-live="polite"></p>`;
  chart?.destroy();
  chart = undefined;
  const target = document.getElementById("chart");
  if (choice && target) {
    chart = drawChart(target, choice, rows, Math.max(240, root.clientWidth - 2));
    const caption = document.getElementById("chart-caption");
    if (caption) caption.textContent = chart?.description ?? "No numbers on this page to chart.";
  }
  // Every drawing is reported, even at the same height: a host may wait for it.
  resize(true);
}

root.addEventListener("click", (event) => {
  const target = (event.target as HTMLElement).closest("button");
  if (target === null || shown === undefined) return;
  if (target.classList.contains("page")) {
    void turn(Number(target.dataset.offset), sort);
  } else if (target.classList.contains("sort")) {
    const column = shown.columns[Number(target.dataset.column)]?.name;
    if (column === undefined) return;
    const descending = sort?.column === column && !sort.descending;
    void turn(0, { column, descending });
  }
});

let lastHeight = 0;
/** Tells the host the height of what is drawn (the content's, not the frame's), whenever it changes. */
function resize(force = false): void {
  const style = getComputedStyle(root);
  const height = Math.ceil(root.getBoundingClientRect().bottom + Number.parseFloat(style.marginBottom || "0"));
  if (height === lastHeight && !force) return;
  lastHeight = height;
  channel.sizeChanged(Math.ceil(document.documentElement.scrollWidth), height);
}
new ResizeObserver(() => resize()).observe(root);
const approvals = new ApprovalPanel(root, channel, () => resize(true));

channel.connect({ name: "cairn-table", version: "1" }).then(applyTheme, (error: Error) => {
  note(`The host did not start this view: ${error.message}`);
});
