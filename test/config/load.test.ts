// cairn.toml loading: SPEC defaults, strictness with one clear message per mistake, ${VAR} expansion, precedence.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { importRoots, loadConfig, parseConfig } from "../../src/config/load.js";
import { RESERVED_NAMESPACES, SERVER_NAME_PATTERN } from "../../src/config/schema.js";
import { QuickJsExecutor } from "../../src/sandbox/quickjs-executor.js";
import { runSnippet, value } from "../helpers/run-snippet.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(toml: string, env: NodeJS.ProcessEnv = {}): string[] {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, toml);
  try {
    loadConfig({ configPath: file, env, cwd: dir });
  } catch (error) {
    return ((error as { data?: { problems?: string[] } }).data?.problems ?? []).map((p) => p.slice(file.length + 2));
  }
  return [];
}

describe("loadConfig", () => {
  it("applies the SPEC defaults with no file", () => {
    const { config, configPath, workspaceDir } = loadConfig({ env: {}, cwd: dir });
    expect(configPath).toBeNull();
    expect(workspaceDir).toBe(join(homedir(), ".cairn/workspace"));
    expect(config.sandbox).toEqual({
      backend: "quickjs",
      allow_unsafe: false,
      timeout_ms: 30000,
      memory_mb: 128,
      max_tool_calls: 1000,
      max_log_chars: 20000,
      max_workers: 4,
      max_queued: 64,
    });
    expect(config.output).toEqual({
      view_chars: 40000,
      head_chars: 20000,
      tail_chars: 20000,
      max_file_bytes: 67108864,
      max_total_bytes: 268435456,
      binary_budget_bytes: 1048576,
      tokenizer: "o200k_base",
    });
    expect(config.results).toEqual({
      enabled: true,
      max_entries: 64,
      max_total_bytes: 33554432,
      max_entry_bytes: 8388608,
      ttl_seconds: 3600,
    });
    expect(config.artifacts).toEqual({
      enabled: true,
      max_entries: 32,
      max_total_bytes: 268435456,
      max_entry_bytes: 67108864,
      ttl_seconds: 3600,
    });
    expect(config.workspace).toMatchObject({
      query_timeout_ms: 15000,
      query_memory: "1GB",
      query_threads: 2,
      max_preview_rows: 25,
      max_preview_bytes: 7680,
      index_bytes: 65536,
    });
    expect(config.cli).toEqual({
      mode: "disabled",
      allow: [],
      timeout_ms: 30000,
      max_concurrent: 4,
      confinement: "kernel",
      scratch_mb: 64,
      programs: {},
    });
    expect(config.gateway).toEqual({ direct: false });
    expect(config.servers).toEqual({});
  });

  it("accepts every table of SPEC", () => {
    expect(
      problems(
        `
[sandbox]
timeout_ms = 5000
[output]
view_chars = 40000
[results]
enabled = false
[artifacts]
ttl_seconds = 60
[workspace]
query_memory = "512MB"
[cli]
mode = "allowlist"
allow = ["git", "rg"]
[gateway]
direct = true
[servers.linear]
command = "node"
args = ["server.js"]
env = { TOKEN = "\${TOKEN}" }
timeout_ms = 1000
deny = ["delete_issue"]
[servers.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer \${TOKEN}" }
`,
        { TOKEN: "t" },
      ),
    ).toEqual([]);
  });

  it("reports every mistake, one line each, naming the key path", () => {
    const found = problems(`
[sandbox]
timeout_ms = "fast"
memory_mb = 1
colour = "blue"
[results]
max_entries = -1
[nope]
x = 1
`);
    expect(found).toHaveLength(5);
    expect(found.join("\n")).toMatch(/sandbox\.timeout_ms: .*number.*\(got "fast"\)/);
    expect(found.join("\n")).toMatch(/sandbox\.memory_mb: .*8/);
    expect(found.join("\n")).toContain("sandbox.colour: unknown key");
    expect(found.join("\n")).toContain("results.max_entries");
    expect(found.join("\n")).toContain("nope: unknown key");
  });

  it("names the keys of an array table's entries for an unknown key there", () => {
    const found = problems('[[http.tokens]]\nname = "ada"\nidentity = "ada"\nrole = "writer"\ntoken_env = "T"\n');
    expect(found).toEqual([
      'http.tokens.0.name: unknown key (did you mean role?): use one of [http.tokens.0]\'s keys (token_env, identity, role; README.md, section "Configuration"), or remove it',
    ]);
  });

  it("says a required key is missing, where to add it and what it is for", () => {
    expect(problems('[[http.tokens]]\ntoken_env = "T"\nrole = "writer"\n')).toEqual([
      "http.tokens.0.identity: missing: add identity = … to [http.tokens.0] (the identity of clients presenting this token)",
    ]);
  });

  it("names the line of a TOML syntax error", () => {
    expect(problems("[sandbox]\ntimeout_ms = = 3\n")[0]).toMatch(/^line 2/);
  });

  it("expands ${VAR} and names a missing one", () => {
    expect(problems('[servers.a]\ncommand = "${MISSING_VAR}"\n')).toEqual([
      "servers.a.command: environment variable ${MISSING_VAR} is not set; export it or remove it",
    ]);
    const file = join(dir, "env.toml");
    writeFileSync(file, '[servers.a]\ncommand = "${CMD}"\n');
    const { config } = loadConfig({ configPath: file, env: { CMD: "node" } });
    expect(config.servers.a).toMatchObject({ command: "node" });
  });

  it("refuses the node backend without allow_unsafe", () => {
    expect(problems('[sandbox]\nbackend = "node"\n')[0]).toContain("allow_unsafe");
    expect(problems('[sandbox]\nbackend = "node"\nallow_unsafe = true\n')).toEqual([]);
  });

  it("refuses a server with neither or both of command and url, a reserved or invalid name", () => {
    expect(problems("[servers.a]\nargs = []\n")[0]).toContain("exactly one of command");
    expect(problems('[servers.a]\ncommand = "x"\nurl = "http://h/mcp"\n')[0]).toContain("exactly one of command");
    expect(problems('[servers.workspace]\ncommand = "x"\n')[0]).toContain("reserved");
    expect(problems('[servers."bad.name"]\ncommand = "x"\n')[0]).toContain("must start with a letter");
    expect(problems('[servers.a]\nurl = "ftp://h"\n')[0]).toContain("servers.a.url");
  });

  // Broke: a server named as a global of the sandbox (JSON, Promise, Map) was accepted, but its namespace can never
  // exist: describe_tools showed "await JSON.list_users({})" and the call failed with "TypeError: not a function".
  it.each([
    "JSON",
    "Math",
    "Promise",
    "Map",
    "Object",
    "Reflect",
    "Proxy",
    "escape",
    "isNaN",
    "CairnError",
    "SandboxError",
  ])("refuses a server named %s, a global of every snippet, and names the fix", (name) => {
    const said = problems(`[servers.${name}]\ncommand = "x"\n[servers.fine]\ncommand = "y"\n`);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`servers.${name}`);
    expect(said[0]).toContain("choose another name");
  });

  it("reserves every global a real sandbox holds that could be a server name", async () => {
    const executor = new QuickJsExecutor({ maxWorkers: 1 });
    try {
      const names = value(await runSnippet(executor, "return Object.getOwnPropertyNames(globalThis)")) as string[];
      const free = names.filter(
        (name) =>
          SERVER_NAME_PATTERN.test(name) && !RESERVED_NAMESPACES.has(name) && !["echo", "math", "fail"].includes(name),
      );
      expect(free).toEqual([]);
    } finally {
      await executor.close();
    }
  });

  it("refuses head_chars + tail_chars over view_chars and an empty allow-list", () => {
    expect(problems("[output]\nhead_chars = 30000\n")[0]).toContain("head_chars + tail_chars");
    expect(problems('[cli]\nmode = "allowlist"\n')[0]).toContain("cli.allow");
  });

  it("takes the encoding max_tokens counts with, o200k_base or cl100k_base, and nothing else", () => {
    expect(problems('[output]\ntokenizer = "cl100k_base"\n')).toEqual([]);
    const [problem] = problems('[output]\ntokenizer = "gpt2"\n');
    expect(problem).toContain("output.tokenizer");
    expect(problem).toMatch(/o200k_base.*cl100k_base/);
  });

  it("takes --workspace over $CAIRN_HOME over the file over the default", () => {
    const file = join(dir, "ws.toml");
    writeFileSync(file, '[workspace]\npath = "from-file"\n');
    expect(loadConfig({ configPath: file, env: {}, cwd: dir }).workspaceDir).toBe(join(dir, "from-file"));
    expect(loadConfig({ configPath: file, env: { CAIRN_HOME: "/env" }, cwd: dir }).workspaceDir).toBe("/env");
    expect(
      loadConfig({ configPath: file, workspace: "/flag", env: { CAIRN_HOME: "/env" }, cwd: dir }).workspaceDir,
    ).toBe("/flag");
  });

  it("finds the file from $CAIRN_CONFIG, else ./cairn.toml", () => {
    const local = mkdtempSync(join(dir, "cwd-"));
    writeFileSync(join(local, "cairn.toml"), "[sandbox]\ntimeout_ms = 1234\n");
    expect(loadConfig({ env: {}, cwd: local }).config.sandbox.timeout_ms).toBe(1234);
    writeFileSync(join(dir, "other.toml"), "[sandbox]\ntimeout_ms = 4321\n");
    expect(loadConfig({ env: { CAIRN_CONFIG: join(dir, "other.toml") }, cwd: local }).config.sandbox.timeout_ms).toBe(
      4321,
    );
  });

  it("takes the import roots from cairn.toml's folder: by default that folder, none without a file", () => {
    const local = mkdtempSync(join(dir, "roots-"));
    const file = join(local, "cairn.toml");
    writeFileSync(file, "");
    expect(importRoots(loadConfig({ configPath: file, env: {} }).config, file)).toEqual([local]);
    writeFileSync(file, '[workspace]\nimport_roots = ["data", "/srv/shared", "~/inbox"]\n');
    expect(importRoots(loadConfig({ configPath: file, env: {} }).config, file)).toEqual([
      join(local, "data"),
      "/srv/shared",
      join(homedir(), "inbox"),
    ]);
    expect(importRoots(parseConfig({}, "x"), null, local)).toEqual([]);
    expect(problems('[workspace]\nimport_roots = "data"\n')[0]).toContain("workspace.import_roots");
  });

  it("rejects a document that is not a table", () => {
    expect(() => parseConfig([], "x")).toThrow(/TOML table/);
  });
});
