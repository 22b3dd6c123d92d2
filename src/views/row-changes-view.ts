// What changed between two table versions as a person reads it: the counts in words, and a table of the changed
// rows (changed first, each with its key and the columns that changed before → after), marked in words, not colour.
// Drawn by the web view (a run's page, the diff page) and by the MCP Apps (the task brief, the diff), from the shape
// workspace/row-changes.ts answers, declared here so views/ imports nothing of the workspace.
import { groupDigits } from "../digits.js";
import { html, type SafeHtml } from "./html.js";
import { cut } from "./table-view.js";

/** One row that differs (workspace/row-changes.ts RowChange). */
export interface ViewRowChange {
  change: "changed" | "removed" | "added";
  key?: Record<string, unknown> | undefined;
  before?: Record<string, unknown> | undefined;
  after?: Record<string, unknown> | undefined;
}

/** What changed from one table to another (workspace/row-changes.ts RowChanges, or why it could not be said). */
export interface ViewChanges {
  by?: "key" | "rows" | undefined;
  key?: string[] | undefined;
  key_unusable?: string | undefined;
  added?: number | undefined;
  removed?: number | undefined;
  changed?: number | undefined;
  columns_added?: string[] | undefined;
  columns_removed?: string[] | undefined;
  columns_retyped?: string[] | undefined;
  rows?: ViewRowChange[] | undefined;
  offset?: number | undefined;
  unavailable?: string | undefined;
}

const formatCount = groupDigits;

/** "1 change", "2 changes". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${groupDigits(n)} ${n === 1 ? one : many}`;
}

/** Every change a comparison counts (the rows shown may be the first of them). */
export function changesTotal(c: ViewChanges): number {
  return (c.added ?? 0) + (c.removed ?? 0) + (c.changed ?? 0);
}

/** Characters of one value shown. */
const VALUE_CHARS = 300;

/** The counts of a comparison in words: `4 changed, 0 added, 0 removed (rows matched on store)`. */
export function changesWords(c: ViewChanges): string {
  if (c.unavailable !== undefined) return `not compared: ${c.unavailable}`;
  const counts = [
    ...(c.changed === undefined ? [] : [`${formatCount(c.changed)} changed`]),
    `${formatCount(c.added ?? 0)} added`,
    `${formatCount(c.removed ?? 0)} removed`,
  ].join(", ");
  const by =
    c.by === "key"
      ? `rows matched on ${(c.key ?? []).join(", ")}`
      : `whole rows compared${c.key_unusable === undefined ? "" : `: ${c.key_unusable}`}`;
  return `${counts} (${by})`;
}

/** Columns added, removed or retyped between the versions, as a sentence (empty when none). */
export function columnWords(c: ViewChanges): string {
  const parts = [
    c.columns_added?.length ? `columns added: ${c.columns_added.join(", ")}` : "",
    c.columns_removed?.length ? `columns removed: ${c.columns_removed.join(", ")}` : "",
    c.columns_retyped?.length ? `columns whose type changed (compared as text): ${c.columns_retyped.join(", ")}` : "",
  ].filter((p) => p !== "");
  return parts.length === 0 ? "" : `${parts.join("; ")}.`;
}

/**
 * The changed rows as a table, captioned; `total` is every change (the rows may be the first of them, or, from
 * `offset` on, a later page of them).
 */
export function changedRowsTable(
  rows: readonly ViewRowChange[],
  total: number,
  caption: string,
  captionId: string,
  offset = 0,
): SafeHtml {
  if (rows.length === 0) return html``;
  const which =
    offset > 0
      ? `changes ${formatCount(offset + 1)}–${formatCount(offset + rows.length)} of ${formatCount(total)}`
      : rows.length < total
        ? `the first ${plural(rows.length, "change")} of ${formatCount(total)}`
        : plural(rows.length, "change");
  return html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="${captionId}"><table class="rows changes">
<caption id="${captionId}">${caption}: ${which}</caption>
<thead><tr><th scope="col">Change</th><th scope="col">Row</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
<tbody>${rows.map(
    (
      r,
    ) => html`<tr class="${r.change === "added" ? "ins" : r.change === "removed" ? "del" : "chg"}"><td>${r.change}</td>
<td>${r.key === undefined ? "" : values(r.key)}</td>
<td>${r.before === undefined ? "" : values(r.before)}</td>
<td>${r.after === undefined ? "" : values(r.after)}</td></tr>`,
  )}</tbody></table></div>`;
}

/** `column = value` pairs, one a line. */
function values(row: Record<string, unknown>): SafeHtml {
  return html`${Object.entries(row).map(
    ([column, value], i) =>
      html`${i === 0 ? "" : html`<br>`}<code>${column}</code> = ${value === null ? html`<span class="null">null</span>` : cut(typeof value === "string" ? value : JSON.stringify(value), VALUE_CHARS)}`,
  )}`;
}
