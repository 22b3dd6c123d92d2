// The claims page: who holds what now (resource, holder, ticket, since, expires in), the expired claims nobody took
// over yet (claimable, still valid for their holder until then) and the released ones (their newest ticket), each
// in resource order, 50 at a time; `state` and `after` page one of them. The store keeps one row per resource ever
// claimed, so released claims show the last ticket but no holder.

import { html, type SafeHtml } from "../../views/html.js";
import { CLAIM_LIMITS, type ClaimRecord, type ClaimState } from "../../workspace/catalog/claim-store.js";
import { isValidName } from "../../workspace/validate.js";
import { formatTime, plural } from "../format.js";
import { artifactHref, claimsHref, taskHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { badRequest } from "./task-paging.js";

/** Claims listed per state on one page. */
const PAGE_SIZE = 50;
const STATES: readonly ClaimState[] = ["held", "expired", "released"];
const HEADINGS: Record<ClaimState, string> = {
  held: "Held now",
  expired: "Expired, not taken over",
  released: "Released",
};

export const claimsPage: UiRoute = {
  path: /^\/claims\/?$/,
  nav: { label: "Claims", href: claimsHref() },
  async handle(request: UiRequest): Promise<UiReply> {
    const stateParam = request.query("state");
    const after = request.query("after");
    if (stateParam !== undefined && !STATES.includes(stateParam as ClaimState)) {
      return badRequest(`state must be held, expired or released, got “${stateParam.slice(0, 40)}”`, claimsHref());
    }
    if (after !== undefined && (after.length > CLAIM_LIMITS.resourceChars || stateParam === undefined)) {
      return badRequest(
        "after pages one state's claims: pass state too, and a resource of at most 200 characters",
        claimsHref(),
      );
    }
    const state = stateParam as ClaimState | undefined;
    const workspace = await request.host.workspace();
    const states = state === undefined ? STATES : [state];
    // One more than shown says whether another page follows.
    const lists = await Promise.all(
      states.map((s) => workspace.claims.list({ state: s, after, limit: PAGE_SIZE + 1 })),
    );
    const now = Date.now();
    // Which claimed resources are artifact names the workspace holds: those link to their artifact page.
    const names = lists
      .flat()
      .map((c) => c.resource)
      .filter((r) => !r.startsWith("task:") && isValidName(r));
    const found = new Set((await workspace.lookup(names)).flatMap((r) => (r === undefined ? [] : [r.name])));
    const empty = lists.every((l) => l.length === 0);
    return {
      type: "page",
      title: state === undefined ? "Claims" : `Claims: ${HEADINGS[state].toLowerCase()}`,
      body: html`<h1>Claims</h1>
<p>A claim gives one holder a resource for a while, with a ticket its writes carry: <code>task:NAME</code> fences <code>task_run</code>, an artifact name fences <code>save</code>. A newer claim's ticket fences the older one's writes. Times are at <time datetime="${new Date(now).toISOString()}">${formatTime(new Date(now).toISOString())}</time>.</p>
${state === undefined ? "" : html`<p><a href="${claimsHref()}">All claims</a></p>`}
${empty && state === undefined ? emptyNote() : states.map((s, i) => section(s, lists[i] as ClaimRecord[], after, now, found))}`,
    };
  },
};

function section(
  state: ClaimState,
  listed: readonly ClaimRecord[],
  after: string | undefined,
  now: number,
  artifacts: ReadonlySet<string>,
): SafeHtml {
  const claims = listed.slice(0, PAGE_SIZE);
  const more = listed.length > PAGE_SIZE;
  const headingId = `claims-${state}`;
  return html`<section aria-labelledby="${headingId}"><h2 id="${headingId}">${HEADINGS[state]}</h2>
${
  claims.length === 0
    ? html`<p class="muted">${after === undefined ? `No ${state} claims.` : "No more."}</p>`
    : html`<div class="table-wrap"><table class="claims">
<caption>${HEADINGS[state]}: ${plural(claims.length, "claim")}${more ? " (more follow)" : ""}${after === undefined ? "" : `, after ${after}`}, by resource</caption>
<thead><tr><th scope="col">Resource</th>${state === "released" ? html`<th scope="col" class="num">Last ticket</th><th scope="col">Last claimed</th>` : html`<th scope="col">Holder</th><th scope="col" class="num">Ticket</th><th scope="col">Since</th><th scope="col">Expires</th>`}</tr></thead>
<tbody>${claims.map((c) => row(c, now, artifacts))}</tbody></table></div>`
}
${more ? html`<p><a href="${claimsHref({ state, after: (claims.at(-1) as ClaimRecord).resource })}">More ${state} claims</a></p>` : ""}
${state === "expired" && claims.length > 0 ? html`<p class="muted">An expired claim stays valid for its holder (renew, writes) until someone else claims the resource.</p>` : ""}
</section>`;
}

function row(claim: ClaimRecord, now: number, artifacts: ReadonlySet<string>): SafeHtml {
  const since = new Date(claim.claimed_at).toISOString();
  const resource = resourceLink(claim.resource, artifacts);
  if (claim.state === "released") {
    return html`<tr><th scope="row">${resource}</th><td class="num">${claim.last_ticket}</td><td><time datetime="${since}">${formatTime(since)}</time></td></tr>`;
  }
  const expires = new Date(claim.expires_at ?? 0).toISOString();
  const left = (claim.expires_at ?? 0) - now;
  return html`<tr><th scope="row">${resource}</th><td>${claim.holder}</td><td class="num">${claim.ticket}</td>
<td><time datetime="${since}">${formatTime(since)}</time></td>
<td><time datetime="${expires}">${formatTime(expires)}</time> <span class="summary">${left > 0 ? `in ${duration(left)}` : `${duration(-left)} ago`}</span></td></tr>`;
}

function resourceLink(resource: string, artifacts: ReadonlySet<string>): SafeHtml {
  if (resource.startsWith("task:")) {
    return html`<code>task:</code><a href="${taskHref(resource.slice(5))}">${resource.slice(5)}</a>`;
  }
  if (artifacts.has(resource)) return html`<a href="${artifactHref(resource)}">${resource}</a>`;
  return html`<code>${resource}</code>`;
}

/** 75_000 -> "1 min 15 s"; whole hours and days past a day. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 === 0 ? "" : ` ${s % 60} s`}`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) === 0 ? "" : ` ${Math.floor((s % 3600) / 60)} min`}`;
  return plural(Math.floor(s / 86_400), "day");
}

function emptyNote(): SafeHtml {
  return html`<div class="next-step"><h2>No claims</h2>
<p>Nothing has been claimed in this workspace. Agents sharing it take turns with <code>claim</code> (an MCP tool, or <code>cairn claim task:NAME --ttl-s 600</code>), pass the ticket to <code>task_run</code> or <code>save</code>, and <code>claim_release</code> when done.</p></div>`;
}
