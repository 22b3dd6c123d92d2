// The web view's changing actions, behind `--allow-changes` (decision 0234): deleting a name or one version, and
// approving (or revoking) an exact version for task gates. A confirmation page (GET) shows exactly what will happen
// and holds a form token; its form POSTs here, where the request must be same-origin, form-encoded, small, carry the
// token of this sign-in and target, and come from a role that may; then the operation runs through the operation
// table as the signed-in identity, and the browser is sent to a page saying what was done (POST-redirect-GET).
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { type Actor, type Role, roleAllows } from "../config/identity.js";
import { type CairnError, ErrorCode, toCairnError } from "../errors.js";
import { redactSecrets } from "../log.js";
import { html, type SafeHtml } from "../views/html.js";
import { isArtifactId } from "../workspace/catalog/catalog.js";
import { checkUiAccess, cookieValue, type UiAccessRules } from "./access.js";
import { type ActionTarget, FormTokens } from "./csrf.js";
import { errorPage, notFoundPage } from "./layout.js";
import { actionHref, artifactHref, noticeHref, workspaceHref } from "./links.js";
import type { UiReply } from "./route.js";
import type { UiHost } from "./ui-host.js";

/** Bytes a form may post: a form token, a ref and a version fit in well under 1 KiB. */
export const MAX_FORM_BYTES = 4096;
/** How long a result notice stays readable, and how many are kept. */
const NOTICE_TTL_MS = 30 * 60_000;
const MAX_NOTICES = 128;

/** The role each action needs (operations/roles.ts: delete is a write, approve is the approver's). */
export const ACTION_ROLES: Record<ActionTarget["action"], Role> = { delete: "writer", approve: "approver" };

/** What a page sees of the actions when they are allowed: who acts, their form tokens, their notices. */
export interface UiChanges {
  /** The signed-in token's identity, else the process's configured one. */
  readonly actor: Actor;
  /** Whether the actor's role may do `action`. */
  may(action: ActionTarget["action"]): boolean;
  /** The form token of exactly `target` for this sign-in. */
  formToken(target: ActionTarget): string;
  /** A notice an action of this sign-in left; undefined when unknown, expired or another sign-in's. */
  notice(id: string): Notice | undefined;
}

/** What an action did, for the page it redirects to. */
export interface Notice {
  title: string;
  message: string;
  links: { label: string; href: string }[];
}

/** A POST's answer: the reply, whether the view names the workspace on it, and headers to add. */
export interface ActionAnswer {
  reply: UiReply;
  signedIn: boolean;
  headers?: Record<string, string>;
}

/** The actions of one handler: its form-token key and the notices of its sign-ins. */
export class UiActions {
  private readonly forms = new FormTokens();
  private readonly notices = new Map<string, { signIn: string; expires: number; notice: Notice }>();

  constructor(
    private readonly host: UiHost,
    private readonly rules: UiAccessRules,
  ) {}

  /** The action a POST path names, if it names one. */
  actionOf(path: string): ActionTarget["action"] | undefined {
    if (path === actionHref("delete")) return "delete";
    if (path === actionHref("approve")) return "approve";
    return undefined;
  }

  /**
   * The Referrer-Policy of a page holding an action's form. Under the view's `no-referrer`, a browser sends
   * `Origin: null` with a form's POST (Fetch: serializing a request origin), which the Origin check refuses; the
   * confirmation pages say `same-origin` instead, so the POST carries this origin and no other site ever gets a
   * Referer (their URLs hold no secret either).
   */
  referrerPolicyOf(path: string): string | undefined {
    return path.startsWith("/confirm/") ? "same-origin" : undefined;
  }

  /** What pages see for the sign-in of token `index` (of the access rules' tokens). */
  changesFor(index: number): UiChanges {
    const signIn = this.signInOf(index);
    const actor = this.actorOf(index);
    return {
      actor,
      may: (action) => roleAllows(actor.role, ACTION_ROLES[action]),
      formToken: (target) => this.forms.issue(signIn, target),
      notice: (id) => {
        const stored = this.notices.get(id);
        if (stored === undefined || stored.signIn !== signIn || stored.expires < Date.now()) return undefined;
        return stored.notice;
      },
    };
  }

