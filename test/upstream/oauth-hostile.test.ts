// OAuth upstreams against a hostile authorization server (decision 0253): the guards as tables, then the suite's own
// SDK-based server turned hostile one misbehaviour at a time, with Cairn's real sign-in and connection against it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { HttpServerConfig } from "../../src/config/schema.js";
import { CairnError, ErrorCode } from "../../src/errors.js";
import { createLogger, encodingsOf } from "../../src/log.js";
import { ConnectionCredentials } from "../../src/upstream/oauth-credentials.js";
import { createOAuthFetch, OAUTH_MAX_RESPONSE_BYTES } from "../../src/upstream/oauth-fetch.js";
import {
  checkDiscovery,
  checkEndpoint,
  checkIssuer,
  checkResponseIssuer,
  type DiscoveredServer,
} from "../../src/upstream/oauth-guards.js";
import { revokeAndForget, signIn } from "../../src/upstream/oauth-login.js";
import { CairnOAuthProvider } from "../../src/upstream/oauth-provider.js";
import { FileOAuthStore } from "../../src/upstream/oauth-store.js";
import { UpstreamConnection } from "../../src/upstream/upstream-connection.js";
import { type OAuthServers, startOAuthServers } from "../fixtures/oauth/oauth-servers.mjs";

describe("the endpoint rule", () => {
  it.each([
    "https://auth.example/token",
    "https://auth.example:8443/oauth/token?x=1",
    "http://127.0.0.1:9999/token",
    "http://localhost/token",
    "http://[::1]:80/token",
  ])("lets %s be sent to", (url) => {
    expect(checkEndpoint("its token endpoint", url)).toEqual({ ok: true });
  });

  it.each([
    ["http://auth.example/token", "plain http to another machine"],
    ["http://127.0.0.2/token", "plain http to another machine"],
    ["http://10.0.0.5:8080/token", "plain http to another machine"],
    ["http://localhost.attacker.example/token", "plain http to another machine"],
    ["ftp://auth.example/token", "a ftp: address"],
    ["file:///etc/passwd", "a file: address"],
    ["javascript:alert(1)", "a javascript: address"],
    ["not a url", "is not a URL"],
  ])("refuses %s, naming the endpoint and the rule", (url, why) => {
    const guard = checkEndpoint("its token endpoint", url);
    expect(guard.ok).toBe(false);
    if (guard.ok) return;
    expect(guard.reason).toContain("its token endpoint");
    expect(guard.reason).toContain(why);
    expect(guard.reason).not.toContain("?"); // no query (it could carry a credential) in a message
  });

  it("shows no userinfo or query of a refused address", () => {
    const guard = checkEndpoint("its token endpoint", "http://user:pw@auth.example/token?secret=1");
    expect(guard.ok || guard.reason).not.toMatch(/pw|secret=1/);
  });
});

