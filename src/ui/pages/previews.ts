// What an artifact page shows of a version's content: a paged table through the query engine (CSV, Parquet, large
// JSON) with the table app's chart of the page shown, JSON pretty-printed (up to 256 KiB), a KiB of text at a time, an
// image inline, or a note for other bytes.
// Every value is escaped by `html`; a preview that fails says why and the page around it still renders.
import { readFile } from "node:fs/promises";
import { toCairnError } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import { chartFigure } from "../../views/chart-view.js";
import { html, type SafeHtml } from "../../views/html.js";
import { tableMarkup } from "../../views/table-view.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { decodeUtf8Strict } from "../../workspace/utf8.js";
import { CHART_SCRIPT_PATH, CHART_STYLE_PATH } from "../built-assets.js";
import { formatBytes, formatCount } from "../format.js";
import { artifactHref, downloadHref } from "../links.js";
import type { UiRequest } from "../route.js";

/** Rows of a table page. */
export const TABLE_PAGE_ROWS = 25;
/** Bytes of the rows of one table page at most (a wide table's page is cut by the query engine past it). */
const TABLE_PAGE_BYTES = 4 * 1024 * 1024;
/** Columns of a table page shown; a wider table says how many more there are. */
export const TABLE_COLUMNS = 200;
/** Bytes of text shown at once. */
export const TEXT_PAGE_BYTES = 1024;
/** JSON up to this size is parsed and shown pretty-printed; bigger JSON is shown as a table when it is one. */
const PRETTY_JSON_BYTES = 256 * 1024;
/** Characters of pretty-printed JSON shown. */
const PRETTY_JSON_CHARS = 64 * 1024;
/** Raster images a browser shows without running anything. SVG is not one: it may hold script. */
export const INLINE_IMAGE_TYPES: ReadonlySet<string> = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
]);

/** The preview section of `record`'s page. */
export async function previewOf(request: UiRequest, record: VersionRecord): Promise<SafeHtml> {
  const type = baseType(record.media_type);
  if (INLINE_IMAGE_TYPES.has(type)) {
    return section(
      "Image",
      html`<img class="preview" src="${downloadHref(record.artifact_id, true)}" alt="${record.name} version ${record.version}${record.summary ? `: ${record.summary}` : ""}">`,
    );
  }
  const isJson = record.kind === "json" || type === "application/json" || type === "application/x-ndjson";
  if (record.kind === "checkpoint") return html``;
  if (isJson && record.bytes <= PRETTY_JSON_BYTES && type !== "application/x-ndjson") {
    const pretty = await prettyJson(request, record);
    if (pretty !== undefined) return pretty;
  }
  if (record.kind === "csv" || record.kind === "parquet" || isJson) {
    const table = await tablePreview(request, record);
    // A table the engine cannot read (a malformed CSV) still shows its text below the reason.
    if (table.ok) return table.html;
    return html`${table.html}${isTextMediaType(record.media_type) ? await textPreview(request, record) : ""}`;
  }
  if (isTextMediaType(record.media_type)) return textPreview(request, record);
  return section(
    "Content",
    html`<p>Binary content (${record.media_type}, ${formatBytes(record.bytes)}) has no preview here: <a href="${downloadHref(record.artifact_id)}">download it</a>.</p>`,
  );
}

function section(title: string, body: SafeHtml): SafeHtml {
  const id = `preview-${title.toLowerCase().replace(/[^a-z]+/g, "-")}`;
  return html`<section aria-labelledby="${id}"><h2 id="${id}">${title}</h2>${body}</section>`;
}

function baseType(mediaType: string): string {
  return mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
}

/** A KiB of text from `offset` (moved back to a code point boundary), with links to the next and first KiB. */
async function textPreview(request: UiRequest, record: VersionRecord): Promise<SafeHtml> {
  const offset = nonNegative(request.query("offset")) ?? 0;
  const workspace = await request.host.workspace();
  const page = await workspace.inspect({ ref: record.artifact_id, excerpt_bytes: TEXT_PAGE_BYTES, offset });
  const shown = page.excerpt ?? "";
  const end = page.next_offset ?? record.bytes;
  const v = record.current ? undefined : record.version;
  const links = [
    (page.offset ?? 0) > 0 ? html`<a href="${artifactHref(record.name, { v })}#preview-text">First KiB</a>` : "",
    page.next_offset !== null && page.next_offset !== undefined
      ? html`<a href="${artifactHref(record.name, { v, offset: page.next_offset })}#preview-text" rel="next">Next KiB</a>`
      : "",
  ];
  return section(
    "Text",
    html`<p class="muted">Bytes ${formatCount(page.offset ?? 0)}–${formatCount(end)} of ${formatCount(record.bytes)}</p>
<pre tabindex="0" aria-label="Text of ${record.name} version ${record.version}"><code>${shown}</code></pre>
${links.some((l) => l !== "") ? html`<nav class="pager" aria-label="Pages of the text">${links}</nav>` : ""}`,
  );
}

