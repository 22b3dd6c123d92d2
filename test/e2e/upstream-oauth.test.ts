// OAuth upstreams through the built CLI: `cairn auth login` driven headlessly (this test plays the browser), `auth
// status` and `logout`, and a `cairn serve` whose upstream is a protected MCP server calling across token expiry.
// The authorization server and the MCP server are real (the SDK's server-side auth) on loopback.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodingsOf } from "../../src/log.js";
import { type OAuthServers, startOAuthServers } from "../fixtures/oauth/oauth-servers.mjs";
import { MAIN } from "../helpers/mcp-client.js";

let servers: OAuthServers;
let dir: string;
let env: NodeJS.ProcessEnv;
let toml: string;
/** Everything Cairn printed or replied in this file: no token, code or secret may be in it. */
const seen: string[] = [];

beforeAll(async () => {
  servers = await startOAuthServers();
  dir = mkdtempSync(join(tmpdir(), "cairn-oauth-e2e-"));
  toml = join(dir, "cairn.toml");
  writeFileSync(toml, `[servers.notes]\nurl = "${servers.mcpUrl}"\nauth = "oauth"\n`);
  env = { ...process.env, CAIRN_OAUTH_DIR: join(dir, "oauth"), CAIRN_LOG: "debug" };
});
afterAll(async () => {
  await servers?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI without blocking this process, which hosts the servers it talks to. */
async function cairn(
  args: string[],
  config = toml,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, "--config", config, ...args], { env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const status = await new Promise<number | null>((resolve) => child.once("close", resolve));
  seen.push(stdout, stderr);
  return { status, stdout, stderr };
}

/** `cairn auth login NAME --no-browser`, with this test opening the printed URL as a browser would. */
async function login(config = toml, name = "notes"): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [MAIN, "--config", config, "auth", "login", name, "--no-browser", "--json"], {
    env,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /^\s+(http:\/\/\S+\/authorize\S*)$/m.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`login exited ${code} before printing a URL: ${stderr}`)));
  });
  // The browser: follows the authorization server's redirect to Cairn's loopback listener.
  const page = await fetch(url, { redirect: "follow" });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("Cairn is signed in");
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  seen.push(stdout, stderr);
  return { code, stdout };
}

async function serve(): Promise<{ run(code: string): Promise<string>; stderr(): string; close(): Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "serve", "--config", toml, "--workspace", join(dir, "ws")],
    env: env as Record<string, string>,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: "oauth-e2e", version: "1.0.0" });
  await client.connect(transport);
  return {
    async run(code) {
      const result = await client.callTool({ name: "execute_code", arguments: { code } }, undefined, {
        timeout: 60_000,
      });
      const text = (result.content as { type: string; text: string }[]).map((c) => c.text).join("\n");
      seen.push(text);
      return text;
    },
    stderr: () => stderr,
    async close() {
      await client.close();
      seen.push(stderr);
    },
  };
}

