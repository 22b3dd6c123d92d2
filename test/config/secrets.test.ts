// Secrets stay out of messages (issue 11, property 11): a family of configurations whose `${VAR}` values are a
// recognizable marker, run through the built CLI; the marker appears in no stdout, stderr or error text.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { createLogger, redactSecrets, registerSecret } from "../../src/log.js";
import { MAIN } from "../helpers/mcp-client.js";

const MARKER = "s3cr3t-MARKER-7f3a9c";
const env = {
  CAIRN_TEST_SECRET: MARKER,
  // A value no HTTP header may hold: the client's own error would quote it.
  CAIRN_TEST_SECRET_NL: `${MARKER}\nInjected: 1`,
  CAIRN_TEST_SECRET_QUOTE: `${MARKER}"\\`,
};
const dir = mkdtempSync(join(tmpdir(), "cairn-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function cairn(toml: string, args: string[], input?: string) {
  const file = join(dir, `c${counter++}.toml`);
  writeFileSync(file, toml);
  const r = spawnSync(process.execPath, [MAIN, "--config", file, "--workspace", join(dir, "ws"), ...args], {
    input,
    encoding: "utf8",
    cwd: dir,
    env: { ...process.env, ...env, CAIRN_LOG: "debug" },
  });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

const { CAIRN_HOME: _home, ...withoutHome } = process.env;

/** As `cairn`, but the workspace comes from the file (no --workspace flag, no $CAIRN_HOME). */
function cairnWithout(toml: string, args: string[]) {
  const file = join(dir, `c${counter++}.toml`);
  writeFileSync(file, toml);
  const r = spawnSync(process.execPath, [MAIN, "--config", file, ...args], {
    encoding: "utf8",
    cwd: dir,
    env: { ...withoutHome, ...env, CAIRN_LOG: "debug" },
  });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

const node = JSON.stringify(process.execPath);
/** A stdio "server" that prints its arguments and environment to stderr and exits. */
const leaky = (extra: string) =>
  `[servers.leaky]\ncommand = ${node}\nargs = ["-e", "console.error(process.argv.slice(1).join(' '), JSON.stringify(process.env)); process.exit(1)", ${extra}]\n`;

const configErrors: { name: string; toml: string }[] = [
  { name: "a number key given a string", toml: '[sandbox]\ntimeout_ms = "${CAIRN_TEST_SECRET}"\n' },
  { name: "an enum key", toml: '[sandbox]\nbackend = "${CAIRN_TEST_SECRET}"\n' },
  { name: "a workspace size", toml: '[workspace]\nquery_memory = "${CAIRN_TEST_SECRET}"\n' },
  { name: "an invalid server url", toml: '[servers.x]\nurl = "${CAIRN_TEST_SECRET}"\n' },
  {
    name: "a server table with a wrong key next to a secret",
    toml: '[servers.x]\ncommand = "node"\nenv = { TOKEN = "${CAIRN_TEST_SECRET}", N = 5 }\ntimeout_ms = "${CAIRN_TEST_SECRET}"\n',
  },
  { name: "cli.allow", toml: '[cli]\nmode = "allowlist"\nallow = "${CAIRN_TEST_SECRET}"\n' },
  { name: "a TOML syntax error on the secret's line", toml: '[servers.x]\nheaders = { A = "${CAIRN_TEST_SECRET}" \n' },
  { name: "a quoted secret", toml: '[sandbox]\nmemory_mb = "${CAIRN_TEST_SECRET_QUOTE}"\n' },
];

describe("configuration errors", () => {
  it.each(configErrors)("never print an expanded value: $name", ({ toml }) => {
    const r = cairn(toml, ["run", "-"], "return 1");
    expect(r.code).toBe(2);
    expect(r.out).not.toContain(MARKER);
  });

  it("quote the value as written, so the user still sees what is wrong", () => {
    const r = cairn('[sandbox]\ntimeout_ms = "${CAIRN_TEST_SECRET}"\n', ["run", "-"], "return 1");
    expect(r.out).toContain("sandbox.timeout_ms");
    expect(r.out).toContain("${CAIRN_TEST_SECRET}");
  });

  it("keep the value out of the thrown error and its data too", () => {
    try {
      parseConfig({ sandbox: { timeout_ms: "${CAIRN_TEST_SECRET}" } }, "test", env);
      expect.unreachable();
    } catch (error) {
      expect(JSON.stringify(error)).not.toContain(MARKER);
      expect(String((error as Error).message)).not.toContain(MARKER);
    }
  });
});

const upstreamFailures: { name: string; toml: string }[] = [
  {
    name: "a header value no HTTP client accepts",
    toml: '[servers.h]\nurl = "http://127.0.0.1:9/mcp"\nheaders = { Authorization = "Bearer ${CAIRN_TEST_SECRET_NL}" }\n',
  },
  {
    name: "a secret in the URL of an unreachable server",
    toml: '[servers.h]\nurl = "http://127.0.0.1:9/mcp?key=${CAIRN_TEST_SECRET}"\n',
  },
  { name: "a command that does not exist", toml: '[servers.c]\ncommand = "/nonexistent/${CAIRN_TEST_SECRET}"\n' },
  { name: "a server that prints its arguments and dies", toml: leaky('"${CAIRN_TEST_SECRET}"') },
  {
    name: "a server that prints its environment and dies",
    toml: `${leaky('"x"')}env = { TOKEN = "\${CAIRN_TEST_SECRET}" }\n`,
  },
];

describe("upstream failures", () => {
  it.each(upstreamFailures)("never show an expanded value in causes, errors or logs: $name", ({ toml }) => {
    const tools = cairn(toml, ["tools", "--json"]);
    expect(tools.out).toContain("unavailable");
    expect(tools.out).not.toContain(MARKER);
    const name = /\[servers\.(\w+)\]/.exec(toml)?.[1];
    const run = cairn(toml, ["run", "-", "--json"], `return await call_tool("${name}.anything", {})`);
    expect(run.out).toContain("UPSTREAM_UNAVAILABLE");
    expect(run.out).not.toContain(MARKER);
  });

  it("still tells the user what failed", () => {
    const r = cairn(upstreamFailures[2]?.toml as string, ["tools"]);
    expect(r.out).toMatch(/the command "[^"]*" does not exist: fix command in cairn\.toml/);
  });
});

describe("other errors of the CLI", () => {
  it.each([{ flags: [] }, { flags: ["--json"] }])("never print an expanded workspace path ($flags)", ({ flags }) => {
    // A file as the parent: opening the workspace fails, and the error quotes the path.
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const toml = `[workspace]\npath = "${file}/\${CAIRN_TEST_SECRET}/ws"\n`;
    const r = cairnWithout(toml, ["find", "x", ...flags]);
    expect(r.code).toBe(1);
    expect(r.out).toContain("[redacted]");
    expect(r.out).not.toContain(MARKER);
  });
});

describe("redactSecrets", () => {
  it("replaces a registered value, its JSON-escaped form and longer secrets first", () => {
    registerSecret("abc");
    registerSecret('tok"en\nvalue');
    registerSecret("tok");
    registerSecret("token-long-one");
    expect(redactSecrets("abc stays: too short to be a secret")).toBe("abc stays: too short to be a secret");
    expect(redactSecrets('raw tok"en\nvalue, json tok\\"en\\nvalue')).toBe("raw [redacted], json [redacted]");
    expect(redactSecrets("x token-long-one y")).toBe("x [redacted] y");
  });

  it("replaces a value with line breaks also folded to spaces (issue 27)", () => {
    // fetch's Headers quote an invalid header value with its line break folded: "Bearer s3cr3t Injected: 1".
    registerSecret("Bearer folded-secret-42\nInjected: 1");
    expect(redactSecrets('"Bearer folded-secret-42 Injected: 1" is an invalid header value')).toBe(
      '"[redacted]" is an invalid header value',
    );
  });

  it("applies to every log line, message and fields", () => {
    registerSecret("log-secret-1234");
    const lines: string[] = [];
    createLogger("t", (l) => lines.push(l)).warn("saw log-secret-1234", { header: "Bearer log-secret-1234" });
    expect(lines.join("")).not.toContain("log-secret-1234");
  });
});
