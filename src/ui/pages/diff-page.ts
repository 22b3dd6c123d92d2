// The line changes between two versions of a name, as a table: removed and added lines marked in words and signs
// (not colour alone), three unchanged lines around each change, longer unchanged runs folded. Both versions must be
// UTF-8 text up to 16 MiB (read whole and hash-verified); the comparison is line-diff.ts's, under its work budget.
// Two table versions (CSV, Parquet) are compared by rows instead (row-diff-page.ts); `lines=1` asks for lines.
import { isUtf8 } from "node:buffer";
import { isTextMediaType } from "../../media-type.js";
import { html, type SafeHtml } from "../../views/html.js";
import { cut } from "../../views/table-view.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { diffLines, type LineEdit } from "../../workspace/retrieval/line-diff.js";
import { SYNC_LIMITS } from "../../workspace/retrieval/sync.js";
import { isTableVersion } from "../../workspace/table-diff.js";
import { decodeUtf8 } from "../../workspace/utf8.js";
import { isValidName } from "../../workspace/validate.js";
import { formatBytes, formatCount, plural } from "../format.js";
import { errorPage, notFoundPage } from "../layout.js";
import { artifactHref, decodePath, downloadHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { versionOf } from "./lookup.js";
import { nonNegative } from "./previews.js";
import { rowDiffPage } from "./row-diff-page.js";

/** Unchanged lines shown before and after each change. */
const CONTEXT_LINES = 3;
/** Rows of the table at most; a longer comparison is cut with a note. */
const MAX_ROWS = 5000;
/** Characters of one line shown (the rest counted in words), and of all lines of the table together. */
const LINE_CHARS = 1000;
const TABLE_CHARS = 500_000;

export const diffPage: UiRoute = {
  path: /^\/diff\/(?<name>.+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const name = decodePath(request.params.name ?? "");
    if (name === undefined || !isValidName(name)) return notFoundPage("That is not an artifact name.");
    const from = nonNegative(request.query("from"));
    const to = nonNegative(request.query("to"));
    if (from === undefined || to === undefined) {
      return errorPage(
        400,
        "Two versions needed",
        "A comparison needs the version numbers to compare, as ?from=N&to=M.",
        html`<p>Open <a href="${artifactHref(name)}">${name}</a> and pick two versions under “Versions”.</p>`,
      );
    }
    const workspace = await request.host.workspace();
    const [before, after] = await Promise.all([versionOf(workspace, name, from), versionOf(workspace, name, to)]);
    if (before === undefined || after === undefined) {
      return notFoundPage(
        `“${name}” has no version ${before === undefined ? from : to} (it may have been deleted or pruned).`,
      );
    }
    const title = `${name}: changes from v${from} to v${to}`;
    const heading = html`<h1>Changes in <a href="${artifactHref(name)}">${name}</a> from v${from} to v${to}</h1>`;
    if (isTableVersion(before) && isTableVersion(after) && request.query("lines") !== "1") {
      return rowDiffPage(request, { name, before, after, title, heading });
    }
    const unreadable = [before, after].map(whyNotText).find((why) => why !== undefined);
    if (unreadable !== undefined) {
      return {
        type: "page",
        title,
        body: html`${heading}<p>${unreadable}</p>
<p>Download both to compare them with a tool for their format: <a href="${downloadHref(before.artifact_id)}">v${from}</a>, <a href="${downloadHref(after.artifact_id)}">v${to}</a>.</p>`,
      };
    }
    const [a, b] = await Promise.all([
      workspace.readBlob(before.sha256, before.bytes),
      workspace.readBlob(after.sha256, after.bytes),
    ]);
    if (!isUtf8(a) || !isUtf8(b)) {
      return {
        type: "page",
        title,
        body: html`${heading}<p>One of the versions is not valid UTF-8 text, so it has no lines to compare: download <a href="${downloadHref(before.artifact_id)}">v${from}</a> and <a href="${downloadHref(after.artifact_id)}">v${to}</a>.</p>`,
      };
    }
    const edits = diffLines(a, b);
    return {
      type: "page",
      title,
      body: html`${heading}${summaryOf(edits, before, after)}${diffTable(a, edits, from, to)}`,
    };
  },
};

function whyNotText(record: VersionRecord): string | undefined {
  if (!isTextMediaType(record.media_type)) {
    return `v${record.version} is ${record.media_type}, not text: line changes are shown between text versions only.`;
  }
  if (record.bytes > SYNC_LIMITS.sourceBytes) {
    return `v${record.version} is ${formatBytes(record.bytes)}; line changes are shown for text up to ${formatBytes(SYNC_LIMITS.sourceBytes)}.`;
  }
  return undefined;
}

function summaryOf(edits: readonly LineEdit[], before: VersionRecord, after: VersionRecord): SafeHtml {
  if (edits.length === 0) return html`<p>The two versions hold the same lines.</p>`;
  const removed = edits.reduce((sum, [, count]) => sum + count, 0);
  const added = edits.reduce((sum, [, , insert]) => sum + linesOf(insert).length, 0);
  return html`<p>${plural(edits.length, "change")}: ${plural(removed, "line")} removed, ${plural(added, "line")} added (${formatBytes(before.bytes)} → ${formatBytes(after.bytes)}).</p>`;
}

/** One row of the table: a line on one side or both, or a fold of unchanged lines. */
type Row =
  | { kind: "same"; old: number; new: number; text: string }
  | { kind: "del"; old: number; text: string }
  | { kind: "ins"; new: number; text: string }
  | { kind: "gap"; lines: number };

/** Every line as a row (edits applied in order), then long unchanged runs folded to their context. */
export function diffRows(base: Uint8Array, edits: readonly LineEdit[], context = CONTEXT_LINES): Row[] {
  const old = linesOf(decodeUtf8(base));
  const rows: Row[] = [];
  let at = 0;
  let shift = 0;
  const same = (end: number) => {
    for (; at < end; at++) rows.push({ kind: "same", old: at + 1, new: at + 1 + shift, text: old[at] as string });
  };
  for (const [start, count, insert] of edits) {
    same(start);
    for (let i = 0; i < count; i++, at++) rows.push({ kind: "del", old: at + 1, text: old[at] as string });
    const added = linesOf(insert);
    added.forEach((text, i) => {
      rows.push({ kind: "ins", new: start + shift + i + 1, text });
    });
    shift += added.length - count;
  }
  same(old.length);
  return fold(rows, context);
}

function fold(rows: readonly Row[], context: number): Row[] {
  const out: Row[] = [];
  let i = 0;
  while (i < rows.length) {
    if (rows[i]?.kind !== "same") {
      out.push(rows[i] as Row);
      i++;
      continue;
    }
    let end = i;
    while (end < rows.length && rows[end]?.kind === "same") end++;
    const keepHead = i === 0 ? 0 : context;
    const keepTail = end === rows.length ? 0 : context;
    if (end - i > keepHead + keepTail) {
      out.push(...rows.slice(i, i + keepHead));
      out.push({ kind: "gap", lines: end - i - keepHead - keepTail });
      out.push(...rows.slice(end - keepTail, end));
    } else out.push(...rows.slice(i, end));
    i = end;
  }
  return out;
}

/** Lines without their endings; a last line without `\n` is a line, and "" has none. */
function linesOf(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
}

function diffTable(base: Uint8Array, edits: readonly LineEdit[], from: number, to: number): SafeHtml {
  if (edits.length === 0) return html``;
  const rows = diffRows(base, edits);
  const shown = withinBudget(rows);
  return html`<div class="table-wrap"><table class="diff">
<caption>Lines of v${from} and v${to}: − removed, + added</caption>
<thead><tr><th scope="col" class="num">v${from}</th><th scope="col" class="num">v${to}</th><th scope="col"><span class="visually-hidden">Change</span></th><th scope="col">Line</th></tr></thead>
<tbody>
${shown.map((row) => {
  switch (row.kind) {
    case "same":
      return html`<tr><td class="line">${row.old}</td><td class="line">${row.new}</td><td class="mark"></td><td class="text">${cut(row.text, LINE_CHARS)}</td></tr>`;
    case "del":
      return html`<tr class="del"><td class="line">${row.old}</td><td class="line"></td><td class="mark"><abbr title="removed">−</abbr></td><td class="text">${cut(row.text, LINE_CHARS)}</td></tr>`;
    case "ins":
      return html`<tr class="ins"><td class="line"></td><td class="line">${row.new}</td><td class="mark"><abbr title="added">+</abbr></td><td class="text">${cut(row.text, LINE_CHARS)}</td></tr>`;
    default:
      return html`<tr class="gap"><td class="line">⋯</td><td class="line">⋯</td><td class="mark"></td><td class="text">${plural(row.lines, "unchanged line")}</td></tr>`;
  }
})}
</tbody></table></div>
${rows.length > shown.length ? html`<p class="muted">The first ${formatCount(shown.length)} rows of ${formatCount(rows.length)}: download both versions for the rest.</p>` : ""}`;
}

/** The first rows, at most MAX_ROWS and about TABLE_CHARS characters of lines (each line cut to LINE_CHARS). */
function withinBudget(rows: readonly Row[]): Row[] {
  let chars = 0;
  let end = 0;
  while (end < Math.min(rows.length, MAX_ROWS) && chars < TABLE_CHARS) {
    const row = rows[end] as Row;
    chars += row.kind === "gap" ? 0 : Math.min(row.text.length, LINE_CHARS);
    end++;
  }
  return rows.slice(0, end);
}
