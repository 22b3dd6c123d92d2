// The identities `cairn serve --transport http --ui` serves (decisions 0233, 0261): each identity's client, when it
// was first and last active, its tool calls and live requests, its open connections, and its stores' usage against
// their limits (bars that also say the numbers); its handles are on its own page. A reader sees its own token's
// identity; the server's own token sees all. Under `cairn ui` alone there are none: the page says where they are shown.
import type { SessionSummary, StoreUsage } from "../../session/session-summary.js";
import { html, type SafeHtml } from "../../views/html.js";
import { formatBytes, formatCount, formatTime, plural } from "../format.js";
import { sessionHref, sessionsHref } from "../links.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";

/** The identities `request`'s reader may see, newest activity first, and whose; undefined under `cairn ui`. */
export async function visibleSessions(
  request: UiRequest,
): Promise<{ sessions: SessionSummary[]; identity: string | undefined } | undefined> {
  if (request.host.sessions === undefined) return undefined;
  const all = await request.host.sessions();
  const identity = request.reader.actor?.name;
  // The server's own token owns the process and its sessions; any other token sees its identity's alone.
  const sessions = identity === undefined ? all : all.filter((s) => s.identity?.name === identity);
  return { sessions: sessions.sort((a, b) => b.last_active_at.localeCompare(a.last_active_at)), identity };
}

export const sessionsPage: UiRoute = {
  path: /^\/sessions\/?$/,
  nav: { label: "Identities", href: sessionsHref() },
  async handle(request: UiRequest): Promise<UiReply> {
    const visible = await visibleSessions(request);
    if (visible === undefined) return { type: "page", title: "Identities", body: notServedHere() };
    const { sessions, identity } = visible;
    const now = Date.now();
    const spills = sessions[0]?.spills;
    return {
      type: "page",
      title: "Identities",
      body: html`<h1>Identities</h1>
<p>${scopeNote(identity)}</p>
<p>${sessions.length === 0 ? "No identity has called yet" : plural(sessions.length, "identity", "identities")}${identity === undefined ? "" : html` (identity <strong>${identity}</strong>)`}. Handles belong to the identity that saved them, not to a connection: any later request of that identity, on any connection, may use them until their TTL, until the identity's store evicts them (least recently used first), or until the server stops.</p>
${spills === undefined ? "" : html`<p>Spilled copies of all identities of this server: ${usage(spills.process_bytes, spills.max_total_bytes, "bytes", "spill-total")} <span class="muted">(output.max_total_bytes)</span></p>`}
${sessions.length === 0 ? emptyNote() : sessionTable(sessions, now)}`,
    };
  },
};

function scopeNote(identity: string | undefined): SafeHtml {
  return identity === undefined
    ? html`You signed in with the server's own token, so every identity is listed.`
    : html`You signed in with the token of identity <strong>${identity}</strong>: only it is listed. The server's own token sees every identity.`;
}

function emptyNote(): SafeHtml {
  return html`<p>Connect an MCP client to <code>/mcp</code> of this server with <code>Authorization: Bearer &lt;token&gt;</code>; its identity appears here with its first request. Reload to see new ones.</p>`;
}

function sessionTable(sessions: readonly SessionSummary[], now: number): SafeHtml {
  return html`<div class="table-wrap"><table class="sessions">
<caption>Identities, most recently active first</caption>
<thead><tr><th scope="col">Label</th><th scope="col">Identity</th><th scope="col">Client</th><th scope="col">First active</th><th scope="col">Last active</th><th scope="col" class="num">Tool calls</th><th scope="col">Result store</th><th scope="col">Artifact store</th><th scope="col">Spilled copies</th><th scope="col" class="num">Connections</th></tr></thead>
<tbody>
${sessions.map(
  (s) => html`<tr>
<th scope="row"><a href="${sessionHref(s.label)}"><code class="label">${s.label}</code></a></th>
<td>${identityOf(s)}</td>
<td>${clientOf(s)}</td>
<td>${when(s.started_at, now)}</td>
<td>${when(s.last_active_at, now)}</td>
<td class="num">${formatCount(s.calls)}${s.running > 0 ? html`<span class="summary">${formatCount(s.running)} running</span>` : ""}</td>
<td>${storeCell(s.results, `${s.label}-results`)}</td>
<td>${storeCell(s.artifacts, `${s.label}-artifacts`)}</td>
<td>${plural(s.spills.entries, "copy", "copies")}, ${formatBytes(s.spills.bytes)}</td>
<td class="num">${formatCount(s.connections)}</td>
</tr>`,
)}
</tbody></table></div>`;
}

