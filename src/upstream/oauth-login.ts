// Signing in to an OAuth upstream and out of it: `signIn` connects as Cairn would, with the loopback interaction, so
// the server's own 401 starts discovery, registration and the PKCE flow; `revokeAndForget` removes the record and,
// where the authorization server offers RFC 7009 revocation, revokes the refresh token first (best effort, at an
// endpoint that passes the endpoint rule, through the same bounded fetch as every OAuth request).
import type { HttpServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { ConnectionCredentials } from "./oauth-credentials.js";
import { createOAuthFetch } from "./oauth-fetch.js";
import { checkEndpoint } from "./oauth-guards.js";
import { type OpenMode, startLoopback } from "./oauth-loopback.js";
import { CairnOAuthProvider } from "./oauth-provider.js";
import type { OAuthRecord, OAuthStore } from "./oauth-store.js";
import { DEFAULT_STARTUP_TIMEOUT_MS, UpstreamConnection } from "./upstream-connection.js";

export interface SignInOptions {
  server: string;
  config: HttpServerConfig;
  store: OAuthStore;
  mode: OpenMode;
  /** How long the user has to complete the sign-in. */
  timeoutMs: number;
  say: (line: string) => void;
  log?: Logger;
}

export interface SignInResult {
  /** False when the server let Cairn in without asking for a sign-in: nothing was stored. */
  signedIn: boolean;
  tools: number;
  record: OAuthRecord | undefined;
}

/**
 * Runs the authorization-code flow with PKCE against `config.url` through a real connection (initialize and
 * tools/list, which prove the new token works), storing what it obtains in `store`. Throws AUTH_REQUIRED when the
 * sign-in fails or times out, UPSTREAM_UNAVAILABLE when the server cannot be reached.
 */
export async function signIn(options: SignInOptions): Promise<SignInResult> {
  const { server, config, store } = options;
  const loopback = await startLoopback({
    server,
    port: config.redirect_port,
    mode: options.mode,
    timeoutMs: options.timeoutMs,
    say: options.say,
  });
  const provider = new CairnOAuthProvider({ server, config, store, interaction: loopback, fresh: true });
  const connection = new UpstreamConnection(
    server,
    { ...config, startup_timeout_ms: options.timeoutMs + (config.startup_timeout_ms ?? DEFAULT_STARTUP_TIMEOUT_MS) },
    {
      connectTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
      log: options.log ?? createLogger("auth"),
      closed: () => false,
      changed: () => {},
      oauthProvider: () => provider,
    },
  );
  try {
    await connection.connect();
    const state = connection.state();
    if (state.status !== "ready") throw connection.unavailable();
    return { signedIn: provider.signIns > 0, tools: state.tools.length, record: store.read() };
  } finally {
    await connection.close();
    await loopback.close();
  }
}

/** What `revokeAndForget` did. */
export interface SignOutResult {
  removed: boolean;
  /** "revoked", "not offered" (no revocation endpoint known), "failed: ..." or "nothing to revoke". */
  revocation: string;
}

/** Revokes the stored refresh (else access) token at the server when it offers revocation, then removes the record. */
export async function revokeAndForget(store: OAuthStore, timeoutMs = 10_000): Promise<SignOutResult> {
  const record = store.read();
  const revocation = record ? await revoke(record, timeoutMs) : "nothing to revoke";
  return { removed: store.remove(), revocation };
}

async function revoke(record: OAuthRecord, timeoutMs: number): Promise<string> {
  const token = record.tokens?.refresh_token ?? record.tokens?.access_token;
  if (token === undefined) return "nothing to revoke";
  // RFC 8414 metadata names it; OpenID Connect discovery documents may not.
  const metadata = record.discovery?.authorizationServerMetadata as { revocation_endpoint?: unknown } | undefined;
  const endpoint = typeof metadata?.revocation_endpoint === "string" ? metadata.revocation_endpoint : undefined;
  const client = record.client_information;
  if (endpoint === undefined || client === undefined) return "not offered";
  const guard = checkEndpoint("its revocation endpoint", endpoint);
  if (!guard.ok) return `refused: ${guard.reason}`;
  const body = new URLSearchParams({
    token,
    token_type_hint: record.tokens?.refresh_token === undefined ? "access_token" : "refresh_token",
  });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (client.client_secret === undefined) body.set("client_id", client.client_id);
  else {
    const pair = `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
  }
  try {
    const send = createOAuthFetch(fetch, {
      server: "",
      credentials: new ConnectionCredentials(),
      describe: () => "its revocation endpoint",
      timeoutMs,
    });
    const response = await send(endpoint, { method: "POST", headers, body, redirect: "manual" });
    return response.ok ? "revoked" : `failed: the server answered ${response.status}`;
  } catch (error) {
    const reason = error instanceof CairnError ? (error.data as { reason?: unknown } | undefined)?.reason : undefined;
    if (typeof reason === "string") return `failed: ${reason}`;
    return `failed: ${(error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : "unreachable"}`;
  }
}

/** INVALID_ARGUMENT for a server that is not configured with `auth = "oauth"`. */
export function notOAuth(server: string): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `server "${server}" is not an OAuth server: add auth = "oauth" to [servers.${server}] in cairn.toml (an HTTP server), then run cairn auth login ${server}`,
    { data: { server } },
  );
}
