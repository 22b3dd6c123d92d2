/// <reference lib="dom" />
// The diff app (ui://cairn/diff.html): a `diff` reply inside the host. Two table versions: the counts in words, the
// columns added, removed or retyped, and the changed rows (changed first, key, before → after), drawn by the web
// view's own code (views/row-changes-view.ts), paged by `diff` calls through the host with the same arguments and
// the next `offset`. Text: the line edits as a table. The resource's CSP allows no network.
import { html, type SafeHtml } from "../views/html.js";
import {
  changedRowsTable,
  changesTotal,
  changesWords,
  columnWords,
  plural,
  type ViewChanges,
} from "../views/row-changes-view.js";
import { AppChannel, type ToolResult } from "./app-channel.js";
import { applyHostContext, FrameSize, replyError, replyJson, showNote } from "./app-frame.js";

/** A diff reply (operations/retrieval/diff.ts): the current version's metadata and its changes. */
interface DiffReply {
  artifact_id: string;
  name: string;
  version: number;
  base?: { artifact_id: string; name: string; version: number };
  row_changes?: ViewChanges & { rows: NonNullable<ViewChanges["rows"]>; offset: number };
  changes?: [number, number, string][];
  requires_read?: true;
  reason?: string;
}

const root = document.getElementById("app") as HTMLElement;
let args: Record<string, unknown> = {};
/** The first page's reply: later pages must compare the same version. */
let first: DiffReply | undefined;
/** The offsets of the pages before the one shown, for "Previous". */
const before: number[] = [];
/** The offset of the page shown. */
let shownOffset = 0;
let busy = false;

const channel = new AppChannel({
  toolInput: (input) => {
    args = input;
  },
  toolResult: (result) => show(result),
  toolCancelled: () => note("The call was cancelled: there is no diff to show."),
  hostContext: (context) => applyHostContext(context),
});
const size = new FrameSize(root, channel);

function note(text: string): void {
  showNote(root, text);
  size.report(true);
}

function isDiff(value: unknown): value is DiffReply {
  const v = value as Partial<DiffReply> | undefined;
  return (
    typeof v?.artifact_id === "string" &&
    typeof v.version === "number" &&
    (v.row_changes !== undefined || Array.isArray(v.changes) || v.requires_read === true)
  );
}

function show(result: ToolResult): void {
  const error = replyError(result);
  const reply = replyJson(result);
  first = undefined;
  before.length = 0;
  if (error !== undefined) {
    note(`The call failed: ${error.code}. Its reply says why.`);
    return;
  }
  if (!isDiff(reply)) {
    note("This reply holds no diff.");
    return;
  }
  first = reply;
  render(reply);
}

function render(reply: DiffReply, moved = false): void {
  const since = reply.base === undefined ? "the version the caller holds" : baseWords(reply);
  root.innerHTML = html`<h1>Changes in ${reply.name} <span class="muted">v${reply.version}</span></h1>
<p class="muted">From ${since} to v${reply.version}, the current version.</p>
${moved ? html`<div class="callout" role="note"><p>${reply.name} moved on since the first page: this page compares v${reply.version}.</p></div>` : ""}
${reply.row_changes !== undefined ? rowsPart(reply) : reply.changes !== undefined ? linesPart(reply.changes) : html`<p>Not compared here: read v${reply.version} whole (${reply.reason ?? "its reply says why"}).</p>`}
<p id="status" class="muted" role="status" aria-live="polite"></p>`.toString();
  size.report(true);
}

function baseWords(reply: DiffReply): string {
  const base = reply.base as NonNullable<DiffReply["base"]>;
  return base.name === reply.name ? `v${base.version}` : `${base.name} v${base.version}`;
}

function rowsPart(reply: DiffReply): SafeHtml {
  const changes = reply.row_changes as NonNullable<DiffReply["row_changes"]>;
  shownOffset = changes.offset;
  const total = changesTotal(changes);
  const columns = columnWords(changes);
  const end = changes.offset + changes.rows.length;
  const caption = `Rows of ${baseWords(reply)} and v${reply.version}`;
  return html`<p>${total === 0 ? "The two versions hold the same rows." : `${changesWords(changes)}.`}</p>
${columns === "" ? "" : html`<p>${columns}</p>`}
${changedRowsTable(changes.rows, total, caption, "changes-caption", changes.offset)}
${total > changes.rows.length || changes.offset > 0 ? html`<nav class="pager" aria-label="Pages of the changes"><button type="button" data-page="first"${changes.offset === 0 ? " disabled" : ""}>First</button><button type="button" data-page="previous"${before.length === 0 ? " disabled" : ""}>Previous</button><button type="button" data-page="${end}"${end >= total || changes.rows.length === 0 ? " disabled" : ""}>Next</button><span class="muted">${plural(total, "change")} in all</span></nav>` : ""}`;
}

/** Line edits `[at, delete, insert]` as a table: where, how many lines go, and the lines that come. */
function linesPart(edits: [number, number, string][]): SafeHtml {
  if (edits.length === 0) return html`<p>Unchanged: the two versions hold the same text.</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="edits-caption"><table class="rows edits">
<caption id="edits-caption">${plural(edits.length, "line edit")}, in order</caption>
<thead><tr><th scope="col" class="num">At line</th><th scope="col" class="num">Lines removed</th><th scope="col">Lines inserted</th></tr></thead>
<tbody>${edits.map(([at, removed, inserted]) => html`<tr><td class="num">${String(at + 1)}</td><td class="num">${String(removed)}</td><td class="pre">${inserted === "" ? html`<span class="muted">none</span>` : inserted.replace(/\n$/, "")}</td></tr>`)}</tbody></table></div>`;
}

function status(text: string): void {
  const line = document.getElementById("status");
  if (line) line.textContent = text;
}

/**
 * The page of changes from `offset`: `diff` through the host, with the first call's arguments; `stack` is the
 * offsets "Previous" goes back through once this page is shown.
 */
async function page(offset: number, stack: number[]): Promise<void> {
  const result = await channel.callServerTool("diff", { ...args, offset });
  const error = replyError(result);
  const reply = replyJson(result);
  if (error !== undefined || !isDiff(reply) || reply.row_changes === undefined) {
    status(error ? `The page could not be read: ${error.code}: ${error.message}` : "The reply holds no changes.");
    return;
  }
  before.splice(0, before.length, ...stack);
  render(reply, reply.artifact_id !== first?.artifact_id);
  document.getElementById("changes-caption")?.closest<HTMLElement>(".table-wrap")?.focus();
}

root.addEventListener("click", (event) => {
  const button = (event.target as HTMLElement).closest("button[data-page]") as HTMLButtonElement | null;
  if (button === null || busy || first === undefined) return;
  const asked = button.dataset.page;
  const [target, stack] =
    asked === "first"
      ? [0, []]
      : asked === "previous"
        ? [before.at(-1) ?? 0, before.slice(0, -1)]
        : [Number(asked), [...before, shownOffset]];
  busy = true;
  status("Asking the host…");
  page(target, stack)
    .catch((error: Error) => status(`The host did not answer: ${error.message}`))
    .finally(() => {
      busy = false;
    });
});

channel.connect({ name: "cairn-diff", version: "1" }).then(applyHostContext, (error: Error) => {
  note(`The host did not start this view: ${error.message}`);
});
