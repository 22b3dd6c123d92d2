// The web view as one request handler, for `cairn ui`'s own server and for `cairn serve --transport http --ui`
// beside /mcp: security headers on every answer, Host and Origin, GET and HEAD only (with `allowChanges`, also the
// POSTs of actions.ts), the stylesheet and scripts (the chart's as built), the token (bearer, cookie, or the sign-in
// URL), then the page.
import { createReadStream } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { HttpToken } from "../http-guards/http-guards.js";
import { redactSecrets } from "../log.js";
import { html } from "../views/html.js";
import { checkUiAccess, checkUiOrigin } from "./access.js";
import { UiActions, type UiChanges } from "./actions.js";
import { FAVICON, SCRIPT, STYLESHEET } from "./assets.js";
import { builtAsset, isBuiltAsset } from "./built-assets.js";
import { errorPage, FAVICON_PATH, notFoundPage, renderDocument, SCRIPT_PATH, STYLESHEET_PATH } from "./layout.js";
import { workspaceHref } from "./links.js";
import type { UiReader, UiReply, UiRequest, UiRoute } from "./route.js";
import { ROUTES } from "./routes.js";
import type { UiHost } from "./ui-host.js";

export interface UiHandlerOptions {
  /** The tokens that open the view; at least one. */
  tokens: readonly HttpToken[];
  /** Accept any Host header (`serve --allow-remote`); the token is then the only gate. @default false */
  allowRemote?: boolean;
  /** Let the view delete and approve, each confirmed (actions.ts, decision 0234). @default false */
  allowChanges?: boolean;
  /** The pages. @default ROUTES */
  routes?: readonly UiRoute[];
}

/** Answers one request; never rejects (a failure becomes a 500 page, logged). */
export type UiHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Only this origin's stylesheet, script, images and forms; no frames, no plugins, no <base>. */
const PAGE_POLICY =
  "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";
/** A downloaded file runs nothing, even opened in a tab from this origin. */
const FILE_POLICY = "default-src 'none'; sandbox; frame-ancestors 'none'";
/** Failures caused by what the request asked (a 400 page, not logged); TOO_LARGE is a find text past its bound. */
const CLIENT_ERRORS: ReadonlySet<string> = new Set([
  ErrorCode.INVALID_NAME,
  ErrorCode.INVALID_ARGUMENT,
  ErrorCode.TOO_LARGE,
]);
const ASSETS: Record<string, { type: string; body: string }> = {
  [STYLESHEET_PATH]: { type: "text/css; charset=utf-8", body: STYLESHEET },
  [SCRIPT_PATH]: { type: "text/javascript; charset=utf-8", body: SCRIPT },
  [FAVICON_PATH]: { type: "image/svg+xml", body: FAVICON },
};

