// The page an action redirects to (POST-redirect-GET): what was done, and where to go next. Notices live in the
// handler's memory for 30 minutes, readable only by the sign-in that acted; a reload shows the same notice.

import { html } from "../../views/html.js";
import { changesOffPage } from "../actions.js";
import { errorPage } from "../layout.js";
import { workspaceHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

export const confirmDonePage: UiRoute = {
  path: /^\/done\/(?<id>[A-Za-z0-9_-]{1,64})$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const changes = request.changes;
    if (changes === undefined) return changesOffPage();
    const notice = changes.notice(request.params.id ?? "");
    if (notice === undefined) {
      return errorPage(
        404,
        "No such notice",
        "This notice has expired (after 30 minutes or a restart), or another sign-in's action left it.",
        html`<p>What was done is in the event log: <code>cairn changes</code>. Go to <a href="${workspaceHref()}">the workspace</a>.</p>`,
      );
    }
    return {
      type: "page",
      title: notice.title,
      body: html`<h1>${notice.title}</h1>
<div class="notice" role="status"><p>${notice.message}</p></div>
<ul>${notice.links.map((l) => html`<li><a href="${l.href}">${l.label}</a></li>`)}</ul>
<p class="muted">The event log records it with the identity and role: <code>cairn changes</code>.</p>`,
    };
  },
};