/** The whole JSON, parsed and indented; undefined when it does not parse (the caller falls back to other views). */
async function prettyJson(request: UiRequest, record: VersionRecord): Promise<SafeHtml | undefined> {
  const workspace = await request.host.workspace();
  const text = decodeUtf8Strict(await workspace.readBlob(record.sha256, record.bytes));
  if (text === undefined) return undefined;
  let pretty: string;
  try {
    // Deep nesting (thousands of levels) overflows the stack of stringify: shown as text instead, not a 500 page.
    pretty = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return undefined;
  }
  const cut = pretty.length > PRETTY_JSON_CHARS;
  return section(
    "JSON",
    html`<pre tabindex="0" aria-label="JSON of ${record.name} version ${record.version}"><code>${cut ? pretty.slice(0, PRETTY_JSON_CHARS) : pretty}</code></pre>
${cut ? html`<p class="muted">The first ${formatCount(PRETTY_JSON_CHARS)} characters of ${formatCount(pretty.length)}: <a href="${downloadHref(record.artifact_id)}">download it</a> for the rest.</p>` : ""}`,
  );
}

/**
 * A page of rows through the query engine (`SELECT * … LIMIT … OFFSET …` on this exact version), with the row
 * count; `ok: false` carries the engine's reason instead.
 */
async function tablePreview(request: UiRequest, record: VersionRecord): Promise<{ ok: boolean; html: SafeHtml }> {
  const offset = nonNegative(request.query("rows")) ?? 0;
  const sql = await request.host.sql();
  // The version's own id: an old version is shown as it was, so its inputs being stale does not matter here.
  const inputs = [record.artifact_id];
  let total: number;
  let columns: { name: string; type: string }[];
  let allColumns: number;
  let rows: Record<string, unknown>[];
  try {
    const counted = await sql.query({ inputs, sql: "SELECT count(*) AS n FROM input1", allow_historical: true });
    total = Number(counted.rows[0]?.n ?? 0);
    const page = await sql.queryRows(
      {
        inputs,
        sql: `SELECT * FROM input1 LIMIT ${TABLE_PAGE_ROWS} OFFSET ${offset}`,
        allow_historical: true,
      },
      { maxRows: TABLE_PAGE_ROWS, maxBytes: TABLE_PAGE_BYTES },
      async (file) => JSON.parse(await readFile(file.path, "utf8")) as Record<string, unknown>[],
    );
    allColumns = page.reply.columns.length;
    columns = page.reply.columns.slice(0, TABLE_COLUMNS);
    rows = page.rows;
  } catch (error) {
    const reason = toCairnError(error);
    return {
      ok: false,
      html: section(
        "Table",
        html`<p>The query engine cannot read this version as a table: <code>${reason.code}</code> ${reason.message}</p>`,
      ),
    };
  }
  const v = record.current ? undefined : record.version;
  const last = Math.max(0, Math.floor((total - 1) / TABLE_PAGE_ROWS) * TABLE_PAGE_ROWS);
  const pageLink = (to: number, label: string, rel?: string) =>
    html`<a href="${artifactHref(record.name, { v, rows: to || undefined })}#preview-table"${rel ? html` rel="${rel}"` : ""}>${label}</a>`;
  const caption =
    rows.length === 0
      ? `No rows from ${formatCount(offset + 1)} (the table has ${formatCount(total)})`
      : `Rows ${formatCount(offset + 1)}–${formatCount(offset + rows.length)} of ${formatCount(total)}`;
  return {
    ok: true,
    html: section(
      "Table",
      html`${chartOf(columns, rows)}<div class="table-wrap" tabindex="0" role="region" aria-labelledby="table-caption">${tableMarkup({ columns, rows, offset, caption, captionId: "table-caption" })}</div>
${allColumns > columns.length ? html`<p class="muted">The first ${formatCount(columns.length)} of ${formatCount(allColumns)} columns: <a href="${downloadHref(record.artifact_id)}">download it</a> or query it for the rest.</p>` : ""}
<nav class="pager" aria-label="Pages of the table">
${offset > 0 ? html`${pageLink(0, "First rows")} ${pageLink(Math.max(0, offset - TABLE_PAGE_ROWS), "Previous rows", "prev")}` : ""}
${offset + TABLE_PAGE_ROWS < total ? html`${pageLink(offset + TABLE_PAGE_ROWS, "Next rows", "next")} ${pageLink(last, "Last rows")}` : ""}
</nav>`,
    ),
  };
}

/**
 * The chart of the rows shown, as the table app draws it (views/chart-view.ts), with uPlot's stylesheet and the chart
 * script (same-origin, run after the page is parsed); nothing when the column types call for no chart.
 */
function chartOf(
  columns: readonly { name: string; type: string }[],
  rows: readonly Record<string, unknown>[],
): SafeHtml {
  const figure = chartFigure(columns, rows, "chart");
  if (figure === undefined) return html``;
  return html`<link rel="stylesheet" href="${CHART_STYLE_PATH}">
${figure}
<script src="${CHART_SCRIPT_PATH}" defer></script>
`;
}

/** A query parameter as a whole number of at most 15 digits; undefined otherwise. */
export function nonNegative(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}
