// What Cairn requires of an upstream's authorization server before it sends it anything (decision 0253): every
// endpoint https (plain http only on this machine), metadata that names the issuer it was fetched for (RFC 8414
// §3.3), and an authorization response whose `iss` is that issuer (RFC 9207). Pure guards returning {ok}, so the
// rules do not depend on the SDK that drives the flow; `refusal` turns a failed one into Cairn's error.
import { CairnError, ErrorCode } from "../errors.js";

/** The result of a guard: `reason` completes "… of server X: <reason>" and says what was refused. */
export type Guard = { ok: true } | { ok: false; reason: string };

const OK: Guard = { ok: true };
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1"]);

/** The rule every authorization-server address is held to, as the messages state it. */
export const ENDPOINT_RULE =
  "an authorization server's endpoints are https (plain http only on 127.0.0.1, localhost or ::1)";

/**
 * Why `url` must not be sent anything, or undefined: https anywhere, http only to this machine. The same rule holds
 * for the sign-in address the browser is sent to, where another scheme (file:, smb:, a custom one) would also hand
 * the address to whatever program the system's opener picks.
 */
export function unsafeAddress(url: URL): string | undefined {
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:") {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    return LOOPBACK_HOSTS.has(host) ? undefined : "plain http to another machine";
  }
  return `a ${url.protocol.replace(/:$/, "")}: address, not https`;
}

/** `url` without userinfo, query or fragment: what a message may show of an address. */
export function shownAddress(url: URL | string): string {
  try {
    const parsed = new URL(String(url));
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return "an address that is not a URL";
  }
}

/** `url`, named `what` ("its token endpoint"), held to ENDPOINT_RULE. */
export function checkEndpoint(what: string, url: URL | string): Guard {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    return { ok: false, reason: `${what} is not a URL, so nothing was sent to it` };
  }
  const unsafe = unsafeAddress(parsed);
  if (unsafe === undefined) return OK;
  return {
    ok: false,
    reason: `${what} ${shownAddress(parsed)} is ${unsafe}, so nothing was sent to it: ${ENDPOINT_RULE}`,
  };
}

/** Compares issuer identifiers as the SDK does: parsed when both are URLs, one trailing "/" tolerated. */
export function sameIssuer(a: string, b: string): boolean {
  let [x, y] = [a, b];
  try {
    [x, y] = [new URL(a).href, new URL(b).href];
  } catch {
    // Not two URLs: compared as written.
  }
  return x === y || x.replace(/\/$/, "") === y.replace(/\/$/, "");
}

/**
 * RFC 8414 §3.3 (and OpenID Discovery §4.3): the metadata's `issuer` is the issuer it was fetched for. One tolerance:
 * an issuer that is a leading part of it on the same origin (`https://auth.example` for metadata fetched for
 * `https://auth.example/tenant1`), a layout of multi-tenant servers that the MCP conformance suite's own
 * `auth/metadata-var2` and `-var3` serve. Another origin, or another path, is refused.
 */
export function checkIssuer(fetchedFor: string, issuer: unknown): Guard {
  if (typeof issuer === "string" && (sameIssuer(issuer, fetchedFor) || leadingPart(issuer, fetchedFor))) return OK;
  const named = typeof issuer === "string" ? `names the issuer ${shownAddress(issuer)}` : "names no issuer";
  return {
    ok: false,
    reason:
      `the metadata of the authorization server ${shownAddress(fetchedFor)} ${named}, so it was not used ` +
      "(RFC 8414 §3.3: a server answering for another is a mix-up attack)",
  };
}

/** True when `issuer` is `url`'s origin or a leading run of its path segments. */
function leadingPart(issuer: string, url: string): boolean {
  if (!URL.canParse(issuer) || !URL.canParse(url)) return false;
  const [a, b] = [new URL(issuer), new URL(url)];
  if (a.origin !== b.origin || a.search !== "" || a.hash !== "") return false;
  const prefix = a.pathname.replace(/\/$/, "");
  return prefix === "" || b.pathname === prefix || b.pathname.startsWith(`${prefix}/`);
}