  /**
   * Answers a POST to an action path, after the handler's Host and Origin checks. In order: same-origin (Origin or
   * Sec-Fetch-Site, else a bearer header), a token, the content type, the size, the fields, the role, the form
   * token; then the operation. Nothing changes unless every check passes.
   */
  async post(req: IncomingMessage, url: URL, action: ActionTarget["action"]): Promise<ActionAnswer> {
    const cross = crossSiteRefusal(req);
    if (cross !== undefined) return { reply: refusedPage(cross), signedIn: false };
    const verdict = checkUiAccess({ headers: req.headers, url, localPort: req.socket.localPort ?? 0 }, this.rules);
    if (verdict.ok === false) {
      if (verdict.status === 403) return { reply: refusedPage(verdict.message), signedIn: false };
      return {
        reply: errorPage(401, "Sign in needed", verdict.message, signInNext()),
        signedIn: false,
        headers: { "WWW-Authenticate": 'Bearer realm="cairn"' },
      };
    }
    if (verdict.ok === "sign-in") {
      return {
        reply: errorPage(
          400,
          "Bad request",
          "A form is never signed in through its address: sign in first (GET), then confirm.",
          signInNext(),
        ),
        signedIn: false,
      };
    }
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") {
      return {
        reply: errorPage(
          415,
          "Unsupported form",
          `An action takes a form (Content-Type: application/x-www-form-urlencoded), not ${req.headers["content-type"] ?? "a body without a type"}.`,
          confirmAgain(),
        ),
        signedIn: true,
      };
    }
    const body = await readBody(req, MAX_FORM_BYTES);
    if (body === undefined) {
      return {
        reply: errorPage(413, "Form too large", `An action's form is at most ${MAX_FORM_BYTES} bytes.`, confirmAgain()),
        signedIn: true,
      };
    }
    const form = new URLSearchParams(body);
    const target = targetOf(action, form);
    if (typeof target === "string") {
      return { reply: errorPage(400, "Bad request", target, confirmAgain()), signedIn: true };
    }
    const actor = this.actorOf(verdict.token);
    // The role before the form token: a refusal for the role says only what the caller's own identity may do.
    if (!roleAllows(actor.role, ACTION_ROLES[action])) {
      return { reply: rolePage(action, actor), signedIn: true };
    }
    if (!this.forms.check(this.signInOf(verdict.token), target, form.get("csrf") ?? undefined)) {
      return {
        reply: refusedPage(
          "This form's token is missing, or not the one this sign-in was shown for this exact action: nothing was changed.",
          confirmAgain(),
        ),
        signedIn: true,
      };
    }
    try {
      const done = await this.host.perform(action, operationArgs(target), actor);
      const notice = noticeOf(target, done as Record<string, unknown>, actor);
      return { reply: { type: "redirect", location: noticeHref(this.keep(verdict.token, notice)) }, signedIn: true };
    } catch (error) {
      const failure = toCairnError(error);
      const page = failurePage(target, failure, actor);
      if (page === undefined) throw error;
      return { reply: page, signedIn: true };
    }
  }

  private signInOf(index: number): string {
    return cookieValue((this.rules.tokens[index] as { token: string }).token);
  }

  private actorOf(index: number): Actor {
    return this.rules.tokens[index]?.actor ?? this.host.actor;
  }

  /** Stores a notice for the sign-in of token `index`; its id. */
  private keep(index: number, notice: Notice): string {
    const now = Date.now();
    for (const [id, stored] of this.notices) {
      if (stored.expires < now || this.notices.size >= MAX_NOTICES) this.notices.delete(id);
    }
    const id = randomBytes(12).toString("base64url");
    this.notices.set(id, { signIn: this.signInOf(index), expires: now + NOTICE_TTL_MS, notice });
    return id;
  }
}