/** The web view's handler. Throws INVALID_ARGUMENT without a token. */
export function createUiHandler(host: UiHost, options: UiHandlerOptions): UiHandler {
  if (options.tokens.length === 0 || options.tokens.some((t) => t.token.trim() === "")) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "the web view needs a non-empty token");
  }
  const rules = { tokens: options.tokens, allowRemote: options.allowRemote ?? false };
  const routes = options.routes ?? ROUTES;
  const nav = routes.flatMap((r) => (r.nav === undefined ? [] : [r.nav]));
  const logger = host.logger;
  const actions = options.allowChanges === true ? new UiActions(host, rules) : undefined;

  const send = (res: ServerResponse, path: string, reply: UiReply, signedIn: boolean): void => {
    if (reply.type === "redirect") {
      res.statusCode = 303;
      res.setHeader("Location", reply.location);
      res.end();
      return;
    }
    if (reply.type === "file") {
      sendFile(res, reply);
      return;
    }
    res.statusCode = reply.status ?? 200;
    res.setHeader("Content-Type", "text/html; charset=utf-8");
    res.end(
      renderDocument({
        title: reply.title,
        body: reply.body,
        // Before the token is checked, a page names no workspace and links nowhere but the sign-in help.
        workspaceName: signedIn ? host.workspaceName : undefined,
        nav: signedIn ? nav : [],
        path,
        changesAllowed: signedIn && actions !== undefined,
      }),
    );
  };

  return async (req, res) => {
    for (const [name, value] of Object.entries(securityHeaders())) res.setHeader(name, value);
    const url = requestUrl(req);
    const path = url?.pathname ?? "/";
    try {
      if (url === undefined) {
        return send(
          res,
          path,
          errorPage(
            400,
            "Bad request",
            "The request's path cannot be read.",
            html`<p><a href="${workspaceHref()}">Go to the workspace</a>.</p>`,
          ),
          false,
        );
      }
      const refused = checkUiOrigin(req.headers, rules);
      if (refused !== undefined) return send(res, path, forbiddenPage(refused.message), false);
      const action = req.method === "POST" ? actions?.actionOf(path) : undefined;
      if (actions !== undefined && action !== undefined) {
        const answered = await actions.post(req, url, action);
        // A body refused unread (type, size) is dropped as it comes, with the connection.
        if (!req.complete) {
          req.resume();
          res.setHeader("Connection", "close");
        }
        for (const [name, value] of Object.entries(answered.headers ?? {})) res.setHeader(name, value);
        return send(res, path, answered.reply, answered.signedIn);
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        // The body is never read: drop it as it comes, and the connection after the answer.
        req.resume();
        res.setHeader("Connection", "close");
        res.setHeader("Allow", "GET, HEAD");
        return send(res, path, readOnlyPage(req.method ?? "?"), false);
      }
      const built = isBuiltAsset(path);
      const asset = built ? await builtAsset(path) : ASSETS[path];
      if (built && asset === undefined) {
        return send(res, path, notFoundPage(`${path} was not built: run npm run build.`), false);
      }
      if (asset !== undefined) {
        res.setHeader("Content-Type", asset.type);
        res.setHeader("Cache-Control", "no-cache");
        res.end(asset.body);
        return;
      }
      const verdict = checkUiAccess({ headers: req.headers, url, localPort: req.socket.localPort ?? 0 }, rules);
      if (verdict.ok === false) {
        if (verdict.status === 403) return send(res, path, forbiddenPage(verdict.message), false);
        res.setHeader("WWW-Authenticate", 'Bearer realm="cairn"');
        return send(res, path, signInPage(verdict.message), false);
      }
      if (verdict.ok === "sign-in") {
        res.setHeader("Set-Cookie", verdict.cookie);
        return send(res, path, { type: "redirect", location: verdict.location }, false);
      }
      const referrerPolicy = actions?.referrerPolicyOf(path);
      if (referrerPolicy !== undefined) res.setHeader("Referrer-Policy", referrerPolicy);
      const reader = { actor: rules.tokens[verdict.token]?.actor };
      send(res, path, await answer(routes, host, url, reader, actions?.changesFor(verdict.token)), true);
    } catch (error) {
      const failure = toCairnError(error);
      // Only a 500 is Cairn's failure to log; a 404 or 400 is the request's (a cursor not ours, a search too long).
      if (!CLIENT_ERRORS.has(failure.code) && failure.code !== ErrorCode.NOT_FOUND) {
        logger.error("web view request failed", { path, error: String((error as Error)?.stack ?? error) });
      }
      if (res.headersSent) {
        res.destroy();
        return;
      }
      send(res, path, failurePage(failure), true);
    }
  };
}

/** The reply of the first route whose pattern matches the path; the 404 page when none does. */
async function answer(
  routes: readonly UiRoute[],
  host: UiHost,
  url: URL,
  reader: UiReader,
  changes: UiChanges | undefined,
): Promise<UiReply> {
  for (const route of routes) {
    const match = route.path.exec(url.pathname);
    if (match === null) continue;
    const request: UiRequest = {
      url,
      params: { ...match.groups },
      host,
      reader,
      changes,
      query: (name) => {
        const value = url.searchParams.get(name);
        return value === null || value === "" ? undefined : value;
      },
    };
    return route.handle(request);
  }
  return notFoundPage(`This web view has no page at ${url.pathname}.`);
}

