// The MCP conformance suite 0.2.x (@modelcontextprotocol/conformance, with the 2026-07-28 scenarios) against the built
// `cairn serve --transport http` and against Cairn's upstream client (`cairn upstream check`). The suite needs
// Node 22 or newer, so it runs under the Node that CAIRN_NODE22 names (.ci/run fetches it and the suite from the npm
// registry into ~/.cache/cairn-ci) while Cairn itself runs under this test's Node. Which scenarios apply and why the
// others do not: docs/decisions/0263-conformance-2026-and-node-versions.md.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const NODE22 = process.env.CAIRN_NODE22 ?? "";
const SUITE = process.env.CAIRN_CONFORMANCE_02 ?? "";
const READY = existsSync(NODE22) && existsSync(SUITE);
const SKIP_REASON =
  "the conformance suite 0.2.x needs Node >= 22: set CAIRN_NODE22 (a node binary) and CAIRN_CONFORMANCE_02 (its dist/index.js), as .ci/run does";
if (!READY) console.warn(`conformance-2026.test.ts skipped: ${SKIP_REASON}`);

const TOKEN = "cairn-conformance-token-2026-7d3e";

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

/**
 * Server scenarios that apply, at the spec version they run at, each with the checks inside it that do not apply
 * (they need a fixture tool the suite's own test server has). Every other check must be SUCCESS or INFO.
 */
const SERVER: [scenario: string, version: string, notApplicable: string[]][] = [
  // 2026-07-28: stateless requests, discovery, caching, the Mcp-Method/Mcp-Name headers.
  [
    "server-stateless",
    "2026-07-28",
    [
      // both need the fixture tool test_missing_capability
      "sep-2575-server-rejects-undeclared-capability",
      "sep-2575-missing-capability-http-400",
      // SHOULDs the suite does not exercise against a server whose lists never change at run time
      "sep-2575-server-sends-prompts-list-changed-on-subscription",
      "sep-2575-server-sends-tools-list-changed-on-subscription",
    ],
  ],
  ["tools-list", "2026-07-28", []],
  ["resources-list", "2026-07-28", []],
  ["prompts-list", "2026-07-28", []],
  ["caching", "2026-07-28", []],
  ["http-header-validation", "2026-07-28", []],
  ["sep-2164-resource-not-found", "2026-07-28", []],
  ["server-sse-multiple-streams", "2026-07-28", []],
  ["dns-rebinding-protection", "2026-07-28", []],
  // The legacy era on the same endpoint.
  ["server-initialize", "2025-11-25", []],
  ["server-session-lifecycle", "2025-11-25", []],
  ["server-session-lifecycle", "2025-03-26", []],
  ["ping", "2025-11-25", []],
  ["tools-list", "2025-11-25", []],
  ["resources-list", "2025-11-25", []],
  ["prompts-list", "2025-11-25", []],
  ["server-sse-multiple-streams", "2025-11-25", []],
  ["dns-rebinding-protection", "2025-11-25", []],
];

const CHECK = `"${process.execPath}" "${MAIN}" upstream check --auth headless --timeout 20`;
const ADD = `--tool add_numbers --args '{"a":2,"b":3}'`;

/** Client scenarios that apply, at their spec version, with the flags `cairn upstream check` needs for them. */
const CLIENT: [scenario: string, version: string, flags: string][] = [
  ["initialize", "2025-11-25", ""],
  ["tools_call", "2025-11-25", ADD],
  ["tools_call", "2026-07-28", ADD],
  ["json-schema-ref-no-deref", "2026-07-28", ""],
  // one tool with a malformed x-mcp-header annotation is excluded, the valid one stays callable (SEP-2243)
  ["http-invalid-tool-headers", "2026-07-28", "--tool valid_tool"],
  // OAuth at 2026-07-28: the scenarios new in 0.2.x (the rest run on 0.1.13 in conformance-auth.test.ts).
  ...[
    "auth/metadata-default",
    "auth/token-endpoint-auth-basic",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    // the resource moves to another authorization server mid-connection: read its metadata again, register there
    "auth/authorization-server-migration",
  ].map((scenario): [string, string, string] => [scenario, "2026-07-28", "--tool test-tool"]),
];

