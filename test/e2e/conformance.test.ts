// The MCP conformance suite (@modelcontextprotocol/conformance) against the built `cairn serve --transport http`.
// The suite sends no credentials, so a loopback proxy in this test adds the bearer token and forwards all else as is.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const SUITE = resolve(import.meta.dirname, "../../node_modules/@modelcontextprotocol/conformance/dist/index.js");
const TOKEN = "cairn-conformance-token-4f1c9a";

/**
 * The server scenarios that apply to Cairn: they exercise the protocol, not the suite's fixture tools, resources
 * and prompts. docs/decisions/0162-conformance-scenarios.md says why every other scenario does not apply.
 */
const APPLICABLE = [
  "server-initialize",
  "ping",
  "tools-list",
  "resources-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO";
  errorMessage?: string;
}

const dir = mkdtempSync(join(tmpdir(), "cairn-conformance-"));
let cairn: ChildProcess;
let cairnUrl: URL;
let proxy: Server;
let proxyUrl: string;

beforeAll(async () => {
  cairn = spawn(
    process.execPath,
    [MAIN, "serve", "--transport", "http", "--port", "0", "--workspace", join(dir, "ws")],
    { env: { ...process.env, CAIRN_TOKEN: TOKEN, CAIRN_LOG: "error" }, stdio: ["ignore", "ignore", "pipe"], cwd: dir },
  );
  cairnUrl = await new Promise<URL>((resolveUrl, reject) => {
    let stderr = "";
    cairn.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /at (http:\/\/\S+)/.exec(stderr);
      if (match) resolveUrl(new URL(match[1] as string));
    });
    cairn.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
  // Host and Origin pass through untouched, so the suite's DNS-rebinding probe reaches Cairn's own check.
  proxy = createServer((req, res) => {
    const upstream = request(
      {
        host: cairnUrl.hostname,
        port: cairnUrl.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${TOKEN}` },
      },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((ready) => proxy.listen(0, "127.0.0.1", ready));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise<void>((done) => (proxy ? proxy.close(() => done()) : done()));
  cairn?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

/** Runs one scenario with the suite's own CLI and returns the checks it recorded. */
async function runScenario(scenario: string, url: string): Promise<Check[]> {
  const out = mkdtempSync(join(dir, "out-"));
  await promisify(execFile)(process.execPath, [SUITE, "server", "--url", url, "--scenario", scenario, "-o", out], {
    cwd: dir,
    timeout: 60_000,
  }).catch(() => {}); // the verdict is in checks.json, whatever the exit code says
  const [run] = readdirSync(out);
  expect(run, `the suite wrote no results for ${scenario}`).toBeDefined();
  return JSON.parse(readFileSync(join(out, run as string, "checks.json"), "utf8")) as Check[];
}

describe("MCP conformance suite against cairn serve --transport http", () => {
  it.each(APPLICABLE)("passes every check of %s", async (scenario) => {
    const checks = await runScenario(scenario, proxyUrl);
    expect(checks.length).toBeGreaterThan(0);
    const failed = checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO");
    expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
  });

  it("cannot initialize without the token: the suite's client sends none", async () => {
    const checks = await runScenario("server-initialize", cairnUrl.href);
    expect(checks[0]?.status).toBe("FAILURE");
    expect(checks[0]?.errorMessage).toContain("Unauthorized");
  });
});