/** Sent with every answer: the CSP, no framing, no referrer, no sniffing, nothing cached, no cross-origin reads. */
function securityHeaders(): Record<string, string> {
  return {
    "Content-Security-Policy": PAGE_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
  };
}

/** The request's URL, its path as sent (`//x` stays a path); undefined for a target that is not a path. */
function requestUrl(req: IncomingMessage): URL | undefined {
  const target = req.url ?? "/";
  if (!target.startsWith("/")) return undefined;
  try {
    return new URL(`http://view.invalid${target}`);
  } catch {
    return undefined;
  }
}

function sendFile(res: ServerResponse, file: Extract<UiReply, { type: "file" }>): void {
  res.statusCode = 200;
  res.setHeader("Content-Security-Policy", FILE_POLICY);
  res.setHeader("Content-Type", file.mediaType);
  res.setHeader("Content-Length", String(file.bytes));
  res.setHeader("Content-Disposition", contentDisposition(file.inline ? "inline" : "attachment", file.filename));
  if (res.req.method === "HEAD") {
    res.end();
    return;
  }
  const stream = createReadStream(file.path);
  stream.once("error", () => res.destroy());
  stream.pipe(res);
}

/** RFC 6266: an ASCII fallback name (quotes and anything unusual replaced) and the exact name as UTF-8. */
export function contentDisposition(kind: "inline" | "attachment", filename: string): string {
  const fallback = filename.replace(/[^A-Za-z0-9._-]/g, "_") || "download";
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

function signInPage(message: string): UiReply {
  return errorPage(
    401,
    "Sign in needed",
    message,
    html`<ul>
<li>Open the address <code>cairn ui</code> printed when it started. It ends in <code>/?token=…</code>: visiting it once signs this browser in with a cookie (HttpOnly, SameSite=Strict) and takes the token out of the address.</li>
<li>Started with <code>$CAIRN_TOKEN</code> set? Open <code>/?token=</code> followed by its value.</li>
<li>Without <code>$CAIRN_TOKEN</code>, every start makes a new token: after a restart, use the new address.</li>
<li>Scripts send the header <code>Authorization: Bearer &lt;token&gt;</code> instead.</li>
</ul>`,
  );
}

function forbiddenPage(message: string): UiReply {
  return errorPage(
    403,
    "Refused",
    message,
    html`<p>The web view answers only requests addressed to a loopback name (127.0.0.1, localhost, [::1]) from its own pages. Open it from the address <code>cairn ui</code> printed, not through another site or name.</p>`,
  );
}

function readOnlyPage(method: string): UiReply {
  return errorPage(
    405,
    "Read-only",
    `The web view only shows the workspace: it answers GET and HEAD, never ${method}.`,
    html`<p>Change the workspace from the command line (<code>cairn save</code>, <code>cairn import</code>, <code>cairn delete</code>) or through an MCP client.</p>`,
  );
}

function failurePage(failure: CairnError): UiReply {
  const message = redactSecrets(`${failure.code}: ${failure.message}`);
  if (failure.code === ErrorCode.NOT_FOUND) return notFoundPage(message);
  if (CLIENT_ERRORS.has(failure.code)) {
    return errorPage(
      400,
      "Bad request",
      message,
      html`<p>Go back to <a href="${workspaceHref()}">the workspace</a> and follow its links, which are always well formed.</p>`,
    );
  }
  return errorPage(
    500,
    "Something went wrong",
    message,
    html`<ul>
<li>Reload the page: a busy engine or a timeout may pass.</li>
<li>If it fails again, the terminal running Cairn has the error logged; <code>CAIRN_LOG=debug</code> shows more.</li>
<li>Meanwhile, <a href="${workspaceHref()}">the workspace page</a> and the CLI (<code>cairn inspect</code>, <code>cairn query</code>) still work.</li>
</ul>`,
  );
}
