// The checks every HTTP request passes before Cairn routes it or reads a byte of its body: a loopback Host (against
// DNS rebinding), a loopback Origin when one is sent, and a bearer token, which says who calls. Pure: they return a
// verdict, never throw. Neutral ground: the MCP transport and the web view both compose them, neither owns them.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Actor } from "../config/identity.js";
import { isLoopbackHost } from "./loopback.js";

/** A bearer token and who presents it; no actor: the process's configured identity ($CAIRN_TOKEN). */
export interface HttpToken {
  token: string;
  actor?: Actor | undefined;
}

/**
 * What a refused request is answered (the status, a message that never echoes a token, extra headers), or for an
 * accepted one the token it presented (its index in `tokens`).
 */
type AccessVerdict =
  | { ok: true; token: number }
  | { ok: false; status: 401 | 403; message: string; headers?: Record<string, string> };

export interface AccessRules {
  /** The bearer tokens a request may carry, each mapped to an identity. */
  tokens: readonly HttpToken[];
  /** Accept any Host header (the token is then the only gate). */
  allowRemote: boolean;
}

/** Checks Host (unless `allowRemote`), then Origin, then Authorization; the first refusal is the verdict. */
export function checkAccess(headers: IncomingHttpHeaders, rules: AccessRules): AccessVerdict {
  const refused = checkHostAndOrigin(headers, rules);
  if (refused !== undefined) return refused;
  const presented = checkAuthorization(headers.authorization, rules.tokens);
  if (typeof presented === "string") {
    return { ok: false, status: 401, message: presented, headers: { "WWW-Authenticate": 'Bearer realm="cairn"' } };
  }
  return { ok: true, token: presented };
}

/**
 * The checks that come before any credential: a loopback Host (unless `allowRemote`), and a loopback Origin when
 * one is sent. The refusal, or undefined when both pass.
 */
export function checkHostAndOrigin(
  headers: IncomingHttpHeaders,
  rules: Pick<AccessRules, "allowRemote">,
): { ok: false; status: 403; message: string } | undefined {
  if (!rules.allowRemote) {
    const hostname = hostnameOf(headers.host);
    if (hostname === undefined || !isLoopbackHost(hostname)) {
      // DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends Host: evil.example.
      return { ok: false, status: 403, message: `Invalid Host header: ${headers.host ?? "(missing)"}` };
    }
  }
  const origin = headers.origin;
  if (origin !== undefined && !isLoopbackOrigin(origin)) {
    return { ok: false, status: 403, message: `Forbidden Origin: ${origin} (Cairn accepts only loopback origins)` };
  }
  return undefined;
}

/** The index in `tokens` of the one `presented` equals, else -1; every token is compared, whatever matches. */
export function tokenIndex(presented: string, tokens: readonly HttpToken[]): number {
  let found = -1;
  tokens.forEach((entry, i) => {
    if (tokenMatches(presented, entry.token) && found < 0) found = i;
  });
  return found;
}

/** True for an Origin of http(s) on a loopback name, any port. `null` and other schemes are not loopback. */
function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHost(url.hostname);
}

/**
 * The index of the token the header presents, else the 401 message (which never echoes the presented token). Every
 * token is compared, so the time taken says nothing about which one (if any) matched.
 */
export function checkAuthorization(header: string | undefined, tokens: readonly HttpToken[]): number | string {
  if (header === undefined) return "Unauthorized: send Authorization: Bearer <the value of $CAIRN_TOKEN>";
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) return "Unauthorized: the Authorization header must be Bearer <token>";
  const found = tokenIndex(match[1] as string, tokens);
  return found >= 0 ? found : "Unauthorized: wrong bearer token";
}

/**
 * Compares a presented token with the expected one in time independent of both: SHA-256 first, so that a token of
 * another length takes the same path as a wrong one of the right length.
 */
export function tokenMatches(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

function hostnameOf(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return undefined;
  }
}