/**
 * A POST must come from this origin's own page. The handler already refused an Origin other than its own; here a
 * Sec-Fetch-Site other than same-origin is refused, and a request with neither header is accepted only with a bearer
 * header: browsers send Origin on every POST, and a bearer header is never sent by a forged cross-site form.
 */
export function crossSiteRefusal(req: Pick<IncomingMessage, "headers">): string | undefined {
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin") {
    return `Sec-Fetch-Site: ${site}: an action is taken only from this view's own confirmation page.`;
  }
  if (req.headers.origin === undefined && site === undefined && req.headers.authorization === undefined) {
    return "A form without Origin or Sec-Fetch-Site: an action is taken only from this view's own confirmation page (scripts send Authorization: Bearer).";
  }
  return undefined;
}

/**
 * The body, at most `limit` bytes; undefined past it. A body refused is left unread, not destroyed, so the answer
 * still goes out; the handler drops the rest with the connection.
 */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const stop = (value: string | undefined) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", reject);
      req.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limit) stop(undefined);
      else chunks.push(chunk);
    };
    const onEnd = () => stop(Buffer.concat(chunks).toString("utf8"));
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", reject);
  });
}

/** The target the form names, or what is wrong with it. */
function targetOf(action: ActionTarget["action"], form: URLSearchParams): ActionTarget | string {
  const ref = form.get("ref") ?? "";
  if (ref === "" || ref.length > 1000) return "The form names no artifact (ref).";
  if (action === "approve") {
    if (!isArtifactId(ref)) return "An approval names one exact version by its ws_ id.";
    return { action, ref, revoke: form.get("revoke") === "1" };
  }
  const expected = form.get("expected_version") ?? "";
  const version = /^[1-9]\d{0,15}$/.test(expected) ? Number(expected) : Number.NaN;
  if (!Number.isSafeInteger(version))
    return "A deletion names the version its confirmation page showed (expected_version).";
  return { action, ref, expected_version: version };
}

function operationArgs(target: ActionTarget): Record<string, unknown> {
  return target.action === "delete"
    ? { ref: target.ref, expected_version: target.expected_version }
    : { ref: target.ref, ...(target.revoke ? { revoke: true } : {}) };
}

/** The notice of a done action, from the operation's answer. */
function noticeOf(target: ActionTarget, done: Record<string, unknown>, actor: Actor): Notice {
  if (target.action === "delete") {
    const deleted = done.deleted as { artifact_id: string; name: string; version: number }[];
    const name = deleted[0]?.name ?? target.ref;
    const whole = !isArtifactId(target.ref);
    const versions = deleted.map((d) => `v${d.version}`).join(", ");
    const freed = Number(done.bytes_freed ?? 0);
    const parent = name.includes("/") ? name.slice(0, name.lastIndexOf("/")) : undefined;
    return {
      title: "Deleted",
      message: whole
        ? `Deleted ${name}: all ${deleted.length} version${deleted.length === 1 ? "" : "s"} (${versions}), as ${actor.name}; ${freed} bytes freed.`
        : `Deleted ${name} ${versions} (${target.ref}), as ${actor.name}; ${freed} bytes freed. The other versions stay.`,
      links: whole
        ? [
            ...(parent === undefined
              ? []
              : [{ label: `The namespace ${parent}`, href: workspaceHref({ ns: parent }) }]),
            { label: "The workspace", href: workspaceHref() },
          ]
        : [{ label: `${name}, its current version`, href: artifactHref(name) }],
    };
  }
  const at = `${done.artifact_id} (${done.name} v${done.version})`;
  return {
    title: target.revoke ? "Approvals revoked" : "Approved",
    message: target.revoke
      ? `Revoked ${Number(done.revoked ?? 0)} approval(s) of ${at}, as ${actor.name}: task steps gated on it wait again.`
      : `Approved ${at} for task gates, as ${actor.name}: a task step waiting on exactly this version runs at its next task_run.`,
    links: [
      { label: `${done.name} v${done.version}`, href: artifactHref(String(done.name), { v: Number(done.version) }) },
    ],
  };
}