describe("issuer checks", () => {
  const at = (metadata?: Record<string, unknown>): DiscoveredServer => ({
    authorizationServerUrl: "https://auth.example/",
    ...(metadata === undefined ? {} : { authorizationServerMetadata: { issuer: "https://auth.example", ...metadata } }),
  });

  it("takes the issuer it fetched the metadata for, a trailing slash aside (RFC 8414 §3.3)", () => {
    expect(checkIssuer("https://auth.example/", "https://auth.example")).toEqual({ ok: true });
    expect(checkIssuer("https://auth.example/tenant", "https://auth.example/tenant/")).toEqual({ ok: true });
    // The origin (or a leading path) of a tenant's server: the conformance suite's metadata-var2 and -var3.
    expect(checkIssuer("https://auth.example/tenant1", "https://auth.example")).toEqual({ ok: true });
    expect(checkIssuer("https://auth.example/a/b", "https://auth.example/a")).toEqual({ ok: true });
    for (const other of ["https://auth.example/tenant2", "https://auth.example/tenant", "https://auth.example/a?x"]) {
      expect(checkIssuer("https://auth.example/tenant1", other).ok).toBe(false);
    }
  });

  it.each([["https://evil.example"], ["https://auth.example/other"], ["http://auth.example"], [undefined], [42]])(
    "refuses metadata whose issuer is %s",
    (issuer) => {
      const guard = checkIssuer("https://auth.example/", issuer);
      expect(guard.ok).toBe(false);
      expect(guard.ok || guard.reason).toContain("RFC 8414");
    },
  );

  it("checks each endpoint of the metadata and each server the resource metadata lists", () => {
    for (const field of ["authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint"]) {
      const guard = checkDiscovery(at({ [field]: "http://evil.example/x" }));
      expect(guard.ok || guard.reason).toContain(field.replace("_endpoint", ""));
    }
    const listed = checkDiscovery({
      ...at({}),
      resourceMetadata: { authorization_servers: ["https://auth.example", "http://evil.example"] },
    });
    expect(listed.ok || listed.reason).toContain("lists the authorization server http://evil.example/");
    expect(checkDiscovery({ authorizationServerUrl: "http://evil.example/" }).ok).toBe(false);
    expect(checkDiscovery(at({ token_endpoint: "https://auth.example/token" }))).toEqual({ ok: true });
  });

  it("takes an iss equal to the recorded issuer, refuses any other and a missing one when advertised (RFC 9207)", () => {
    expect(checkResponseIssuer("https://auth.example", at({}))).toEqual({ ok: true });
    expect(checkResponseIssuer(undefined, at({}))).toEqual({ ok: true });
    for (const iss of ["https://evil.example", "https://auth.example/", "https://AUTH.example", ""]) {
      const guard = checkResponseIssuer(iss, at({}));
      expect(guard.ok || guard.reason).toContain("not redeemed");
    }
    const advertised = checkResponseIssuer(undefined, at({ authorization_response_iss_parameter_supported: true }));
    expect(advertised.ok || advertised.reason).toContain("carried no iss");
    // Without metadata the issuer is the URL discovery used.
    expect(checkResponseIssuer("https://auth.example", at())).toEqual({ ok: true });
  });
});

describe("createOAuthFetch", () => {
  it("sends nothing to an address that fails the rule", async () => {
    let sent = 0;
    const send = createOAuthFetch(
      async () => {
        sent += 1;
        return new Response("{}");
      },
      { server: "notes", credentials: new ConnectionCredentials(), describe: () => "its token endpoint" },
    );
    const error = await send("http://auth.example/token", { method: "POST", body: "code=abcd" }).catch((e) => e);
    expect(error).toBeInstanceOf(CairnError);
    expect((error as CairnError).code).toBe(ErrorCode.AUTH_REQUIRED);
    expect((error as CairnError).message).toContain("its token endpoint http://auth.example/token is plain http");
    expect(sent).toBe(0);
  });

  it("abandons an answer that never completes at its deadline", async () => {
    const send = createOAuthFetch(
      async (_url, init) =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("{"));
              init?.signal?.addEventListener("abort", () => controller.error(init.signal?.reason));
            },
          }),
        ),
      { server: "notes", credentials: new ConnectionCredentials(), timeoutMs: 50 },
    );
    const error = (await send("https://auth.example/token").catch((e) => e)) as CairnError;
    expect(error.code).toBe(ErrorCode.AUTH_REQUIRED);
    expect(error.message).toContain("gave no whole answer within 0.05 s");
  });
});

// Against the suite's authorization server, made hostile.
let servers: OAuthServers;
const dirs: string[] = [];
const lines: string[] = [];
const log = createLogger("test", (line) => lines.push(line));

beforeAll(async () => {
  servers = await startOAuthServers();
});
afterAll(async () => {
  await servers?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  servers.behave();
});

function config(extra: Partial<HttpServerConfig> = {}): HttpServerConfig {
  return { url: servers.mcpUrl, headers: {}, auth: "oauth", timeout_ms: 10_000, allow: [], deny: [], ...extra };
}

function freshStore(): FileOAuthStore {
  const dir = mkdtempSync(join(tmpdir(), "cairn-oauth-hostile-"));
  dirs.push(dir);
  return new FileOAuthStore(join(dir, "oauth"), "notes", servers.mcpUrl);
}

async function trySignIn(store = freshStore(), extra: Partial<HttpServerConfig> = {}) {
  return signIn({
    server: "notes",
    config: config(extra),
    store,
    mode: "headless",
    timeoutMs: 10_000,
    say: (line) => lines.push(line),
    log,
  });
}

async function refusedSignIn(
  extra: Partial<HttpServerConfig> = {},
  code: ErrorCode = ErrorCode.AUTH_REQUIRED,
): Promise<CairnError> {
  const error = await trySignIn(freshStore(), extra).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CairnError);
  expect((error as CairnError).code, (error as Error).message).toBe(code);
  return error as CairnError;
}

