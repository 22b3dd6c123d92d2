// A result's chart as the web view and the MCP Apps draw it: which chart the column types call for, the points of
// the rows shown, the words that say what is drawn, and the web view's figure with its rows as a JSON data island.
// Pure: no DOM, no I/O; apps/chart.ts draws the points with uPlot, in the app and on the web view's page alike.
import { html, jsonIsland, type SafeHtml } from "./html.js";
import { CELL_CHARS, cutEnd, isNumericType, isTemporalType, type ViewColumn } from "./table-view.js";

/** The chart a result's column types call for: its kind, the column along x and the numeric columns drawn. */
export interface ChartChoice {
  kind: "line" | "bar" | "scatter";
  x: string;
  /** Numeric columns drawn against x, at most MAX_SERIES. */
  y: string[];
}

/** Series one chart draws; more would be a tangle no one reads. */
export const MAX_SERIES = 4;

/**
 * Which chart, from the column types alone (so the same result always gets the same chart):
 * - a date or timestamp column and numbers: a **line** over time (every numeric column, up to MAX_SERIES);
 * - a text column and numbers: a **bar** per row of the first numeric column, labelled by the first text column
 *   (bars from zero; side-by-side bars of several columns would each need their own scale);
 * - only numbers, two or more: a **scatter** of the second numeric column against the first;
 * - otherwise (one number alone, no numbers at all): no chart; the table says it all.
 */
export function chooseChart(columns: readonly ViewColumn[]): ChartChoice | undefined {
  const numbers = columns.filter((c) => isNumericType(c.type)).map((c) => c.name);
  if (numbers.length === 0) return undefined;
  const time = columns.find((c) => isTemporalType(c.type));
  if (time !== undefined) return { kind: "line", x: time.name, y: numbers.slice(0, MAX_SERIES) };
  const label = columns.find((c) => !isNumericType(c.type) && /^(VARCHAR|TEXT|STRING|ENUM|BOOLEAN|UUID)/i.test(c.type));
  if (label !== undefined) return { kind: "bar", x: label.name, y: numbers.slice(0, 1) };
  if (numbers.length >= 2) return { kind: "scatter", x: numbers[0] as string, y: [numbers[1] as string] };
  return undefined;
}

/** A number the chart can draw: finite numbers, and the exact integers and decimals the engine sends as strings. */
export function chartNumber(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value)) return Number(value);
  return null;
}

/** A date or timestamp as seconds since 1970 (the unit uPlot's time axis reads), or null. */
export function chartTime(value: unknown): number | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  const ms =
    typeof value === "number" ? value : Date.parse(/^\d{4}-\d{2}-\d{2} /.test(value) ? value.replace(" ", "T") : value);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

/** What a chart draws: x ascending (a bar's index, seconds since 1970, or a number) and one list per y column. */
export interface ChartSeries {
  xs: number[];
  /** Aligned with `xs`, one list per `choice.y` column; null where a row has no number. */
  ys: (number | null)[][];
  /** A bar's label by its index; empty for lines and scatters. */
  labels: string[];
}

/** The points of `rows` for `choice`, in x's order; undefined when no row has a number to draw. */
export function chartSeries(choice: ChartChoice, rows: readonly Record<string, unknown>[]): ChartSeries | undefined {
  let xs: number[];
  let ys: (number | null)[][];
  let labels: string[] = [];
  if (choice.kind === "bar") {
    labels = rows.map((row) => String(row[choice.x] ?? "NULL"));
    xs = rows.map((_, i) => i);
    ys = choice.y.map((name) => rows.map((row) => chartNumber(row[name])));
  } else {
    const toX = choice.kind === "line" ? chartTime : chartNumber;
    // uPlot reads x ascending; a page sorted by another column is drawn in x's order.
    const points = rows
      .map((row) => ({ x: toX(row[choice.x]), row }))
      .filter((p): p is { x: number; row: Record<string, unknown> } => p.x !== null)
      .sort((a, b) => a.x - b.x);
    xs = points.map((p) => p.x);
    ys = choice.y.map((name) => points.map((p) => chartNumber(p.row[name])));
  }
  if (!ys.some((values) => values.some((v) => v !== null))) return undefined;
  return { xs, ys, labels };
}

/** What the chart shows, in words: its caption and its canvas's accessible name. */
export function chartDescription(choice: ChartChoice, points: number): string {
  const kind = choice.kind === "bar" ? "Bar chart" : choice.kind === "line" ? "Line chart" : "Scatter plot";
  return `${kind} of ${choice.y.join(", ")} by ${choice.x}, ${points} row${points === 1 ? "" : "s"} of the page shown`;
}

/** The cells a chart reads of each row (x and the y columns): what the web view's data island carries. */
export function chartRows(choice: ChartChoice, rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const names = [choice.x, ...choice.y];
  return rows.map((row) => Object.fromEntries(names.map((name) => [name, islandValue(row[name])])));
}

/** A cell as the island carries it: a text past the table's CELL_CHARS cut as the table cuts it, whole characters. */
function islandValue(value: unknown): unknown {
  if (typeof value !== "string" || value.length <= CELL_CHARS) return value ?? null;
  return `${value.slice(0, cutEnd(value, CELL_CHARS))}…`;
}

/** The island a web view page's chart script reads: the choice and the rows it draws. */
export interface ChartIsland {
  choice: ChartChoice;
  rows: Record<string, unknown>[];
}

/**
 * The web view's chart of the rows shown: a figure whose caption says what is drawn, the rows as a JSON data island
 * (`<script type="application/json">`, never run, so the CSP allows it) and, until the chart script replaces it, a
 * line saying the table below holds the same rows. Undefined when the column types call for no chart or no row has
 * a number to draw. `id` names the figure; its parts are `${id}-plot`, `${id}-caption` and `${id}-data`.
 */
export function chartFigure(
  columns: readonly ViewColumn[],
  rows: readonly Record<string, unknown>[],
  id: string,
): SafeHtml | undefined {
  const choice = chooseChart(columns);
  const series = choice && chartSeries(choice, rows);
  if (choice === undefined || series === undefined) return undefined;
  const island: ChartIsland = { choice, rows: chartRows(choice, rows) };
  return html`<figure class="chart" id="${id}">
<div class="chart-plot" id="${id}-plot" data-island="${id}-data" data-caption="${id}-caption"><p class="muted">The chart is drawn by this page's script; the table below holds the same rows.</p></div>
<figcaption id="${id}-caption">${chartDescription(choice, series.xs.length)}</figcaption>
${jsonIsland(`${id}-data`, island)}
</figure>`;
}

/** The chart's figure, caption and uPlot's legend, in the web view and the apps (after uPlot's own stylesheet). */
export const CHART_CSS = `figure.chart { margin: 0 0 0.75rem; }
figure.chart figcaption { color: var(--muted); font-size: 0.8125rem; }
.chart-plot { overflow: hidden; }
.uplot, .uplot .u-legend { font-family: inherit; color: var(--fg); }
.uplot .u-legend th { font-weight: 600; }
.uplot .u-legend th, .uplot .u-legend td { border-top: none; }
`;