/** The page of an operation's refusal with its next step; undefined for failures the handler reports (500). */
function failurePage(target: ActionTarget, failure: CairnError, actor: Actor): UiReply | undefined {
  const message = redactSecrets(`${failure.code}: ${failure.message}`);
  const back = html`<a href="${artifactPageOf(target, failure)}">Open it again</a>`;
  switch (failure.code) {
    case ErrorCode.VERSION_CONFLICT:
      return errorPage(
        409,
        "Changed since the confirmation page",
        message,
        html`<p>Nothing was deleted: a version was saved (or deleted) after the confirmation page was shown. ${back} to see what it holds now, and delete from there if you still mean to.</p>`,
      );
    case ErrorCode.PINNED: {
      const blockers = (failure.data?.blockers ?? []) as { name: string; version: number }[];
      return errorPage(
        409,
        "Pinned",
        message,
        html`<p>Nothing was deleted. Delete or prune what pins it first, or keep it:</p>
<ul>${blockers.map((b) => html`<li><a href="${artifactHref(b.name, { v: b.version })}">${b.name} v${b.version}</a></li>`)}</ul>`,
      );
    }
    case ErrorCode.NOT_ALLOWED:
      return rolePage(target.action, actor);
    case ErrorCode.NOT_FOUND:
      return notFoundPage(message);
    case ErrorCode.INVALID_ARGUMENT:
    case ErrorCode.INVALID_NAME:
      return errorPage(400, "Not done", message, html`<p>Nothing was changed. ${back}.</p>`);
    default:
      return undefined;
  }
}

function artifactPageOf(target: ActionTarget, failure: CairnError): string {
  const name = failure.data?.name;
  if (typeof name === "string") return artifactHref(name);
  return artifactHref(target.ref);
}

/** 403 for a role that may not: which role the action needs and which the identity has. */
export function rolePage(action: ActionTarget["action"], actor: Actor): UiReply {
  const need = ACTION_ROLES[action];
  const doing = action === "delete" ? "Deleting" : "Approving";
  return errorPage(
    403,
    "Not allowed",
    `${doing} needs the ${need} role; identity ${actor.name} is a ${actor.role}. Nothing was changed.`,
    html`<ul>
<li>Ask someone with the ${need} role to do it.</li>
<li>On <code>cairn serve --transport http --ui</code>, sign in with a token of <code>[[http.tokens]]</code> whose <code>role = "${need}"</code>.</li>
<li>On <code>cairn ui</code>, the view acts as the <code>[identity]</code> of cairn.toml: set its <code>role = "${need}"</code> if that is you.</li>
</ul>`,
  );
}

/** 404 for an action page of a view started without the flag. */
export function changesOffPage(): UiReply {
  return errorPage(
    404,
    "Read-only",
    "This web view was started read-only: it neither deletes nor approves.",
    html`<ul>
<li>To change the workspace here, restart it with <code>cairn ui --allow-changes</code> (or <code>cairn serve --transport http --ui --ui-allow-changes</code>).</li>
<li>Or use the command line: <code>cairn delete</code>, <code>cairn approve</code>.</li>
</ul>`,
  );
}

function refusedPage(message: string, next?: SafeHtml): UiReply {
  return errorPage(
    403,
    "Refused",
    message,
    next ??
      html`<p>Open the artifact's page in this view, choose the action there and confirm it on the page that follows.</p>`,
  );
}

function confirmAgain(): SafeHtml {
  return html`<p>Nothing was changed. Go back to <a href="${workspaceHref()}">the workspace</a>, open the artifact, and choose the action again: its confirmation page holds a fresh form.</p>`;
}

function signInNext(): SafeHtml {
  return html`<p>Open the address <code>cairn ui</code> printed (it ends in <code>/?token=…</code>) to sign this browser in, then choose the action again. Scripts send <code>Authorization: Bearer &lt;token&gt;</code>.</p>`;
}
