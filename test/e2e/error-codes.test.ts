// Every error code of src/errors.ts, produced for real: one trigger per code through the component that raises it
// (the built server over MCP with real upstream servers, the built CLI, or the app in process), and its message must
// name a next step. A new code fails to compile here until it has a trigger.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, chmodSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { loadConfig } from "../../src/config/load.js";
import { CairnError, ErrorCode } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import { ApprovalGate } from "../../src/upstream/approval-gate.js";
import { ApprovalStore } from "../../src/upstream/approval-store.js";
import { CairnOAuthProvider } from "../../src/upstream/oauth-provider.js";
import { FileOAuthStore } from "../../src/upstream/oauth-store.js";
import { UpstreamConnection } from "../../src/upstream/upstream-connection.js";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { startOAuthServers } from "../fixtures/oauth/oauth-servers.mjs";
import { type Connected, connect, ERAS, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const fixture = (name: string) => resolve(import.meta.dirname, "../fixtures/servers", name);

const TOML = `
profile = "full"

[sandbox]
max_tool_calls = 5
max_workers = 1
max_queued = 0
memory_mb = 32

[results]
max_entries = 2
max_entry_bytes = 2000
max_total_bytes = 1500

[artifacts]
enabled = false

[workspace]
query_timeout_ms = 3000

[cli]
mode = "allowlist"
allow = ["echo"]

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.hanging]
command = "${process.execPath}"
args = ["${fixture("hanging.mjs")}"]
timeout_ms = 1000

[servers.crashing]
command = "${process.execPath}"
args = ["${fixture("crashing.mjs")}"]

[servers.elsewhere]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
cwd = "/nonexistent/cairn-error-walk"
`;

interface Seen {
  code: string;
  message: string;
}

type Trigger = (conn: Connected) => Promise<Seen>;

/** Why a code has no trigger: it cannot be produced by anything a user does. */
interface NotProducible {
  notProducible: string;
}

let c: Connected;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${counter++}`;

/** The `{code, message}` of a tool's error reply. */
async function toolError(name: string, args: Record<string, unknown>): Promise<Seen> {
  const r = await c.call(name, args);
  expect(r.isError, r.text).toBe(true);
  return r.json.error;
}

/** The error a snippet ends with, or the `{code, message}` it caught and returned. */
async function snippetError(code: string): Promise<Seen> {
  const r = await c.run(code);
  if (r.json.ok === false) return r.json.error;
  return r.json.value;
}

const catching = (body: string) => `try { ${body} } catch (e) { return { code: e.code, message: e.message } }`;

function cli(args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error" },
  });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

const TRIGGERS: Record<ErrorCode, Trigger | NotProducible> = {
  INVALID_ARGUMENT: () => toolError("execute_code", { code: "1", timeout_ms: 0 }),
  CONFIG_INVALID: async (conn) => {
    const file = join(conn.dir, "typo.toml");
    writeFileSync(file, "[sandbox]\nbakend = 'quickjs'\n");
    try {
      loadConfig({ configPath: file });
    } catch (error) {
      return error as CairnError;
    }
    throw new Error("the configuration loaded");
  },
  HANDLE_NOT_FOUND: () => snippetError(catching("await load_result('res_AAAAAAAAAAAAAAAAAAAAAAAA')")),
  HANDLE_EVICTED: () =>
    snippetError(
      catching("const a = await save_result(1); for (const v of [2, 3]) await save_result(v); await load_result(a)"),
    ),
  // Past max_entries the least recently used are evicted; only a value the total cannot hold alone is refused.
  STORE_FULL: () => snippetError(catching("await save_result('x'.repeat(1600))")),
  ENTRY_TOO_LARGE: () => snippetError(catching("await save_result('x'.repeat(5000))")),
  NOT_JSON: () => snippetError(catching("await save_result({ at: new Map() })")),
  STORE_DISABLED: () => snippetError(catching("await save_artifact('x')")),
  TOOL_NOT_FOUND: () => snippetError(catching("await call_tool('everything.get-sumn', { a: 1, b: 2 })")),
  // delete is opt-in: a server on the default profile names how to enable it.
  TOOL_NOT_ENABLED: async (conn) => {
    const agent = await connect("", [], conn.era);
    try {
      const r = await agent.call("delete", { name: "notes/a" });
      expect(r.isError, r.text).toBe(true);
      return r.json.error;
    } finally {
      await agent.close();
    }
  },
  TOOL_FAILED: () => snippetError(catching("await call_tool('crashing.fail', {})")),
  UPSTREAM_UNAVAILABLE: () => snippetError(catching("await call_tool('elsewhere.echo', { message: 'x' })")),
  TOOL_TIMEOUT: () => snippetError(catching("await hanging.hang({})")),
  NOT_ALLOWED: () => snippetError(catching("await cli_run('rm', ['-rf', '/tmp/nothing'])")),
  TIMEOUT: () => c.call("execute_code", { code: "while (true) {}", timeout_ms: 200 }).then((r) => r.json.error),
  MEMORY_LIMIT: () => snippetError("const keep = []; while (true) keep.push('m'.repeat(1 << 20) + keep.length)"),
  TOO_MANY_CALLS: () => snippetError("for (let i = 0; i < 10; i++) await cli.echo('x')"),
  SYNTAX: () => snippetError("const a = 1;\nreturn foo("),
  RUNTIME: () => snippetError("await new Promise(() => {})"),
  CANCELLED: async (conn) => {
    // A cancelled MCP request gets no reply at all, so the run is cancelled in process, where the server cancels it.
    const file = join(conn.dir, "plain.toml");
    writeFileSync(file, "");
    const app = createApp(loadConfig({ configPath: file, workspace: join(conn.dir, "ws-cancel") }));
    try {
      const controller = new AbortController();
      const code = "await new Promise((resolve) => setTimeout(resolve, 60000))";
      const running = app.runner.run(app.newSession("walk"), { code }, controller.signal);
      controller.abort();
      return JSON.parse((await running).text).error;
    } finally {
      await app.close();
    }
  },
  BUSY: async () => {
    // One worker, no queue: whichever run is admitted holds the worker until the hanging call's deadline.
    const hold = catching("await hanging.hang({})");
    const [a, b] = await Promise.all([c.run(hold), c.run(hold)]);
    const busy = [a, b].find((r) => r.json.ok === false);
    if (!busy) throw new Error(`no run was refused: ${a.text} ${b.text}`);
    return busy.json.error;
  },
  SHARE_EXHAUSTED: {
    notProducible:
      "needs two or more HTTP identities (this suite serves stdio): test/e2e/http-shares.test.ts produces it for " +
      "sessions and runs over real HTTP and checks its message names the limit and how to free a slot",
  },
  DRAINING: {
    notProducible:
      "needs an HTTP server that got SIGTERM (this suite serves stdio): test/e2e/fleet-drain.test.ts produces it " +
      "as 503 with Retry-After and checks its message says nothing ran and to send the request again",
  },
  NOT_FOUND: () => toolError("inspect", { ref: "no-such-artifact" }),
  VERSION_CONFLICT: async () => {
    const name = unique("twice");
    await c.call("save", { name, content: "one" });
    return toolError("save", { name, content: "two" });
  },
  INVALID_NAME: () => toolError("save", { name: "../escape", content: "x" }),
  STALE_CURSOR: () => {
    // A cursor is bound to the versions it searched: a save between pages makes it stale.
    const name = unique("cursor");
    return snippetError(
      catching(`await workspace.save({ name: "${name}", content: "needle needle needle" });
        const first = await workspace.search({ text: "needle", refs: ["${name}"], limit: 1 });
        await workspace.save({ name: "${name}", content: "needle again", expected_version: 1 });
        await workspace.search({ text: "needle", refs: ["${name}"], cursor: first.cursor })`),
    );
  },
  TOO_LARGE: () => toolError("save", { name: unique("big"), content: "b".repeat(1024 * 1024 + 1) }),
  PINNED: async () => {
    const name = unique("pinned");
    await c.call("save", { name, content: "evidence" });
    await c.call("save", { name: unique("by"), checkpoint: { objective: "keep it" }, dependencies: [name] });
    return toolError("delete", { ref: name, expected_version: 1 });
  },
  STALE_INPUT: async () => {
    const table = unique("table");
    const result = unique("result");
    await c.call("save", { name: table, content: "a\n1\n", kind: "csv" });
    await c.call("query", { inputs: [table], sql: "SELECT * FROM input1", save_as: result });
    await c.call("save", { name: table, content: "a\n2\n", kind: "csv", expected_version: 1 });
    return toolError("query", { inputs: [result], sql: "SELECT * FROM input1" });
  },
  SQL_REJECTED: async () => {
    const table = unique("table");
    await c.call("save", { name: table, content: "a\n1\n", kind: "csv" });
    return toolError("query", { inputs: [table], sql: "DROP TABLE input1" });
  },
  QUERY_FAILED: async () => {
    const orders = unique("orders");
    await c.call("save", { name: orders, content: "id,total\n1,9.5\n", kind: "csv" });
    return toolError("query", { inputs: [orders], sql: "SELECT * FROM orders" });
  },
  QUERY_TIMEOUT: async () => {
    const table = unique("table");
    await c.call("save", { name: table, content: "a\n1\n", kind: "csv" });
    return toolError("query", {
      inputs: [table],
      sql: "SELECT count(*) FROM range(100000000) x, range(100000000) y WHERE x.range + y.range = -1",
    });
  },
  IMPORT_FAILED: () => toolError("import", { path: "nonexistent/cairn-walk/flights.csv", name: unique("imported") }),
  CORRUPT: async (conn) => {
    const name = unique("tampered");
    const content = "original text";
    await c.call("save", { name, content });
    const sha256 = createHash("sha256").update(content).digest("hex");
    // Blobs live at blobs/sha256/<first two hex digits>/<the rest>.
    const blob = walk(join(conn.dir, "ws", "blobs")).find((file) =>
      file.endsWith(join(sha256.slice(0, 2), sha256.slice(2))),
    );
    if (!blob) throw new Error(`no blob ${sha256}`);
    chmodSync(blob, 0o600);
    appendFileSync(blob, "!");
    return toolError("inspect", { ref: name });
  },
  ALREADY_EXISTS: async (conn) => {
    const name = unique("exported");
    await c.call("save", { name, content: "to export" });
    const target = join(conn.dir, "already-there.txt");
    writeFileSync(target, "mine");
    const r = cli(["--workspace", join(conn.dir, "ws"), "export", name, target, "--json"]);
    expect(r.status).toBe(1);
    return JSON.parse(r.stdout).error;
  },
  CLAIM_HELD: async () => {
    const resource = unique("report");
    await c.call("claim", { resource, ttl_s: 600 });
    return toolError("claim", { resource });
  },
  FENCED: async () => {
    const name = unique("claimed");
    const first = (await c.call("claim", { resource: name })).json;
    await c.call("claim_release", { resource: name, ticket: first.ticket });
    await c.call("claim", { resource: name });
    return toolError("save", { name, content: "late", ticket: first.ticket });
  },
  AUTH_REQUIRED: async (conn) => {
    // An OAuth upstream never signed in to: a real protected server on loopback, and no token stored for it.
    const servers = await startOAuthServers();
    const config = {
      url: servers.mcpUrl,
      headers: {},
      auth: "oauth" as const,
      timeout_ms: 10_000,
      allow: [],
      deny: [],
    };
    const connection = new UpstreamConnection("notes", config, {
      connectTimeoutMs: 10_000,
      log: createLogger("test", () => {}),
      closed: () => false,
      changed: () => {},
      oauthProvider: (server, http) =>
        new CairnOAuthProvider({
          server,
          config: http,
          store: new FileOAuthStore(join(conn.dir, "oauth"), server, http.url),
        }),
    });
    try {
      await connection.call("whoami", {}, 10_000, undefined);
    } catch (error) {
      return error as CairnError;
    } finally {
      await connection.close();
      await servers.close();
    }
    throw new Error("a call without a token succeeded");
  },
  BACKEND_UNAVAILABLE: async () => {
    // A catalog on a PostgreSQL server that is not there: port 1 on loopback refuses at once.
    try {
      await createPgCatalog("postgres://cairn@127.0.0.1:1/cairn", { attempts: 2, connectTimeoutMs: 2000 });
    } catch (error) {
      return error as CairnError;
    }
    throw new Error("a catalog on a closed port opened");
  },
  // Approvals (decision 0240) through the gate and the handle store the gateway and approve use; the whole path over
  // MCP is test/e2e/approvals.test.ts.
  APPROVAL_REQUIRED: (conn) => approvalError(conn, (gate) => gate.check("files", "delete_all", {}, {}, undefined)),
  APPROVAL_DECLINED: (conn) =>
    approvalError(conn, (gate) => gate.check("files", "delete_all", {}, { ask: async () => "decline" }, undefined)),
  APPROVAL_INVALID: (conn) =>
    approvalError(conn, (_, store) => store.take(`apv_${"0".repeat(24)}_${"A".repeat(43)}`, "x")),
  APPROVAL_USED: (conn) =>
    approvalError(conn, async (_, store) => {
      const { handle } = await store.add({ server: "files", tool: "delete_all", args: {}, requested_by: "a" });
      await store.take(handle, "b");
      await store.take(handle, "b");
    }),
  APPROVAL_EXPIRED: (conn) =>
    approvalError(conn, async (_, store, clock) => {
      const { handle } = await store.add({ server: "files", tool: "delete_all", args: {}, requested_by: "a" });
      clock.now += 3_600_000;
      await store.take(handle, "b");
    }),
  INTERNAL: {
    notProducible:
      "a defect of Cairn itself (an invariant broken, a backend that cannot start): no argument, configuration or " +
      "snippet produces it on purpose, and its message is the defect's own",
  },
};

/** The error `act` throws with an approval gate on a server "files" whose delete_* tools need approval. */
async function approvalError(
  conn: Connected,
  act: (gate: ApprovalGate, store: ApprovalStore, clock: { now: number }) => Promise<unknown>,
): Promise<Seen> {
  const clock = { now: Date.now() };
  const store = new ApprovalStore({
    dir: join(conn.dir, `approvals-${counter++}`),
    ttlSeconds: 900,
    maxPending: 8,
    now: () => clock.now,
  });
  const gate = new ApprovalGate({
    servers: {
      files: { command: "x", args: [], env: {}, timeout_ms: 1000, allow: [], deny: [], approve: ["delete_*"] },
    },
    timeoutMs: 1000,
    store: () => store,
    hints: () => undefined,
    record: async () => {},
  });
  try {
    await act(gate, store, clock);
  } catch (error) {
    return error as CairnError;
  }
  throw new Error("the approval went through");
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/**
 * Imperative verbs a next step starts with, after a colon, a semicolon or a sentence end; or a suggested argument
 * (`kind: "csv"`, `allow_historical: true`, `--force`), a command (`cairn ...`), or a "did you mean".
 */
const NEXT_STEP_VERBS = [
  "add|ask|await|batch|call|cast|check|choose|close|convert|correct|create|delete|describe|do|enable|export|filter|find",
  "fix|give|import|inspect|install|keep|let|list|load|look|lower|make|narrow|omit|open|pass|pin|process|query",
  "raise|read|refresh|remove|rename|resolve|restart|retry|return|reuse|run|save|search|send|set|shorten|split|start|try",
  "use|wait|write",
].join("|");
const NEXT_STEP = new RegExp(`(?:[:;]|\\.)\\s+(?:or\\s+|then\\s+|else\\s+)?(?:${NEXT_STEP_VERBS})\\b`, "i");
const SUGGESTED = [/did you mean/i, /\b[a-z_]+: (?:true|"[^"]*"|\d+)/, /(?:^|\s)--[a-z][a-z-]+/, /\bcairn [a-z-]+/];

function namesNextStep(message: string): boolean {
  return NEXT_STEP.test(message) || SUGGESTED.some((pattern) => pattern.test(message));
}

describe.each(ERAS)("every error code, through a %s client", (era) => {
  beforeAll(async () => {
    c = await connect(TOML, [], era);
  }, 120_000);
  afterAll(async () => {
    await c?.close();
  });

  it("has a trigger or a reason it has none, for each code of src/errors.ts", () => {
    expect(Object.keys(TRIGGERS).sort()).toEqual(Object.keys(ErrorCode).sort());
  });

  it.each(Object.keys(ErrorCode) as ErrorCode[])("%s: a real instance names a next step", async (code) => {
    const trigger = TRIGGERS[code];
    if (typeof trigger !== "function") {
      expect(trigger.notProducible.length).toBeGreaterThan(0);
      // Still well formed: the code maps to a name and the message to the wire shape.
      expect(new CairnError(code, "x").toJSON()).toEqual({ code, message: "x" });
      return;
    }
    const seen = await trigger(c);
    expect(seen?.code, JSON.stringify(seen)).toBe(code);
    expect(namesNextStep(seen.message), `${code}: ${seen.message}`).toBe(true);
  });
});