/** The parts of the SDK's discovery state the guards read (kept structural, so another SDK's state fits). */
export interface DiscoveredServer {
  authorizationServerUrl: string;
  resourceMetadata?: { authorization_servers?: readonly string[] | undefined } | undefined;
  authorizationServerMetadata?: Readonly<Record<string, unknown>> | undefined;
}

/** Metadata fields that name an endpoint Cairn may send to, with the words its messages use. */
const ENDPOINT_FIELDS: readonly [string, string][] = [
  ["authorization_endpoint", "its authorization endpoint"],
  ["token_endpoint", "its token endpoint"],
  ["registration_endpoint", "its registration endpoint"],
  ["revocation_endpoint", "its revocation endpoint"],
];

/**
 * Everything discovery found, before anything is sent to it: each authorization server the resource metadata lists,
 * the one chosen, each endpoint its metadata names, and the metadata's issuer.
 */
export function checkDiscovery(state: DiscoveredServer): Guard {
  const listed = state.resourceMetadata?.authorization_servers ?? [];
  for (const server of listed) {
    const guard = checkEndpoint("the resource metadata lists the authorization server", server);
    if (!guard.ok) return guard;
  }
  const chosen = checkEndpoint("the authorization server", state.authorizationServerUrl);
  if (!chosen.ok) return chosen;
  const metadata = state.authorizationServerMetadata;
  if (metadata === undefined) return OK;
  const issuer = checkIssuer(state.authorizationServerUrl, metadata.issuer);
  if (!issuer.ok) return issuer;
  for (const [field, what] of ENDPOINT_FIELDS) {
    const value = metadata[field];
    if (value === undefined) continue;
    if (typeof value !== "string") return { ok: false, reason: `${what} (${field}) is not a URL` };
    const guard = checkEndpoint(what, value);
    if (!guard.ok) return guard;
  }
  return OK;
}

/** The issuer an authorization response must name: the metadata's, else the URL discovery used. */
export function recordedIssuer(state: DiscoveredServer): string {
  const issuer = state.authorizationServerMetadata?.issuer;
  return typeof issuer === "string" ? issuer : state.authorizationServerUrl;
}

/**
 * RFC 9207: a present `iss` must equal the recorded issuer (simple string comparison, §2.4); a missing one is refused
 * when the metadata says `authorization_response_iss_parameter_supported`. Checked before the code is redeemed.
 */
export function checkResponseIssuer(iss: string | undefined, state: DiscoveredServer): Guard {
  const expected = recordedIssuer(state);
  if (iss === undefined) {
    if (state.authorizationServerMetadata?.authorization_response_iss_parameter_supported === true) {
      return {
        ok: false,
        reason:
          `the authorization response carried no iss, though the authorization server ${shownAddress(expected)} ` +
          "says it sends one (RFC 9207), so its code was not redeemed",
      };
    }
    return OK;
  }
  const exact = state.authorizationServerMetadata?.issuer !== undefined;
  if (exact ? iss === expected : sameIssuer(iss, expected)) return OK;
  return {
    ok: false,
    reason:
      `the authorization response came from the issuer ${shownAddress(iss)}, not ${shownAddress(expected)} that ` +
      "the sign-in was started with (RFC 9207: a mix-up attack), so its code was not redeemed",
  };
}

/** AUTH_REQUIRED for a failed guard of `server`'s authorization server. */
export function refusal(server: string, reason: string): CairnError {
  return new CairnError(
    ErrorCode.AUTH_REQUIRED,
    `the authorization server of "${server}" was refused: ${reason}. Check the url of [servers.${server}] in ` +
      "cairn.toml, or ask the server's operator to fix its authorization server",
    { data: { server, reason } },
  );
}