function connection(store: FileOAuthStore): UpstreamConnection {
  return new UpstreamConnection("notes", config(), {
    connectTimeoutMs: 10_000,
    log,
    closed: () => false,
    changed: () => {},
    oauthProvider: (server, http) => new CairnOAuthProvider({ server, config: http, store }),
  });
}

describe("a hostile authorization server's endpoints", () => {
  it("reaches the other machine's listener when asked directly (the tests below can fail)", async () => {
    const page = await fetch(`${servers.otherMachine}/.well-known/oauth-authorization-server`);
    expect(page.status).toBe(200);
    expect(servers.received).toHaveLength(1);
  });

  it("refuses a plain-http token endpoint before any code or verifier is sent to it", async () => {
    const grants = servers.stats.codeGrants;
    servers.hostile.metadata = { token_endpoint: `${servers.otherMachine}/token` };
    const error = await refusedSignIn();
    expect(error.message).toContain(
      `its token endpoint ${servers.otherMachine}/token is plain http to another machine`,
    );
    expect(error.message).toContain("https (plain http only on 127.0.0.1, localhost or ::1)");
    expect(servers.received).toEqual([]);
    expect(servers.stats.codeGrants).toBe(grants);
  });

  it("refuses a plain-http registration endpoint before registering", async () => {
    servers.hostile.metadata = { registration_endpoint: `${servers.otherMachine}/register` };
    const error = await refusedSignIn();
    expect(error.message).toContain("its registration endpoint");
    expect(servers.received).toEqual([]);
  });

  it("refuses a plain-http authorization server the resource metadata names, before fetching its metadata", async () => {
    servers.hostile.resourceMetadata = { authorization_servers: [servers.otherMachine] };
    const error = await refusedSignIn();
    // Its metadata is the first thing Cairn would fetch from it.
    expect(error.message).toContain(`the authorization server's metadata ${servers.otherMachine}/.well-known/`);
    expect(servers.received).toEqual([]);
  });

  it("refuses metadata that names another issuer (RFC 8414 mix-up)", async () => {
    servers.hostile.metadata = { issuer: "https://login.attacker.example" };
    const error = await refusedSignIn();
    expect(error.message).toContain("names the issuer https://login.attacker.example/");
  });

  it("does not redeem a code whose iss names another issuer (RFC 9207)", async () => {
    const grants = servers.stats.codeGrants;
    servers.hostile.iss = "https://login.attacker.example";
    const error = await refusedSignIn();
    expect(error.message).toContain("came from the issuer https://login.attacker.example/");
    expect(servers.stats.codeGrants).toBe(grants);
  });

  it("does not redeem a code without iss when the server advertises iss, and does with it", async () => {
    const grants = servers.stats.codeGrants;
    servers.hostile.metadata = { authorization_response_iss_parameter_supported: true };
    const error = await refusedSignIn();
    expect(error.message).toContain("carried no iss");
    expect(servers.stats.codeGrants).toBe(grants);
    servers.hostile.iss = servers.issuerUrl;
    expect(await trySignIn()).toMatchObject({ signedIn: true, tools: 2 });
    expect(servers.stats.codeGrants).toBe(grants + 1);
  });
});

describe("a hostile server's huge token answer", () => {
  const MiB = 1024 * 1024;

  it("is abandoned at sign-in within the OAuth bound, with memory kept small", async () => {
    servers.hostile.token = "huge";
    servers.stats.hugeBytesSent = 0;
    globalThis.gc?.();
    const before = process.memoryUsage().rss;
    const error = await refusedSignIn();
    const grown = process.memoryUsage().rss - before;
    expect(error.message).toContain(`its token endpoint ${servers.issuerUrl}token answered more than`);
    expect(error.message).toContain(`${OAUTH_MAX_RESPONSE_BYTES} bytes`);
    // The server had written only what the sockets buffered when Cairn stopped reading.
    expect(servers.stats.hugeBytesSent).toBeLessThan(64 * MiB);
    expect(grown).toBeLessThan(96 * MiB);
  });

  it("is abandoned at a refresh of a running connection, which says so and recovers once the server behaves", async () => {
    const store = freshStore();
    await trySignIn(store);
    const conn = connection(store);
    // The SDK says on the console that the refresh failed: expected here, kept off the output.
    const sdkWarnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      await conn.call("whoami", {}, 10_000, undefined);
      servers.hostile.token = "huge";
      servers.stats.hugeBytesSent = 0;
      servers.expireAccessTokens();
      const before = process.memoryUsage().rss;
      const error = (await conn.call("whoami", {}, 10_000, undefined).catch((e) => e)) as CairnError;
      const grown = process.memoryUsage().rss - before;
      expect(error.code).toBe(ErrorCode.AUTH_REQUIRED);
      expect(error.message).toContain("its token endpoint");
      expect(error.message).toContain("answered more than");
      expect(servers.stats.hugeBytesSent).toBeLessThan(64 * MiB);
      expect(grown).toBeLessThan(96 * MiB);
      servers.behave();
      const reply = await conn.call("whoami", {}, 10_000, undefined);
      expect((reply.content[0] as { text: string }).text).toContain("signed in");
    } finally {
      sdkWarnings.mockRestore();
      await conn.close();
    }
  });
});

