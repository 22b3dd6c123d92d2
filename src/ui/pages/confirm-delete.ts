// The page confirming a deletion: the name with all its versions (`/confirm/delete/NAME`), or one superseded version
// (`?v=N`). It states exactly what goes, and its form carries the current version it saw, so a version saved before
// the click makes the delete a VERSION_CONFLICT that deletes nothing.

import { html } from "../../views/html.js";
import type { VersionRecord } from "../../workspace/catalog/catalog.js";
import { isValidName } from "../../workspace/validate.js";
import type { Workspace } from "../../workspace/workspace.js";
import { changesOffPage, rolePage } from "../actions.js";
import type { ActionTarget } from "../csrf.js";
import { formatBytes, formatCount } from "../format.js";
import { errorPage, notFoundPage } from "../layout.js";
import { actionHref, artifactHref, confirmDeleteHref, decodePath } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { versionOf } from "./lookup.js";
import { nonNegative } from "./previews.js";

/** Versions listed by name on the page; the count covers them all. */
const LISTED = 20;

export const confirmDeletePage: UiRoute = {
  path: /^\/confirm\/delete\/(?<name>.+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const changes = request.changes;
    if (changes === undefined) return changesOffPage();
    if (!changes.may("delete")) return rolePage("delete", changes.actor);
    const name = decodePath(request.params.name ?? "");
    if (name === undefined || !isValidName(name)) {
      return notFoundPage(`“${name ?? request.params.name}” is not an artifact name.`);
    }
    const workspace = await request.host.workspace();
    const [current] = await workspace.lookup([name]);
    if (current === undefined) return notFoundPage(`The workspace holds no artifact “${name}” (any more).`);
    const v = nonNegative(request.query("v"));
    if (v === undefined) return wholeName(request, workspace, current);
    const record = await versionOf(workspace, name, v);
    if (record === undefined)
      return notFoundPage(`“${name}” has no version ${v} (it may have been deleted or pruned).`);
    if (record.current) {
      return errorPage(
        400,
        "The current version",
        `v${v} is the current version of ${name}: a name's current version goes only with the name.`,
        html`<p><a href="${confirmDeleteHref(name)}">Delete ${name} with all its versions</a>, or save a new version first and then delete v${v}.</p>`,
      );
    }
    const target: ActionTarget = { action: "delete", ref: record.artifact_id, expected_version: current.version };
    return {
      type: "page",
      title: `Delete ${name} v${v}?`,
      body: html`<h1>Delete ${name} v${v}?</h1>
<p class="confirm-what">This deletes <strong>${name} v${v}</strong> (<code>${record.artifact_id}</code>, ${formatBytes(record.bytes)}), a superseded version, as <strong>${changes.actor.name}</strong> (${changes.actor.role}). The current version, v${current.version}, and the other versions stay.</p>
<ul>
<li>Its bytes are removed unless another version holds the same content; this cannot be undone.</li>
<li>If another artifact pins this version, nothing is deleted and the next page names what pins it.</li>
<li>If ${name} gets a new version before you confirm, nothing is deleted and you are asked to look again.</li>
</ul>
${confirmForm(changes.formToken(target), target, `Delete ${name} v${v}`, artifactHref(name, { v }))}`,
    };
  },
};

async function wholeName(request: UiRequest, workspace: Workspace, current: VersionRecord): Promise<UiReply> {
  const changes = request.changes as NonNullable<UiRequest["changes"]>;
  const { count, listed } = await allVersions(workspace, current.name);
  const target: ActionTarget = { action: "delete", ref: current.name, expected_version: current.version };
  const noun = count === 1 ? "version" : "versions";
  return {
    type: "page",
    title: `Delete ${current.name}?`,
    body: html`<h1>Delete ${current.name}?</h1>
<p class="confirm-what">This deletes the name <strong>${current.name}</strong> and <strong>all ${formatCount(count)} ${noun}</strong>, up to the current v${current.version}, as <strong>${changes.actor.name}</strong> (${changes.actor.role}).</p>
<div class="table-wrap"><table>
<caption>The ${noun} that go${count > listed.length ? `, newest ${listed.length} of ${formatCount(count)} shown` : ""}</caption>
<thead><tr><th scope="col" class="num">Version</th><th scope="col">Version id</th><th scope="col" class="num">Size</th></tr></thead>
<tbody>${listed.map((r) => html`<tr><th scope="row" class="num">v${r.version}${r.current ? " (current)" : ""}</th><td><code>${r.artifact_id}</code></td><td class="num">${formatBytes(r.bytes)}</td></tr>`)}</tbody>
</table></div>
<ul>
<li>Their bytes are removed unless another version holds the same content; this cannot be undone.</li>
<li>If another artifact pins one of them, nothing is deleted and the next page names what pins it.</li>
<li>If ${current.name} gets a new version before you confirm, nothing is deleted and you are asked to look again.</li>
</ul>
${confirmForm(changes.formToken(target), target, `Delete ${current.name} and all ${formatCount(count)} ${noun}`, artifactHref(current.name))}`,
  };
}

/** How many versions a name has, and the newest few. */
async function allVersions(workspace: Workspace, name: string): Promise<{ count: number; listed: VersionRecord[] }> {
  const listed: VersionRecord[] = [];
  let count = 0;
  let before: number | undefined;
  for (;;) {
    const page = await workspace.versions(name, { limit: 100, before });
    count += page.versions.length;
    if (listed.length < LISTED) listed.push(...page.versions.slice(0, LISTED - listed.length));
    if (page.next_before === null) return { count, listed };
    before = page.next_before;
  }
}

function confirmForm(
  formToken: string,
  target: Extract<ActionTarget, { action: "delete" }>,
  label: string,
  cancel: string,
) {
  return html`<form class="confirm" method="post" action="${actionHref("delete")}">
<input type="hidden" name="csrf" value="${formToken}">
<input type="hidden" name="ref" value="${target.ref}">
<input type="hidden" name="expected_version" value="${target.expected_version}">
<button type="submit" class="danger">${label}</button>
<a href="${cancel}">Cancel, keep it</a>
</form>`;
}
