// The artifact page's "Changes" section when the view may change the workspace: who acts, a version's approvals,
// and the buttons that lead to confirmation pages (links: nothing changes before the confirmation's POST).

import { html, type SafeHtml } from "../views/html.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import { formatTime } from "./format.js";
import { confirmApproveHref, confirmDeleteHref } from "./links.js";
import type { UiRequest } from "./route.js";

/** The section, or nothing when the view is read-only. `current`: the name's current version, if it has one. */
export async function actionsSection(
  request: UiRequest,
  record: VersionRecord,
  current: VersionRecord | undefined,
): Promise<SafeHtml> {
  const changes = request.changes;
  if (changes === undefined) return html``;
  const { actor } = changes;
  const approvals = await (await request.host.workspace()).tasks.approvals([record.artifact_id]);
  const buttons: SafeHtml[] = [];
  const missing: string[] = [];
  if (changes.may("delete")) {
    if (!record.current && current !== undefined) {
      buttons.push(button(confirmDeleteHref(record.name, record.version), `Delete v${record.version}…`, true));
    }
    if (current !== undefined) buttons.push(button(confirmDeleteHref(record.name), `Delete ${record.name}…`, true));
  } else missing.push("deleting needs the writer role");
  if (changes.may("approve")) {
    buttons.push(button(confirmApproveHref(record.artifact_id), `Approve v${record.version}…`));
    if (approvals.length > 0) {
      buttons.push(button(confirmApproveHref(record.artifact_id, true), "Revoke its approvals…"));
    }
  } else missing.push("approving needs the approver role");
  return html`<section aria-labelledby="changes-heading"><h2 id="changes-heading">Changes</h2>
<p>You act as <strong>${actor.name}</strong> (${actor.role})${missing.length === 0 ? "" : html`: ${missing.join("; ")}`}. Each button shows what it will do and asks you to confirm.</p>
<p>${
    approvals.length === 0
      ? "This exact version is not approved for task gates."
      : html`Approved for task gates by ${approvals.map((a, i) => html`${i === 0 ? "" : ", "}${a.approver} (<time datetime="${a.approved_at}">${formatTime(a.approved_at)}</time>)`)}.`
  }</p>
${buttons.length === 0 ? "" : html`<div class="actions">${buttons}</div>`}
</section>`;
}

/** A link drawn as a button that opens a confirmation page: it only navigates, so it is a link (Enter follows it). */
function button(href: string, label: string, danger = false): SafeHtml {
  return html`<a class="${danger ? "button danger" : "button"}" href="${href}">${label}</a>`;
}
