// Cairn's OAuthClientProvider for one upstream: the SDK's auth() runs discovery, registration, PKCE, code exchange
// and refresh; this keeps their state in an OAuthStore, refreshes ahead of expiry, and decides what a needed sign-in
// does: in `cairn auth login` (and `upstream check`) an interaction takes the user through it, elsewhere it is
// AUTH_REQUIRED naming `cairn auth login SERVER`, since a server process cannot open a browser for anyone. Every
// request to the authorization server goes through createOAuthFetch, and what discovery finds through the guards of
// oauth-guards.ts, before anything is sent (decision 0253).
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes } from "node:crypto";
import {
  AuthorizationServerMismatchError,
  auth,
  type FetchLike,
  InsecureTokenEndpointError,
  IssuerMismatchError,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
} from "@modelcontextprotocol/client";
import { OAuthTokensSchema } from "@modelcontextprotocol/core";
import type { HttpServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { ConnectionCredentials } from "./oauth-credentials.js";
import { type Answer, createOAuthFetch, createRefreshSharingFetch } from "./oauth-fetch.js";
import {
  checkDiscovery,
  checkEndpoint,
  checkIssuer,
  checkResponseIssuer,
  type Guard,
  refusal,
  shownAddress,
} from "./oauth-guards.js";
import type { OAuthRecord, OAuthStore } from "./oauth-store.js";

/** A token is refreshed this long before it expires, or at half its lifetime when that is shorter. */
export const REFRESH_MARGIN_MS = 60_000;
/** The redirect URI a client registered without a sign-in in this process says it has (never listened on). */
const PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback";

/** What the redirect of a sign-in delivered: the code, and the issuer it names (RFC 9207) when it names one. */
export interface AuthorizationResponse {
  code: string;
  iss?: string | undefined;
}

/** How a sign-in reaches the user: the loopback redirect of `cairn auth login`, or none (AUTH_REQUIRED). */
export interface OAuthInteraction {
  /** The exact loopback redirect URI of this sign-in (registered with the server). */
  readonly redirectUrl: string;
  /**
   * Takes the user's browser (or, headless, an HTTP client) to `authorizationUrl` and resolves with the code (and
   * `iss`) the redirect delivers, once its `state` matched; rejects at its deadline or when the server answers an
   * error.
   */
  authorize(authorizationUrl: URL): Promise<AuthorizationResponse>;
}

export interface CairnOAuthProviderOptions {
  server: string;
  config: Pick<HttpServerConfig, "url" | "client_id" | "client_secret" | "client_metadata_url" | "scopes">;
  store: OAuthStore;
  /** Present in `cairn auth login` and `cairn upstream check`; absent in a server process. */
  interaction?: OAuthInteraction;
  /** The fetch of the OAuth requests this provider makes itself (a refresh ahead of expiry, the code exchange). */
  fetch?: FetchLike;
  /**
   * A sign-in from scratch (`cairn auth login`): stored tokens are not used, nor a registration made for another
   * redirect URI, until this process has signed in; the old record stays until the new tokens replace it.
   */
  fresh?: boolean;
  /** @default Date.now */
  now?: () => number;
}

/** True inside an auth() this provider started: its own tokens() calls must not start another. */
const insideOwnAuth = new AsyncLocalStorage<true>();

/**
 * One upstream's OAuth client. Guarantees: tokens are read from the store on every request (a refresh by another
 * Cairn process is seen at once); a token within REFRESH_MARGIN_MS of its expiry is refreshed before it is sent,
 * once for all concurrent requests; a refresh token the server refused is forgotten only if the store still holds
 * it; without an interaction, a needed sign-in throws AUTH_REQUIRED and nothing opens a browser.
 */
export class CairnOAuthProvider implements OAuthClientProvider {
  private readonly store: OAuthStore;
  private readonly now: () => number;
  private verifier: string | undefined;
  private refreshing: Promise<void> | undefined;
  /** Digest of the access token the server last refused (a 401) in this process. */
  private refused: string | undefined;
  /** The refresh token of the last tokens() read: the one the SDK sends when it refreshes. */
  private lastRefreshToken: string | undefined;
  /** Why the stored credentials were dropped in this process, for the AUTH_REQUIRED message. */
  private dropped: string | undefined;
  /** The last refusal of the authorization server (oauth-guards.ts) since tokens were last saved. */
  private lastRefusal: CairnError | undefined;
  /** This server's credentials, kept to clean its replies (and registered for redaction everywhere). */
  readonly credentials = new ConnectionCredentials();
  /** Sign-ins completed by the interaction in this process. */
  signIns = 0;
  /**
   * Tokens saved in this process (sign-ins and refreshes): a request refused while this changed was refused for the
   * old token, and its caller sends it once more.
   */
  saves = 0;

  constructor(private readonly options: CairnOAuthProviderOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.credentials.add(options.config.client_secret);
  }

  get server(): string {
    return this.options.server;
  }

  get redirectUrl(): string {
    // Never undefined: the SDK takes a provider without one for a client_credentials client.
    return this.options.interaction?.redirectUrl ?? this.store.read()?.redirect_url ?? PLACEHOLDER_REDIRECT;
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.config.client_metadata_url;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { scopes, client_secret: secret } = this.options.config;
    return {
      client_name: "Cairn",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: secret === undefined ? "none" : "client_secret_basic",
      ...(scopes === undefined || scopes.length === 0 ? {} : { scope: scopes.join(" ") }),
    };
  }

  state(): string {
    return randomBytes(24).toString("base64url");
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const { client_id: id, client_secret: secret } = this.options.config;
    const stored = this.store.read()?.client_information;
    if (id === undefined) {
      // Without a way to sign in, registering a new client at the server would only be followed by AUTH_REQUIRED.
      if (stored === undefined && !this.options.interaction) throw this.authRequired();
      const otherRedirect =
        this.options.fresh === true && stored !== undefined && !registeredFor(stored, this.redirectUrl);
      return otherRedirect ? undefined : stored;
    }
    // A pre-registered client: the stored copy only adds the issuer the SDK bound it to.
    if (stored?.client_id === id) return { ...stored, ...(secret === undefined ? {} : { client_secret: secret }) };
    return { client_id: id, ...(secret === undefined ? {} : { client_secret: secret }) };
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    // A pre-registered secret stays in cairn.toml (as ${VAR}); only what the server issued is stored.
    const { client_secret: _secret, ...rest } = information;
    const kept = this.options.config.client_id === undefined ? information : rest;
    this.store.write((current) => ({ ...(current ?? { url: "" }), client_information: kept }));
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.options.fresh === true && this.signIns === 0) return undefined;
    let record = this.store.read();
    if (insideOwnAuth.getStore() === undefined && this.expiresSoon(record)) {
      this.refreshing ??= this.refreshAhead().finally(() => {
        this.refreshing = undefined;
      });
      await this.refreshing;
      record = this.store.read();
    }
    this.lastRefreshToken = record?.tokens?.refresh_token;
    // Tokens another process obtained are this connection's too.
    for (const token of [record?.tokens?.access_token, record?.tokens?.refresh_token, record?.tokens?.id_token]) {
      this.credentials.add(token);
    }
    return record?.tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    const at = this.now();
    this.dropped = undefined;
    this.lastRefusal = undefined;
    for (const token of [tokens.access_token, tokens.refresh_token, tokens.id_token]) this.credentials.add(token);
    this.saves += 1;
    this.store.write((current) => ({
      ...(current ?? { url: "" }),
      tokens,
      ...(tokens.expires_in === undefined ? { expires_at: undefined } : { expires_at: at + tokens.expires_in * 1000 }),
      ...(this.options.interaction ? { redirect_url: this.options.interaction.redirectUrl, signed_in_at: at } : {}),
    }));
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const { interaction } = this.options;
    if (!interaction) throw this.authRequired();
    this.enforce(checkEndpoint("its authorization endpoint", authorizationUrl));
    const { code, iss } = await interaction.authorize(authorizationUrl);
    this.credentials.add(code);
    // RFC 9207: the code is redeemed only at the issuer the sign-in was started with.
    const discovered = this.store.read()?.discovery;
    this.enforce(
      discovered === undefined
        ? { ok: false, reason: "no authorization server was recorded for this sign-in, so its code was not redeemed" }
        : checkResponseIssuer(iss, discovered),
    );
    // The code is exchanged here, inside the flow that asked for it: the SDK's caller then sees a completed sign-in
    // (its request failed with UnauthorizedError) and sends the request again with the new token.
    await insideOwnAuth.run(true, () =>
      auth(this, {
        serverUrl: this.options.config.url,
        // RFC 8414 §3.3 is the guards' (saveDiscoveryState), with their one multi-tenant tolerance.
        skipIssuerMetadataValidation: true,
        authorizationCode: code,
        // Checked above; the SDK checks it again (RFC 9207) before it redeems the code.
        ...(iss === undefined ? {} : { iss }),
        fetchFn: this.oauthFetch(this.options.fetch ?? fetch),
      }),
    );
    this.signIns += 1;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.credentials.add(codeVerifier);
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (this.verifier === undefined) {
      throw new CairnError(
        ErrorCode.AUTH_REQUIRED,
        `no sign-in to server "${this.server}" is in progress: run cairn auth login ${this.server}`,
        { data: { server: this.server } },
      );
    }
    return this.verifier;
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    if (scope === "verifier") {
      this.verifier = undefined;
      return;
    }
    if (!this.store.read()) return;
    if (scope === "tokens" || scope === "all") {
      this.dropped = "its token expired or was refused and the authorization server refused to refresh it";
    }
    const refused = this.lastRefreshToken;
    this.store.write((current) => {
      const record: OAuthRecord = { ...(current ?? { url: "" }) };
      if (scope === "all" || scope === "tokens") {
        // Another Cairn process may have refreshed since this one read: its new tokens are not the refused ones.
        if (current?.tokens?.refresh_token === refused) {
          delete record.tokens;
          delete record.expires_at;
          // A sign-in follows: it reads the resource's metadata again (SEP-2352).
          delete record.discovery;
        } else {
          this.dropped = undefined;
        }
      }
      if (scope === "all" || scope === "client") delete record.client_information;
      if (scope === "all" || scope === "discovery") delete record.discovery;
      return record;
    });
  }

  /** Refuses (AUTH_REQUIRED) what discovery found when it fails the guards: the SDK then sends nothing to it. */
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.enforce(checkDiscovery(state));
    this.store.write((current) => ({ ...(current ?? { url: "" }), discovery: state }));
  }

  private forgetDiscovery(): void {
    if (this.store.read()?.discovery === undefined) return;
    this.store.write((current) => {
      const record: OAuthRecord = { ...(current ?? { url: "" }) };
      delete record.discovery;
      return record;
    });
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    const state = this.store.read()?.discovery;
    // Stored before these rules, or by a build without them: discovered again, and checked then.
    if (state !== undefined && !checkDiscovery(state).ok) {
      this.forgetDiscovery();
      return undefined;
    }
    return state;
  }

  /** `result` (a reply of this server) without any encoding of this server's credentials. */
  redactReply<T>(result: T): T {
    return this.credentials.redactValue(result);
  }

  /**
   * AUTH_REQUIRED in Cairn's words for a refusal the SDK made itself before the guards saw anything (it checks the
   * metadata's issuer, RFC 8414 §3.3, the authorization response's iss, RFC 9207, and the token endpoint's scheme
   * too); undefined for any other error. Remembered as the last refusal, as the guards' own are.
   */
  sdkRefusal(error: unknown): CairnError | undefined {
    let reason: string | undefined;
    if (error instanceof IssuerMismatchError) {
      reason =
        error.kind === "metadata"
          ? guardReason(checkIssuer(error.expected ?? "", error.received))
          : `the authorization response came from the issuer ${shown(error.received)}, not ${shown(error.expected)} ` +
            "that the sign-in was started with (RFC 9207: a mix-up attack), so its code was not redeemed";
    } else if (error instanceof AuthorizationServerMismatchError) {
      reason =
        `its authorization server is now ${shown(error.currentIssuer)}, not ${shown(error.recordedIssuer)} that ` +
        "issued the stored credentials, so they were not sent to it";
    } else if (error instanceof InsecureTokenEndpointError) {
      reason = `its token endpoint ${shown(error.tokenEndpoint)} is not https, so no code or token was sent to it`;
    }
    if (reason === undefined) return undefined;
    this.lastRefusal = refusal(this.server, reason);
    return this.lastRefusal;
  }

  /** AUTH_REQUIRED for this server, saying why and what to run (what was refused, when something was). */
  authRequired(): CairnError {
    if (this.lastRefusal !== undefined) return this.lastRefusal;
    const why =
      this.dropped ??
      (this.store.read()?.tokens
        ? "its token was refused"
        : "no token is stored for it (never signed in, or signed out)");
    return new CairnError(
      ErrorCode.AUTH_REQUIRED,
      `upstream server "${this.server}" needs a sign-in (${why}): run cairn auth login ${this.server}, then call again`,
      { data: { server: this.server } },
    );
  }

  /** True when the stored access token expires within the margin and a refresh token can renew it. */
  private expiresSoon(record: OAuthRecord | undefined): boolean {
    const expiresAt = record?.expires_at;
    if (expiresAt === undefined || record?.tokens?.refresh_token === undefined) return false;
    const lifetime = (record.tokens.expires_in ?? 0) * 1000;
    const margin = Math.min(REFRESH_MARGIN_MS, lifetime / 2);
    return expiresAt - this.now() <= margin;
  }

  /**
   * The fetch of this server's transport, made from `base`: requests to the server's url go to `base` (the url held
   * to the endpoint rule too, since its access token goes there), all others are OAuth requests and go through
   * `oauthFetch`; refreshes are sent once, for the concurrent requests of this process (oauth-fetch.ts) and across
   * the processes sharing its token file (`coordinatedRefresh`).
   */
  transportFetch(base: FetchLike): FetchLike {
    const resource = new URL(this.options.config.url);
    const oauth = this.oauthFetch(base);
    const routed: FetchLike = async (url, init) => {
      const target = new URL(String(url));
      if (target.origin !== resource.origin || target.pathname !== resource.pathname) return oauth(url, init);
      this.enforce(checkEndpoint("the server's url", target));
      const response = await base(url, init);
      if (response.status === 401) {
        const header = new Headers(init?.headers).get("authorization");
        if (header?.startsWith("Bearer ")) {
          this.refused = digestOf(header.slice("Bearer ".length));
          // Nothing to refresh it: a sign-in follows, and the resource may have moved to another authorization
          // server (SEP-2352), so the sign-in reads its metadata again (a refresh, shared across processes, keeps it).
          if (this.store.read()?.tokens?.refresh_token === undefined) this.forgetDiscovery();
        }
      }
      return response;
    };
    return createRefreshSharingFetch(routed, (sent, send) => this.coordinatedRefresh(sent, send));
  }

  /** `base` for requests to the authorization server: checked, bounded and timed (createOAuthFetch). */
  private oauthFetch(base: FetchLike): FetchLike {
    return createOAuthFetch(base, {
      server: this.server,
      credentials: this.credentials,
      describe: (url) => this.describeEndpoint(url),
      refused: (error) => {
        this.lastRefusal = error;
      },
    });
  }

  /** What `url` is to this server's authorization server, in the words of the messages. */
  private describeEndpoint(url: URL): string {
    const metadata = this.store.read()?.discovery?.authorizationServerMetadata as Record<string, unknown> | undefined;
    const bare = `${url.origin}${url.pathname}`;
    for (const [field, what] of [
      ["token_endpoint", "its token endpoint"],
      ["registration_endpoint", "its registration endpoint"],
      ["revocation_endpoint", "its revocation endpoint"],
    ] as const) {
      const value = metadata?.[field];
      if (typeof value === "string" && URL.canParse(value) && bare === shownBare(new URL(value))) return what;
    }
    if (url.pathname.includes("/.well-known/oauth-protected-resource")) return "the server's resource metadata";
    if (url.pathname.includes("/.well-known/")) return "the authorization server's metadata";
    return "an OAuth request to";
  }

  /** Throws the refusal of a failed guard, remembered for the AUTH_REQUIRED of the calls that follow. */
  private enforce(guard: Guard): void {
    if (guard.ok) return;
    this.lastRefusal = refusal(this.server, guard.reason);
    throw this.lastRefusal;
  }

  /**
   * Under the token file's lock: when the stored refresh token is no longer `sent`, another process refreshed while
   * this one waited, and its tokens are the answer (nothing is sent: a rotating refresh token is spent once). Else
   * the refresh is sent and its tokens saved before the lock is released, so the next process reads them.
   */
  private coordinatedRefresh(sent: string, send: () => Promise<Answer>): Promise<Answer> {
    return this.store.exclusive(async () => {
      const record = this.store.read();
      const stored = record?.tokens;
      // Another process refreshed (the refresh token rotated), or holds an access token newer than the one the
      // server refused here and not about to expire: that token is the answer.
      const rotated = stored?.refresh_token !== undefined && stored.refresh_token !== sent;
      const newer = stored !== undefined && digestOf(stored.access_token) !== this.refused && !this.expiresSoon(record);
      if (stored !== undefined && (rotated || newer)) return tokenAnswer(stored, record?.expires_at, this.now());
      const answer = await send();
      if (answer.status === 200) {
        let parsed: ReturnType<typeof OAuthTokensSchema.safeParse> | undefined;
        try {
          parsed = OAuthTokensSchema.safeParse(JSON.parse(answer.body));
        } catch {
          // Not JSON: the SDK reports it.
        }
        // As the SDK keeps it: a server that rotates nothing sends no new refresh token.
        if (parsed?.success) this.saveTokens({ refresh_token: sent, ...parsed.data });
      }
      return answer;
    });
  }

  /**
   * Refreshes through the SDK's auth(), which sends the refresh token. A failure is not thrown here: the request
   * goes with what the store then holds, and the server's 401 takes the SDK's own path (one more refresh, or a
   * sign-in, which is AUTH_REQUIRED without an interaction).
   */
  private async refreshAhead(): Promise<void> {
    try {
      await insideOwnAuth.run(true, () =>
        auth(this, {
          serverUrl: this.options.config.url,
          skipIssuerMetadataValidation: true,
          fetchFn: createRefreshSharingFetch(this.oauthFetch(this.options.fetch ?? fetch), (sent, send) =>
            this.coordinatedRefresh(sent, send),
          ),
        }),
      );
    } catch {
      // Reported by the request that follows, with the server's own answer.
    }
  }
}

function shown(url: string | undefined): string {
  return url === undefined ? "none" : shownAddress(url);
}

function guardReason(guard: Guard): string {
  return guard.ok ? "its metadata names another issuer (RFC 8414 §3.3)" : guard.reason;
}

function shownBare(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

function digestOf(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A token endpoint's answer carrying `tokens`, with the lifetime they have left. */
function tokenAnswer(tokens: OAuthTokens, expiresAt: number | undefined, now: number): Answer {
  const left = expiresAt === undefined ? undefined : Math.max(1, Math.floor((expiresAt - now) / 1000));
  const { expires_in: _lifetime, ...rest } = tokens;
  return {
    sent: false,
    status: 200,
    statusText: "OK",
    headers: [["content-type", "application/json"]],
    body: JSON.stringify({ ...rest, ...(left === undefined ? {} : { expires_in: left }) }),
  };
}

/** True when a dynamically registered client lists `redirectUrl` (a client without the list is taken as is). */
function registeredFor(client: OAuthClientInformationMixed, redirectUrl: string): boolean {
  const uris = (client as { redirect_uris?: unknown }).redirect_uris;
  return !Array.isArray(uris) || uris.includes(redirectUrl);
}
