// A result table as a person sees it, written once for the web view (server-rendered) and the MCP Apps (rendered in
// the host's iframe): the table's markup and the SQL of one sorted page (its chart: chart-view.ts).
// Pure: no DOM, no I/O; every value goes through `html`, so a cell's markup stays text.
import { html, type SafeHtml } from "./html.js";

/** A column as the query engine reports it: its name and DuckDB's type. */
export interface ViewColumn {
  name: string;
  type: string;
}

/** The order of a page: a column of the result and its direction. */
export interface ViewSort {
  column: string;
  descending: boolean;
}

/** Characters of one table cell shown; the rest is counted in words (a 1 MB cell would make a 4 MB page). */
export const CELL_CHARS = 1000;

const NUMERIC =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|REAL|DOUBLE|DECIMAL|NUMERIC)\b/i;
const TEMPORAL = /^(DATE|TIMESTAMP|TIMESTAMPTZ|TIMESTAMP WITH TIME ZONE|TIMESTAMP_S|TIMESTAMP_MS|TIMESTAMP_NS)\b/i;

export function isNumericType(type: string): boolean {
  return NUMERIC.test(type);
}

export function isTemporalType(type: string): boolean {
  return TEMPORAL.test(type);
}

export interface TableMarkupOptions {
  columns: readonly ViewColumn[];
  rows: readonly Record<string, unknown>[];
  /** The number of the first row shown, less one. */
  offset: number;
  /** The caption's text; its element has the id `captionId`. */
  caption: string;
  captionId: string;
  /** Headers become buttons that sort by their column (the app); the web view's headers are plain. */
  sortable?: boolean;
  sort?: ViewSort | undefined;
}

/**
 * The table: a numbered row header column, a header per column with its type beneath the name (the type never widens
 * a column on its own line), numbers right-aligned in tabular figures, NULL marked in words.
 */
export function tableMarkup(options: TableMarkupOptions): SafeHtml {
  const { columns, rows, offset, sort } = options;
  const numeric = columns.map((c) => isNumericType(c.type));
  const header = (column: ViewColumn, i: number): SafeHtml => {
    const cls = numeric[i] ? html` class="num"` : "";
    const type = html` <span class="col-type">${column.type}</span>`;
    if (!options.sortable) return html`<th scope="col"${cls}><span class="col-name">${column.name}</span>${type}</th>`;
    const state = sort?.column === column.name ? (sort.descending ? "descending" : "ascending") : undefined;
    const next = state === "ascending" ? "descending" : "ascending";
    // The mark sits on the name's line: after the type's block it would open a third line.
    const mark = state === "ascending" ? "▲" : state === "descending" ? "▼" : "";
    return html`<th scope="col"${cls}${state ? html` aria-sort="${state}"` : ""}><button type="button" class="sort" data-column="${i}" aria-label="${column.name}, ${column.type}: sort ${next}"><span class="col-name">${column.name}<span class="sort-mark" aria-hidden="true">${mark}</span></span>${type}</button></th>`;
  };
  return html`<table class="rows">
<caption id="${options.captionId}">${options.caption}</caption>
<thead><tr><th scope="col" class="num">#</th>${columns.map(header)}</tr></thead>
<tbody>
${rows.map(
  (row, r) =>
    html`<tr><td class="num muted">${(offset + r + 1).toLocaleString("en-US")}</td>${columns.map((c, i) => cellMarkup(row[c.name], numeric[i] === true))}</tr>`,
)}
</tbody></table>`;
}

export function cellMarkup(value: unknown, numeric: boolean): SafeHtml {
  if (value === null || value === undefined) return html`<td class="null">NULL</td>`;
  const text = cut(typeof value === "object" ? JSON.stringify(value) : String(value), CELL_CHARS);
  return numeric ? html`<td class="num">${text}</td>` : html`<td>${text}</td>`;
}

/** The first `max` characters of `text` (not splitting a surrogate pair) and how many more there were, in words. */
export function cut(text: string, max: number): SafeHtml | string {
  if (text.length <= max) return text;
  const end = cutEnd(text, max);
  const more = text.length - end;
  return html`${text.slice(0, end)}<span class="muted">… ${more.toLocaleString("en-US")} more character${more === 1 ? "" : "s"}</span>`;
}

/** Where a text longer than `max` is cut: at `max`, or one before when that would part a surrogate pair. */
export function cutEnd(text: string, max: number): number {
  return /[\ud800-\udbff]/.test(text[max - 1] ?? "") ? max - 1 : max;
}

/** A double-quoted SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The SQL of one page of `sql`'s result in `sort`'s order: the query as a subquery (its own order is kept when no
 * sort is asked), so every page and every sort reads the whole result, never only the rows already shown. A trailing
 * `;` is dropped and the subquery closes on its own line, so a final `-- comment` cannot swallow it.
 */
export function pageSql(sql: string, page: { offset: number; limit: number; sort?: ViewSort | undefined }): string {
  const body = sql.trim().replace(/;+\s*$/, "");
  const order = page.sort
    ? ` ORDER BY ${quoteIdentifier(page.sort.column)} ${page.sort.descending ? "DESC" : "ASC"} NULLS LAST`
    : "";
  const limit = Math.max(0, Math.floor(page.limit));
  const offset = Math.max(0, Math.floor(page.offset));
  return `SELECT * FROM (\n${body}\n) AS cairn_page${order} LIMIT ${limit} OFFSET ${offset}`;
}
