/// <reference lib="dom" />
// The approval of one held upstream call inside the host (decision 0313): drawn from an APPROVAL_REQUIRED reply, it
// reads the exact call with `approve {approval, preview: true}` (nothing spent), then Approve and Decline call
// `approve` through the host. The server alone keeps the one-time rule; the app shows what it answers, a second
// click's APPROVAL_USED included. Used by the approval app and by the table app, whose execute_code replies hold it.
import { html } from "../views/html.js";
import type { AppChannel, ToolResult } from "./app-channel.js";
import { replyError, replyJson } from "./app-frame.js";

/** What an APPROVAL_REQUIRED error's `data` holds (upstream/approval-gate.ts). */
export interface ApprovalRequest {
  approval: string;
  server: string;
  tool: string;
  digest: string;
  expires_at: string;
  reason?: string;
  /** The error's own words: what the model was told to do. */
  message: string;
}

/** A reply's APPROVAL_REQUIRED error with its handle (an execute_code value or a direct tool's), or undefined. */
export function approvalRequest(result: ToolResult): ApprovalRequest | undefined {
  const error = (replyJson(result) as { error?: { code?: unknown; message?: unknown; data?: unknown } } | undefined)
    ?.error;
  const data = error?.data as Partial<ApprovalRequest> | undefined;
  if (error?.code !== "APPROVAL_REQUIRED" || typeof data?.approval !== "string") return undefined;
  if (typeof data.server !== "string" || typeof data.tool !== "string") return undefined;
  return {
    approval: data.approval,
    server: data.server,
    tool: data.tool,
    digest: String(data.digest ?? ""),
    expires_at: String(data.expires_at ?? ""),
    ...(typeof data.reason === "string" ? { reason: data.reason } : {}),
    message: String(error.message ?? ""),
  };
}

/** The preview `approve {approval, preview: true}` answers. */
interface Preview {
  approval_id: string;
  server: string;
  tool: string;
  digest: string;
  requested_by: string;
  expires_at: string;
  arguments: unknown;
}

/** Characters of a reply's JSON shown; the rest is said, not drawn. */
const SHOWN_CHARS = 4000;

/** What to do next after each refusal, in the person's words. */
const NEXT: Record<string, string> = {
  APPROVAL_USED: "This handle was already approved or declined: it decides its call once. Nothing more was called.",
  APPROVAL_EXPIRED: "The handle expired: ask the agent to run the snippet again for a new one.",
  APPROVAL_INVALID: "The server holds no such approval: ask the agent to run the snippet again for a new one.",
  NOT_ALLOWED:
    "This host's identity may not approve: a person with the approver role approves it (cairn approve --approval HANDLE).",
  TOOL_NOT_ENABLED: "This server lists no approve tool to this host: approve it from the command line.",
};

function pretty(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value, null, 2) ?? "null");
  return text.length > SHOWN_CHARS
    ? `${text.slice(0, SHOWN_CHARS)}\n… (${(text.length - SHOWN_CHARS).toLocaleString("en-US")} more characters not shown)`
    : text;
}

function time(iso: string): string {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : `${new Date(at).toISOString().replace("T", " ").slice(0, 19)} UTC`;
}

export class ApprovalPanel {
  private request: ApprovalRequest | undefined;
  private busy = false;

  constructor(
    private readonly root: HTMLElement,
    private readonly channel: AppChannel,
    /** Tells the host the new height (after every drawing). */
    private readonly drawn: () => void,
  ) {}

