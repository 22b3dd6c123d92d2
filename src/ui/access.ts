// Who may see the web view: the HTTP transport's Host and Origin checks, an Origin equal to the server's own, then a
// token as a bearer header, or as the cookie that visiting `/?token=…` sets (HttpOnly, SameSite=Strict). Pure: a
// verdict, never a throw. The cookie holds an HMAC of the token, never the token itself.
import { createHmac } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import {
  checkAuthorization,
  checkHostAndOrigin,
  type HttpToken,
  tokenIndex,
  tokenMatches,
} from "../http-guards/http-guards.js";

export interface UiAccessRules {
  /** The tokens that open the view (any of them: every identity may look; what it may change, its role decides). */
  tokens: readonly HttpToken[];
  /** Accept any Host header, as `serve --allow-remote` does; the token is then the only gate. */
  allowRemote: boolean;
}

/** What a request carries that the gate looks at. */
export interface UiCredentials {
  headers: IncomingHttpHeaders;
  /** The request's URL, parsed against its own Host. */
  url: URL;
  /** The port the request arrived on: part of the cookie's name, so views on two ports keep their own cookies. */
  localPort: number;
}

export type UiAccessVerdict =
  /** `token`: the index in `tokens` of the one presented (its identity acts, when changes are allowed). */
  | { ok: true; token: number }
  /** The URL carried a valid token: set the cookie and send the browser to the same URL without it. */
  | { ok: "sign-in"; cookie: string; location: string }
  | { ok: false; status: 401 | 403; message: string };

/**
 * The checks before any credential: a loopback Host (unless `allowRemote`), and an Origin, when sent, that is
 * loopback and this server's own. The refusal, or undefined.
 */
export function checkUiOrigin(
  headers: IncomingHttpHeaders,
  rules: Pick<UiAccessRules, "allowRemote">,
): { ok: false; status: 403; message: string } | undefined {
  const refused = checkHostAndOrigin(headers, rules);
  if (refused !== undefined) return refused;
  const origin = headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${headers.host ?? ""}`.toLowerCase()) {
    return {
      ok: false,
      status: 403,
      message: `Forbidden Origin: ${origin} is not this server's own origin (http://${headers.host ?? ""}); the web view answers only its own pages`,
    };
  }
  return undefined;
}

/** Host and Origin (checkUiOrigin), then the token in the URL, the bearer header or the cookie; the first refusal wins. */
export function checkUiAccess(request: UiCredentials, rules: UiAccessRules): UiAccessVerdict {
  const { headers, url } = request;
  const refused = checkUiOrigin(headers, rules);
  if (refused !== undefined) return refused;
  const urlToken = url.searchParams.get("token");
  if (urlToken !== null) {
    if (tokenIndex(urlToken, rules.tokens) < 0) {
      return {
        ok: false,
        status: 401,
        message: "The token in this URL is not the one this server accepts (it may have been restarted since).",
      };
    }
    const rest = new URLSearchParams(url.searchParams);
    rest.delete("token");
    const query = rest.toString();
    return {
      ok: "sign-in",
      cookie: `${cookieName(request.localPort)}=${cookieValue(urlToken)}; Path=/; HttpOnly; SameSite=Strict`,
      location: `${safePath(url.pathname)}${query === "" ? "" : `?${query}`}`,
    };
  }
  if (headers.authorization !== undefined) {
    const presented = checkAuthorization(headers.authorization, rules.tokens);
    return typeof presented === "string"
      ? { ok: false, status: 401, message: presented }
      : { ok: true, token: presented };
  }
  const cookie = cookieOf(headers.cookie, cookieName(request.localPort));
  if (cookie === undefined) {
    return { ok: false, status: 401, message: "This browser is not signed in to this Cairn web view." };
  }
  // Every token is compared, so the time taken says nothing about which one matched.
  const matches = rules.tokens.map((t) => tokenMatches(cookie, cookieValue(t.token)));
  const token = matches.indexOf(true);
  if (token < 0) {
    return {
      ok: false,
      status: 401,
      message: "This browser's sign-in is for another token: the server was restarted with a new one.",
    };
  }
  return { ok: true, token };
}

/** The cookie of the view on `port`: cookies are shared by every port of a host, so the port is in the name. */
export function cookieName(port: number): string {
  return `cairn_ui_${port}`;
}

/** What the cookie holds for a token: an HMAC keyed by the token, so neither the cookie nor a log line shows it. */
export function cookieValue(token: string): string {
  return createHmac("sha256", token).update("cairn web view sign-in v1").digest("base64url");
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A path that stays on this server when used as a Location: `//host` and `/\host` would leave it. */
function safePath(path: string): string {
  return /^\/[/\\]/.test(path) ? "/" : path;
}