describe("secrets a hostile server echoes", () => {
  /** Every encoding of every credential the server read in its token requests. */
  function echoedSecrets(): string[] {
    const values: string[] = [];
    for (const request of servers.received) {
      if (request.authorization !== undefined) {
        const basic = request.authorization.replace(/^Basic /, "");
        const pair = Buffer.from(basic, "base64").toString("utf8");
        values.push(request.authorization, basic, pair, pair.slice(pair.indexOf(":") + 1));
      }
      const form = new URLSearchParams(request.body ?? "");
      for (const field of ["code", "code_verifier", "refresh_token"]) {
        const value = form.get(field);
        if (value !== null) values.push(value);
      }
    }
    return values.flatMap(encodingsOf);
  }

  it("keeps the Basic header, the client secret, the code and the verifier out of the error and the log", async () => {
    const port = await freePort();
    const secret = `cs-${crypto.randomUUID()}+/=`;
    servers.addClient({
      client_id: "cairn-confidential",
      client_secret: secret,
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
    });
    servers.hostile.token = "echo";
    servers.hostile.metadata = { token_endpoint_auth_methods_supported: ["client_secret_basic"] };
    // What the SDK says on the console (a credential without an issuer stamp) is checked with the log, not printed.
    const warned: string[] = [];
    const sdkWarnings = vi.spyOn(console, "warn").mockImplementation((...args) => warned.push(args.join(" ")));
    const error = await refusedSignIn(
      { client_id: "cairn-confidential", client_secret: secret, redirect_port: port },
      ErrorCode.UPSTREAM_UNAVAILABLE,
    ).finally(() => sdkWarnings.mockRestore());
    const secrets = echoedSecrets();
    expect(servers.received.some((request) => request.authorization?.startsWith("Basic "))).toBe(true);
    expect(secrets.length).toBeGreaterThan(10);
    const shown = [error.message, JSON.stringify(error.toJSON()), lines.join("\n"), ...warned].join("\n");
    expect(shown).toContain("[redacted]");
    for (const value of secrets) expect(shown).not.toContain(value);
  });

  it("cleans the bearer token a tool echoes out of its reply, in every encoding", async () => {
    const store = freshStore();
    await trySignIn(store);
    const conn = connection(store);
    try {
      const reply = await conn.call("echo_token", {}, 10_000, undefined);
      const text = JSON.stringify(reply);
      const token = store.read()?.tokens?.access_token as string;
      for (const form of encodingsOf(token)) expect(text).not.toContain(form);
      expect(text).toContain("you sent Bearer [redacted]");
      expect(text).toContain("base64 [redacted], url [redacted]");
      // Replies without a credential come back as they were.
      expect((await conn.call("whoami", {}, 10_000, undefined)).content).toEqual([
        { type: "text", text: "signed in as a registered client" },
      ]);
    } finally {
      await conn.close();
    }
  });

  it("revokes only at an endpoint that passes the rule", async () => {
    const store = freshStore();
    await trySignIn(store);
    store.write(
      (record) =>
        ({
          ...(record ?? { url: servers.mcpUrl }),
          discovery: {
            authorizationServerUrl: servers.issuerUrl,
            authorizationServerMetadata: { revocation_endpoint: `${servers.otherMachine}/revoke` },
          },
        }) as never,
    );
    const result = await revokeAndForget(store);
    expect(result.removed).toBe(true);
    expect(result.revocation).toContain("refused: its revocation endpoint");
    expect(servers.received).toEqual([]);
  });
});

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