  /** Draws what the error says, then reads the exact call (a preview: nothing is spent). */
  async show(request: ApprovalRequest): Promise<void> {
    this.request = request;
    const call = `${request.server}.${request.tool}`;
    this.root.innerHTML = html`<h1>Approve a call to ${call}?</h1>
<p>The agent's call waits for a person${request.reason === undefined ? "" : html` (approval asked because of ${request.reason})`}: nothing was called yet.</p>
<dl class="facts"><dt>Server</dt><dd>${request.server}</dd><dt>Tool</dt><dd>${request.tool}</dd><dt>Asked by</dt><dd id="requested-by">…</dd><dt>Expires</dt><dd>${time(request.expires_at)}</dd><dt>Digest</dt><dd><code class="digest">sha256:${request.digest}</code></dd></dl>
<div id="call"><p class="muted">Reading the exact call from the server…</p></div>
<p id="status" class="muted" role="status" aria-live="polite"></p>`.toString();
    this.drawn();
    let result: ToolResult;
    try {
      result = await this.channel.callServerTool("approve", { approval: request.approval, preview: true });
    } catch (error) {
      this.refused({ code: "HOST", message: (error as Error).message }, "The host did not pass the call on.");
      return;
    }
    const error = replyError(result);
    const preview = replyJson(result) as Preview | undefined;
    if (error !== undefined || typeof preview?.approval_id !== "string") {
      this.refused(error ?? { code: "ERROR", message: "the preview holds no call" });
      return;
    }
    this.previewed(preview);
  }

  private previewed(preview: Preview): void {
    const by = document.getElementById("requested-by");
    if (by) by.textContent = preview.requested_by;
    const target = document.getElementById("call") as HTMLElement;
    target.innerHTML = html`<h2 id="args-heading">Arguments, exactly as they will be sent</h2>
<pre class="args" tabindex="0" role="region" aria-labelledby="args-heading">${pretty(preview.arguments)}</pre>
<p class="muted">The server decrypted this call and checked that it hashes to the digest above; this view recomputed nothing. Registered secrets show as [redacted].</p>
<div class="actions"><button type="button" data-answer="approve">Approve and call once</button><button type="button" data-answer="decline">Decline</button></div>
<div id="outcome" role="status" aria-live="polite"></div>`.toString();
    for (const button of target.querySelectorAll<HTMLButtonElement>("button[data-answer]")) {
      button.addEventListener("click", () => void this.answer(button.dataset.answer === "decline"));
    }
    this.drawn();
  }

  /** Approve or decline through the host; the server's answer is the outcome, a refusal too. */
  private async answer(decline: boolean): Promise<void> {
    const request = this.request;
    if (request === undefined || this.busy) return;
    this.busy = true;
    this.outcome(html`<p class="muted">Asking the server…</p>`);
    try {
      const result = await this.channel.callServerTool("approve", {
        approval: request.approval,
        ...(decline ? { decline: true } : {}),
      });
      const error = replyError(result);
      const reply = replyJson(result) as { result?: unknown } | undefined;
      const call = `${request.server}.${request.tool}`;
      if (error !== undefined) {
        this.outcome(
          html`<div class="callout" role="alert"><p><strong>${error.code}</strong>: ${NEXT[error.code] ?? "the server refused it."}</p><p class="muted">${error.message}</p></div>`,
        );
      } else if (decline) {
        this.outcome(
          html`<p><strong>Declined.</strong> ${call} was not called, and the handle is spent: approving it now is refused.</p>`,
        );
      } else {
        this.outcome(html`<p><strong>Approved.</strong> ${call} was called once. Its result:</p>
<pre class="args" tabindex="0" role="region" aria-label="The call's result">${pretty(reply?.result)}</pre>`);
      }
    } catch (error) {
      this.outcome(html`<p>The host did not answer: ${(error as Error).message}</p>`);
    } finally {
      this.busy = false;
    }
  }

  private outcome(markup: { toString(): string }): void {
    const target = document.getElementById("outcome");
    if (target) target.innerHTML = markup.toString();
    this.drawn();
  }

  /** The preview was refused: say why and what to do; no buttons, since approving would be refused alike. */
  private refused(error: { code: string; message: string }, why?: string): void {
    const target = document.getElementById("call") as HTMLElement;
    const by = document.getElementById("requested-by");
    if (by) by.textContent = "not known (the call could not be read)";
    target.innerHTML =
      html`<div class="callout" role="alert"><p><strong>${error.code}</strong>: ${why ?? NEXT[error.code] ?? "the server did not show the call."}</p><p class="muted">${error.message}</p></div>`.toString();
    this.drawn();
  }
}
