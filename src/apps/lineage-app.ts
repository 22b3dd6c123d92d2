/// <reference lib="dom" />
// The lineage app (ui://cairn/lineage.html): the graph of what a version was made from, stale paths dashed and
// worded, drawn by the web view's own code (views/lineage-view.ts), then the same versions as a table. The reply of
// `inspect` or `provenance` names the version; every version drawn is read with `inspect` calls through the host
// (tools/call), and a version's own lineage opens from its row the same way: the resource's CSP allows no network.
import { html, type SafeHtml } from "../views/html.js";
import { lineageFigure, standingOf } from "../views/lineage-view.js";
import { AppChannel, type ToolResult } from "./app-channel.js";
import { applyHostContext, FrameSize, replyError, replyJson, showNote } from "./app-frame.js";
import { type InspectedVersion, inspectedOf, type LineageFound, lineageOf, rootRef } from "./lineage-source.js";

const root = document.getElementById("app") as HTMLElement;
let shown: LineageFound | undefined;
let busy = false;

const channel = new AppChannel({
  toolResult: (result) => void show(result),
  toolCancelled: () => note("The call was cancelled: there is no version to show."),
  hostContext: (context) => applyHostContext(context),
});
const size = new FrameSize(root, channel);

function note(text: string): void {
  showNote(root, text);
  size.report(true);
}

/** `inspect` through the host, metadata only; a call that fails is asked again one ref at a time. */
async function inspect(refs: string[]): Promise<(InspectedVersion | undefined)[]> {
  const result = await channel.callServerTool("inspect", { refs, excerpt_bytes: 0, full: true });
  const reply = replyJson(result) as { artifacts?: unknown[] } | undefined;
  if (!result.isError && Array.isArray(reply?.artifacts)) return reply.artifacts.map(inspectedOf);
  if (refs.length === 1) return [undefined];
  return (await Promise.all(refs.map((ref) => inspect([ref])))).flat();
}

async function show(result: ToolResult): Promise<void> {
  const error = replyError(result);
  const ref = error === undefined ? rootRef(replyJson(result)) : undefined;
  if (ref === undefined) {
    note(error ? `The call failed: ${error.code}. Its reply says why.` : "This reply names no version.");
    return;
  }
  await open(ref);
}

async function open(ref: string): Promise<void> {
  if (busy) return;
  busy = true;
  status(`Reading the lineage of ${ref}…`);
  try {
    const found = await lineageOf(ref, inspect);
    if (found === undefined) {
      note(`No version ${ref} could be read: it may have been pruned.`);
      return;
    }
    shown = found;
    render(found);
  } catch (error) {
    status(`The host did not answer: ${(error as Error).message}`);
  } finally {
    busy = false;
  }
}

function status(text: string): void {
  const line = document.getElementById("status");
  if (line) line.textContent = text;
  else note(text);
}

function relation(role: string, depth: number): string {
  switch (role) {
    case "root":
      return "the version this graph is about";
    case "upstream":
      return depth === 1 ? "it was made from this" : `made from this, ${depth} levels up`;
    case "now":
      return "the current version of a name that moved on";
    default:
      return role;
  }
}

function caption(found: LineageFound): SafeHtml {
  const { root: r } = found;
  const stalePaths = found.edges.filter((e) => e.stale).length;
  const inputs = found.nodes.size - 1 - [...found.nodes.values()].filter((n) => n.role === "now").length;
  return html`Lineage graph of <strong>${r.name} v${r.version}</strong>: ${inputs === 0 ? "it pins no other version" : `${inputs} version${inputs === 1 ? "" : "s"} it was made from`}, left to right toward it${stalePaths === 0 ? "" : html`; <strong>${stalePaths} stale path${stalePaths === 1 ? "" : "s"}</strong> dashed and labelled`}${found.omitted > 0 ? `; ${found.omitted} more past the bounds, not drawn` : ""}. The table below lists the same versions.`;
}

function render(found: LineageFound): void {
  const { root: r } = found;
  const staleInputs = r.stale_inputs.map(
    (s) =>
      html`<li>${s.name} v${s.version} — ${s.current_version === null ? "its name was deleted" : `now v${s.current_version}`}</li>`,
  );
  const rows = [...found.nodes.values()].map(
    (node) => html`<tr${node.record.stale ? html` class="stale"` : ""}>
<th scope="row">${node.record.name} v${node.record.version}</th>
<td>${node.record.kind}</td>
<td>${standingOf(node)}</td>
<td>${relation(node.role, node.depth)}</td>
<td>${node.role === "root" ? "" : html`<button type="button" class="open" data-id="${node.record.artifact_id}">Lineage<span class="visually-hidden"> of ${node.record.name} v${node.record.version}</span></button>`}</td>
</tr>`,
  );
  root.innerHTML = html`<h1>Lineage of ${r.name} <span class="muted">v${r.version}</span></h1>
<p class="muted">${r.kind}, ${standingOf(found.nodes.get(r.artifact_id) ?? { record: r })}</p>
${r.stale ? html`<div class="callout" role="note"><p>It is stale: it was made from versions that are no longer current:</p><ul>${staleInputs}</ul></div>` : ""}
${lineageFigure(found, {
  captionId: "lineage-caption",
  caption: caption(found),
  rootNote: "the version this graph is about",
})}
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="versions-caption"><table class="lineage-nodes">
<caption id="versions-caption">Versions in the lineage of ${r.name} v${r.version}</caption>
<thead><tr><th scope="col">Version</th><th scope="col">Kind</th><th scope="col">Standing</th><th scope="col">Relation</th><th scope="col">Open</th></tr></thead>
<tbody>${rows}</tbody></table></div>
<p id="status" class="muted" role="status" aria-live="polite"></p>`.toString();
  size.report(true);
}

root.addEventListener("click", (event) => {
  const target = (event.target as HTMLElement).closest("button.open") as HTMLButtonElement | null;
  if (target === null || shown === undefined) return;
  const id = target.dataset.id;
  if (id !== undefined) void open(id);
});

channel.connect({ name: "cairn-lineage", version: "1" }).then(applyHostContext, (error: Error) => {
  note(`The host did not start this view: ${error.message}`);
});
