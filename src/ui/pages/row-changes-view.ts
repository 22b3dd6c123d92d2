// What changed between two table versions as a person reads it: the counts in words, and a table of the changed
// rows (changed first, each with its key and the columns that changed before → after), marked in words, not colour.

import { html, type SafeHtml } from "../../views/html.js";
import { cut } from "../../views/table-view.js";
import type { RowChange, RowChanges } from "../../workspace/row-changes.js";
import { formatCount, plural } from "../format.js";

/** Characters of one value shown. */
const VALUE_CHARS = 300;

/** The counts of a comparison in words: `4 changed, 0 added, 0 removed (rows matched on store)`. */
export function changesWords(c: Partial<RowChanges> & { unavailable?: string | undefined }): string {
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
export function columnWords(c: Partial<RowChanges>): string {
  const parts = [
    c.columns_added?.length ? `columns added: ${c.columns_added.join(", ")}` : "",
    c.columns_removed?.length ? `columns removed: ${c.columns_removed.join(", ")}` : "",
    c.columns_retyped?.length ? `columns whose type changed (compared as text): ${c.columns_retyped.join(", ")}` : "",
  ].filter((p) => p !== "");
  return parts.length === 0 ? "" : `${parts.join("; ")}.`;
}

/** The changed rows as a table, captioned; `total` is every change (the rows may be the first of them). */
export function changedRowsTable(
  rows: readonly RowChange[],
  total: number,
  caption: string,
  captionId: string,
): SafeHtml {
  if (rows.length === 0) return html``;
  return html`<div class="table-wrap"><table class="rows changes">
<caption id="${captionId}">${caption}: ${rows.length < total ? `the first ${plural(rows.length, "change")} of ${formatCount(total)}` : plural(rows.length, "change")}</caption>
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
