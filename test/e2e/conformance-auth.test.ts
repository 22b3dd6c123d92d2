// The MCP conformance suite's OAuth client scenarios (`auth/*` of @modelcontextprotocol/conformance 0.1.13) against
// the built `cairn upstream check --auth headless`: the suite starts an authorization server and a protected MCP
// server per scenario, appends the server's URL to the command and checks every step of the exchange.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const SUITE = resolve(import.meta.dirname, "../../node_modules/@modelcontextprotocol/conformance/dist/index.js");
const CHECK = `"${process.execPath}" "${MAIN}" upstream check --auth headless --tool test-tool --timeout 20`;

/**
 * The client scenarios that apply to Cairn, each with the flags its server needs (the suite's fixed pre-registered
 * client, its client metadata document URL). docs/decisions/0241-upstream-oauth.md says why the others do not apply.
 */
const APPLICABLE: [scenario: string, flags: string][] = [
  ["auth/metadata-default", ""],
  ["auth/metadata-var1", ""],
  ["auth/metadata-var2", ""],
  ["auth/metadata-var3", ""],
  ["auth/basic-cimd", "--client-metadata-url https://conformance-test.local/client-metadata.json"],
  ["auth/scope-from-www-authenticate", ""],
  ["auth/scope-from-scopes-supported", ""],
  ["auth/scope-omitted-when-undefined", ""],
  ["auth/scope-step-up", ""],
  ["auth/scope-retry-limit", ""],
  ["auth/token-endpoint-auth-basic", ""],
  ["auth/token-endpoint-auth-post", ""],
  ["auth/token-endpoint-auth-none", ""],
  ["auth/resource-mismatch", ""],
  ["auth/pre-registration", "--client-id pre-registered-client --client-secret-env CONFORMANCE_CLIENT_SECRET"],
  ["auth/2025-03-26-oauth-metadata-backcompat", ""],
  ["auth/2025-03-26-oauth-endpoint-fallback", ""],
];

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  description?: string;
}

const dir = mkdtempSync(join(tmpdir(), "cairn-conformance-auth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function runScenario(scenario: string, flags: string): Promise<Check[]> {
  const out = mkdtempSync(join(dir, "out-"));
  await promisify(execFile)(
    process.execPath,
    [SUITE, "client", "--command", `${CHECK} ${flags}`, "--scenario", scenario, "--timeout", "60000", "-o", out],
    {
      cwd: dir,
      timeout: 120_000,
      // The secret the suite's pre-registered client has; Cairn reads it from the variable --client-secret-env names.
      env: { ...process.env, CONFORMANCE_CLIENT_SECRET: "pre-registered-secret", CAIRN_OAUTH_DIR: join(dir, "never") },
    },
  ).catch(() => {}); // the verdict is in checks.json, whatever the exit code says
  // A scenario named auth/NAME writes its results under OUT/auth/NAME-<time>/.
  const found = (readdirSync(out, { recursive: true }) as string[]).find((path) => path.endsWith("checks.json"));
  expect(found, `the suite wrote no results for ${scenario}`).toBeDefined();
  return JSON.parse(readFileSync(join(out, found as string), "utf8")) as Check[];
}

describe("MCP conformance OAuth client scenarios against cairn upstream check --auth headless", () => {
  it.concurrent.each(APPLICABLE)(
    "passes every check of %s",
    async (scenario, flags) => {
      const checks = await runScenario(scenario, flags);
      expect(checks.length).toBeGreaterThan(0);
      const failed = checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO");
      expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
    },
    240_000,
  );

  it("a check of a URL keeps its sign-in in memory: nothing is written under CAIRN_OAUTH_DIR", async () => {
    await runScenario("auth/metadata-default", "");
    expect(() => readdirSync(join(dir, "never"))).toThrow();
  }, 240_000);
});
