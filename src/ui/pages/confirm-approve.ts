// The page confirming an approval of one exact version for task gates (`/confirm/approve/ws_…`), or the revocation of
// its approvals (`?revoke=1`). It names the version by id, name and number, who approves, and what it opens.

import { html } from "../../views/html.js";
import { isArtifactId } from "../../workspace/catalog/catalog.js";
import { changesOffPage, rolePage } from "../actions.js";
import type { ActionTarget } from "../csrf.js";
import { formatTime } from "../format.js";
import { notFoundPage } from "../layout.js";
import { actionHref, artifactHref, decodePath } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

export const confirmApprovePage: UiRoute = {
  path: /^\/confirm\/approve\/(?<id>[^/]+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const changes = request.changes;
    if (changes === undefined) return changesOffPage();
    if (!changes.may("approve")) return rolePage("approve", changes.actor);
    const id = decodePath(request.params.id ?? "");
    if (id === undefined || !isArtifactId(id)) {
      return notFoundPage(
        `“${id ?? request.params.id}” is not a version id (ws_…): an approval names one exact version.`,
      );
    }
    const workspace = await request.host.workspace();
    const [record] = await workspace.lookup([id]);
    if (record === undefined) return notFoundPage(`The workspace holds no version ${id} (any more).`);
    const revoke = request.query("revoke") === "1";
    const approvals = await workspace.tasks.approvals([id]);
    const target: ActionTarget = { action: "approve", ref: id, revoke };
    const at = `${id} (${record.name} v${record.version})`;
    const what = revoke
      ? html`<p class="confirm-what">This revokes <strong>every current approval</strong> of <strong>${at}</strong>, as <strong>${changes.actor.name}</strong> (${changes.actor.role}). Task steps gated on this version wait again until someone approves it.</p>`
      : html`<p class="confirm-what">This approves <strong>${at}</strong> for task gates, as <strong>${changes.actor.name}</strong> (${changes.actor.role}). A task step listed in its task's approvals and waiting on exactly this version runs at the task's next run; ${record.current ? "later versions" : "other versions, the current one included,"} need their own approval.</p>`;
    const verb = revoke ? "Revoke the approvals of" : "Approve";
    return {
      type: "page",
      title: `${verb} ${record.name} v${record.version}?`,
      body: html`<h1>${verb} ${record.name} v${record.version}?</h1>
${what}
${
  approvals.length === 0
    ? html`<p>It has no approval yet.</p>`
    : html`<p>Its current approvals:</p><ul>${approvals.map((a) => html`<li>${a.approver}, <time datetime="${a.approved_at}">${formatTime(a.approved_at)}</time></li>`)}</ul>`
}
<form class="confirm" method="post" action="${actionHref("approve")}">
<input type="hidden" name="csrf" value="${changes.formToken(target)}">
<input type="hidden" name="ref" value="${id}">
${revoke ? html`<input type="hidden" name="revoke" value="1">` : ""}
<button type="submit"${revoke ? html` class="danger"` : ""}>${verb} ${record.name} v${record.version}</button>
<a href="${artifactHref(record.name, { v: record.version })}">Cancel</a>
</form>`,
    };
  },
};