/** "ada (writer)", or a note when the session acts as nobody in particular. */
export function identityOf(s: SessionSummary): SafeHtml {
  return s.identity === undefined
    ? html`<span class="muted">none</span>`
    : html`${s.identity.name} <span class="muted">(${s.identity.role})</span>`;
}

/** The name and version the identity's latest client gave, or a note until one has. */
export function clientOf(s: SessionSummary): SafeHtml {
  if (s.client === undefined) return html`<span class="muted">not initialized yet</span>`;
  return html`${s.client.name || "(no name)"} <span class="muted">${s.client.version}</span>`;
}

/** A time in UTC with how long ago or ahead it is, the exact instant in `datetime` and `title`. */
export function when(iso: string, now: number): SafeHtml {
  return html`<time datetime="${iso}" title="${iso}">${formatTime(iso)}</time><span class="summary">${relative(Date.parse(iso) - now)}</span>`;
}

/** -90 s -> "1 min ago", 3,600 s -> "in 1 h". */
function relative(ms: number): string {
  const seconds = Math.round(Math.abs(ms) / 1000);
  const text =
    seconds < 60
      ? `${seconds} s`
      : seconds < 3600
        ? `${Math.floor(seconds / 60)} min`
        : seconds < 86_400
          ? `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
          : `${Math.floor(seconds / 86_400)} d`;
  return ms < 0 ? `${text} ago` : ms === 0 ? "now" : `in ${text}`;
}

/** A store's bytes and entries, each against its limit (either may be the one that fills), or that it is off. */
export function storeCell(store: StoreUsage, id: string): SafeHtml {
  if (!store.enabled) return html`<span class="muted">disabled in cairn.toml</span>`;
  return html`${usage(store.bytes, store.max_total_bytes, "bytes", `${id}-bytes`)}${usage(store.entries, store.max_entries, "entries", `${id}-entries`)}`;
}

/**
 * A bar of `used` against `limit` that also says the numbers in words ("1.5 KiB of 64 MiB, under 1%"), and "nearly
 * full" from 90%: the state never rests on the bar's colour alone. `id` names the words the bar is labelled by.
 */
export function usage(used: number, limit: number, unit: "bytes" | "entries", id: string): SafeHtml {
  const share = limit === 0 ? 1 : used / limit;
  const percent = used === 0 ? "0%" : share < 0.01 ? "under 1%" : `${Math.floor(share * 100)}%`;
  const amount =
    unit === "bytes"
      ? `${formatBytes(used)} of ${formatBytes(limit)}`
      : `${formatCount(used)} of ${formatCount(limit)} entries`;
  return html`<span class="usage"><meter min="0" max="${limit}" value="${Math.min(used, limit)}" low="${Math.floor(limit * 0.75)}" high="${Math.floor(limit * 0.9)}" optimum="0" aria-labelledby="${id}"></meter> <span id="${id}">${amount}, ${percent}${share >= 0.9 ? " — nearly full" : ""}</span></span>`;
}

/** What `cairn ui` alone answers: it serves no MCP, so it has no sessions; where they are shown. */
export function notServedHere(): SafeHtml {
  return html`<h1>Identities</h1>
<p>This web view was started by <code>cairn ui</code>, which serves no MCP clients, so it has no identities with live requests or handles to show.</p>
<div class="next-step"><h2>Where identities are shown</h2>
<p>Identities, with their live requests, their handles and their stores' usage, are shown when the view is served by <code>cairn serve --transport http --ui</code>, beside the <code>/mcp</code> endpoint the clients use: open <code>/sessions</code> of that server.</p></div>`;
}