describe("cairn auth and a served OAuth upstream", () => {
  it("reports the server signed out before any login", async () => {
    const r = await cairn(["auth", "status", "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ server: "notes", signed_in: false })]);
  });

  it("signs in with the printed URL and stores the tokens in a 0600 file", async () => {
    const { code, stdout } = await login();
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out).toMatchObject({ server: "notes", signed_in: true, refreshable: true, tools: 2 });
    expect(statSync(out.file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "oauth")).mode & 0o777).toBe(0o700);
    const status = JSON.parse((await cairn(["auth", "status", "notes", "--json"])).stdout);
    expect(status[0]).toMatchObject({ signed_in: true, expired: false, refreshable: true, scope: "notes" });
    expect(Date.parse(status[0].expires_at)).toBeGreaterThan(Date.now());
  });

  it("shows a snippet the bearer token an upstream echoes back as [redacted], in every encoding", async () => {
    const server = await serve();
    try {
      const reply = await server.run("return await notes.echo_token({})");
      expect(reply).toContain("you sent Bearer [redacted]");
      expect(reply).toContain("base64 [redacted], url [redacted]");
      for (const token of servers.issued) for (const form of encodingsOf(token)) expect(reply).not.toContain(form);
    } finally {
      await server.close();
    }
  });

  it("keeps calls working across an access token's expiry, and answers AUTH_REQUIRED once the refresh is refused", async () => {
    const server = await serve();
    try {
      const call = "try { return await notes.whoami({}) } catch (e) { return [e.code, e.message] }";
      expect(await server.run(call)).toContain("signed in as a registered client");
      const refreshes = servers.stats.refreshGrants;
      servers.expireAccessTokens();
      expect(await server.run(call)).toContain("signed in as a registered client");
      expect(servers.stats.refreshGrants).toBe(refreshes + 1);
      servers.expireAccessTokens();
      expect(await server.run(call)).toContain("signed in as a registered client");
      expect(servers.stats.refreshGrants).toBe(refreshes + 2);

      servers.expireAccessTokens();
      servers.revokeRefreshTokens();
      const refused = await server.run(call);
      expect(refused).toContain("AUTH_REQUIRED");
      expect(refused).toContain("run cairn auth login notes");
    } finally {
      await server.close();
    }
    const status = JSON.parse((await cairn(["auth", "status", "notes", "--json"])).stdout);
    expect(status[0]).toMatchObject({ signed_in: false });
  });

  it("picks up a new login without restarting the server", async () => {
    const server = await serve();
    try {
      const call = "try { return await notes.whoami({}) } catch (e) { return e.code }";
      expect(await server.run(call)).toContain("AUTH_REQUIRED");
      expect((await login()).code).toBe(0);
      expect(await server.run(call)).toContain("signed in as a registered client");
    } finally {
      await server.close();
    }
  });

  it("refreshes once for two servers (two hosts) sharing the token file, however their calls meet", async () => {
    const [one, two] = await Promise.all([serve(), serve()]);
    try {
      const call = "return (await Promise.all([1, 2].map(() => notes.whoami({})))).join(' | ')";
      await Promise.all([one.run(call), two.run(call)]);
      for (let round = 0; round < 3; round++) {
        const before = { ...servers.stats };
        servers.expireAccessTokens();
        const replies = await Promise.all([one.run(call), two.run(call)]);
        for (const reply of replies) expect(reply).toContain("signed in as a registered client | signed in");
        expect(servers.stats.refusedRefreshes).toBe(before.refusedRefreshes);
        expect(servers.stats.refreshGrants).toBe(before.refreshGrants + 1);
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("signs out: revokes at the server, removes the file, and the next call is AUTH_REQUIRED", async () => {
    const revocations = servers.stats.revocations;
    const r = await cairn(["auth", "logout", "notes", "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ server: "notes", removed: true, revocation: "revoked" });
    expect(servers.stats.revocations).toBe(revocations + 1);
    const check = await cairn(["upstream", "check", "notes", "--json"]);
    expect(check.status).toBe(1);
    expect(JSON.parse(check.stdout).error).toMatchObject({ code: "AUTH_REQUIRED" });
  });

  it('refuses auth login for a server without auth = "oauth", and names the fix', async () => {
    const plain = join(dir, "plain.toml");
    writeFileSync(plain, `[servers.open]\nurl = "${servers.mcpUrl}"\n`);
    const r = await cairn(["auth", "login", "open"], plain);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('add auth = "oauth" to [servers.open]');
  });

  it("prints no secret in auth login --json when the token endpoint echoes the Basic header, secret and verifier", async () => {
    const port = await freePort();
    const secret = `cs-${crypto.randomUUID()}+/=`;
    servers.addClient({
      client_id: "cairn-vault",
      client_secret: secret,
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
    });
    servers.hostile.token = "echo";
    servers.hostile.metadata = { token_endpoint_auth_methods_supported: ["client_secret_basic"] };
    const vault = join(dir, "vault.toml");
    writeFileSync(
      vault,
      `[servers.vault]\nurl = "${servers.mcpUrl}"\nauth = "oauth"\nclient_id = "cairn-vault"\n` +
        `client_secret = "\${VAULT_SECRET}"\nredirect_port = ${port}\n`,
    );
    env.VAULT_SECRET = secret;
    try {
      const { code, stdout } = await login(vault, "vault");
      expect(code).toBe(1);
      const error = JSON.parse(stdout).error;
      expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(error.message).toContain("[redacted]");
      const request = servers.received.find((r) => r.authorization?.startsWith("Basic "));
      const basic = (request?.authorization ?? "").replace(/^Basic /, "");
      const form = new URLSearchParams(request?.body ?? "");
      const secrets = [request?.authorization ?? "", basic, Buffer.from(basic, "base64").toString(), secret]
        .concat(["code", "code_verifier"].map((field) => form.get(field) ?? ""))
        .flatMap(encodingsOf);
      expect(secrets.length).toBeGreaterThan(10);
      for (const value of secrets) expect(stdout).not.toContain(value);
      servers.issued.push(...secrets);
    } finally {
      servers.behave();
      delete env.VAULT_SECRET;
    }
  });

  it("never printed, logged or replied a token, code or client secret, in any encoding", () => {
    const everything = seen.join("\n");
    expect(everything.length).toBeGreaterThan(1000);
    expect(servers.issued.length).toBeGreaterThan(5);
    for (const secret of servers.issued) for (const form of encodingsOf(secret)) expect(everything).not.toContain(form);
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
