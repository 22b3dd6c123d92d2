// The rows that changed between two table versions (CSV, Parquet), computed by DuckDB (workspace/row-changes.ts):
// the counts, then the first MAX_ROWS changes, changed rows first; `key` (comma-separated columns) matches rows,
// else whole rows are compared. A CSV's line changes stay one link away.
import { toCairnError } from "../../errors.js";
import { html, type SafeHtml } from "../../views/html.js";
import { changedRowsTable, changesWords, columnWords } from "../../views/row-changes-view.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { checkKey } from "../../workspace/row-changes.js";
import { compareLocated } from "../../workspace/table-diff.js";
import { errorPage } from "../layout.js";
import { diffHref, downloadHref } from "../links.js";
import type { UiReply, UiRequest } from "../route.js";

/** Changes shown at most; the rest are counted. */
const MAX_ROWS = 200;
/** Bytes of JSON of the rows shown at most. */
const MAX_BYTES = 2 * 1024 * 1024;

export async function rowDiffPage(
  request: UiRequest,
  page: { name: string; before: VersionRecord; after: VersionRecord; title: string; heading: SafeHtml },
): Promise<UiReply> {
  const { name, before, after, title, heading } = page;
  const asked = request.query("key")?.trim();
  let key: string[] | undefined;
  try {
    key = checkKey(asked === undefined || asked === "" ? undefined : asked.split(",").map((k) => k.trim()));
  } catch (error) {
    return errorPage(400, "Key columns not understood", toCairnError(error).message, form(name, before, after, asked));
  }
  const workspace = await request.host.workspace();
  const located = await workspace.locate([before.artifact_id, after.artifact_id]);
  let reply: Awaited<ReturnType<typeof compareLocated>>;
  try {
    reply = await compareLocated(
      await request.host.sql(),
      located[0] as { record: VersionRecord; path: string },
      located[1] as { record: VersionRecord; path: string },
      { key, limit: MAX_ROWS, max_bytes: MAX_BYTES },
    );
  } catch (error) {
    return {
      type: "page",
      title,
      body: html`${heading}<p>The rows could not be compared: ${toCairnError(error).message}</p>${downloads(before, after)}`,
    };
  }
  const changes = reply.row_changes;
  const total = changes.added + changes.removed + (changes.changed ?? 0);
  const columns = columnWords(changes);
  const lines =
    before.kind === "csv" && after.kind === "csv"
      ? html` <a href="${diffHref(name, before.version, after.version, { lines: true })}">Line changes</a>.`
      : "";
  return {
    type: "page",
    title,
    body: html`${heading}
<p>${total === 0 ? "The two versions hold the same rows" : changesWords(changes)}.${lines}</p>
${columns === "" ? "" : html`<p>${columns}</p>`}
${form(name, before, after, key?.join(","))}
${changedRowsTable(changes.rows, total, `Rows of v${before.version} and v${after.version}`, "changes-caption")}
${changes.rows.length < total ? html`<p class="muted">The rest are counted above: download both versions, or <code>cairn diff ${name} --base ${before.version}${key === undefined ? "" : ` --key ${key.join(" ")}`} --offset ${changes.rows.length}</code>.</p>${downloads(before, after)}` : ""}`,
  };
}

/** The key columns to match rows on, with its label. */
function form(name: string, before: VersionRecord, after: VersionRecord, key: string | undefined): SafeHtml {
  return html`<form class="compare" method="get" action="${diffHref(name, before.version, after.version).split("?")[0]}">
<input type="hidden" name="from" value="${before.version}"><input type="hidden" name="to" value="${after.version}">
<div class="field"><label for="diff-key">Key columns (comma-separated; empty compares whole rows)</label><input id="diff-key" name="key" value="${key ?? ""}"></div>
<button type="submit">Compare rows</button>
</form>`;
}

function downloads(before: VersionRecord, after: VersionRecord): SafeHtml {
  return html`<p>Download <a href="${downloadHref(before.artifact_id)}">v${before.version}</a> and <a href="${downloadHref(after.artifact_id)}">v${after.version}</a>.</p>`;
}