const dir = mkdtempSync(join(tmpdir(), "cairn-conformance-2026-"));
let cairn: ChildProcess | undefined;
let proxy: Server | undefined;
let proxyUrl = "";

beforeAll(async () => {
  if (!READY) return;
  cairn = spawn(
    process.execPath,
    [MAIN, "serve", "--transport", "http", "--port", "0", "--workspace", join(dir, "ws")],
    { env: { ...process.env, CAIRN_TOKEN: TOKEN, CAIRN_LOG: "error" }, stdio: ["ignore", "ignore", "pipe"], cwd: dir },
  );
  const child = cairn;
  const cairnUrl = await new Promise<URL>((resolveUrl, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /at (http:\/\/\S+)/.exec(stderr);
      if (match) resolveUrl(new URL(match[1] as string));
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
  // The suite sends no credentials: this loopback proxy adds the token and passes Host, Origin and all else as is.
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
  const listening = proxy;
  await new Promise<void>((ready) => listening.listen(0, "127.0.0.1", ready));
  proxyUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise<void>((done) => (proxy ? proxy.close(() => done()) : done()));
  cairn?.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the suite's CLI under Node 22 and returns the checks the one scenario recorded. */
async function runSuite(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  const out = mkdtempSync(join(dir, "out-"));
  await promisify(execFile)(NODE22, [SUITE, ...args, "-o", out], { cwd: dir, timeout: 120_000, env }).catch(() => {});
  // The verdict is in checks.json, whatever the exit code says; auth/NAME writes under OUT/auth/NAME-<time>/.
  const found = (readdirSync(out, { recursive: true }) as string[]).find((path) => path.endsWith("checks.json"));
  expect(found, `the suite wrote no results for ${args.join(" ")}`).toBeDefined();
  return JSON.parse(readFileSync(join(out, found as string), "utf8")) as Check[];
}

function unexpected(checks: Check[], notApplicable: string[] = []): Check[] {
  return checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO" && !notApplicable.includes(c.id));
}

describe.skipIf(!READY)("MCP conformance 0.2.x server scenarios against cairn serve --transport http", () => {
  it.each(SERVER)("passes %s at %s", async (scenario, version, notApplicable) => {
    const checks = await runSuite(["server", "--url", proxyUrl, "--scenario", scenario, "--spec-version", version]);
    expect(checks.length).toBeGreaterThan(notApplicable.length);
    const failed = unexpected(checks, notApplicable);
    expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
  });

  it("an unknown resource is -32602 naming the URI in data.uri (SEP-2164)", async () => {
    const checks = await runSuite([
      "server",
      "--url",
      proxyUrl,
      "--scenario",
      "sep-2164-resource-not-found",
      "--spec-version",
      "2026-07-28",
    ]);
    expect(checks.find((c) => c.id === "sep-2164-data-uri")?.status).toBe("SUCCESS");
    expect(checks.find((c) => c.id === "sep-2164-error-code")?.status).toBe("SUCCESS");
  });
});

describe.skipIf(!READY)("MCP conformance 0.2.x client scenarios against cairn upstream check", () => {
  it.concurrent.each(CLIENT)(
    "passes %s at %s",
    async (scenario, version, flags) => {
      const checks = await runSuite(
        ["client", "--command", `${CHECK} ${flags}`, "--scenario", scenario, "--spec-version", version],
        { ...process.env, CAIRN_OAUTH_DIR: join(dir, "never") },
      );
      expect(checks.length).toBeGreaterThan(0);
      const failed = unexpected(checks);
      expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
    },
    240_000,
  );
});
