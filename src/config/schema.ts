// The schema of cairn.toml: every table of SPEC.md, strict (unknown keys are errors), with the SPEC defaults.
// Ranges are generous but finite, so a typo such as `timeout_ms = 3000000000` is caught rather than obeyed.
import { z } from "zod";
import { IDENTITY_NAME_PATTERN, ROLES } from "./identity.js";
import { PROFILE_NAMES } from "./profiles.js";

const MIB = 1024 * 1024;

const int = (min: number, max: number, description: string) => z.number().int().min(min).max(max).describe(description);

/**
 * Identifiers that snippets already use as globals; a server cannot take one as its namespace. Cairn's own, then
 * JavaScript's as the sandbox holds them (a server named JSON would have tools no snippet could reach as JSON.tool).
 */
export const RESERVED_NAMESPACES = new Set([
  "cairn",
  "cli",
  "cli_run",
  "workspace",
  "tasks",
  "call_tool",
  "save_result",
  "load_result",
  "save_artifact",
  "load_artifact",
  "console",
  "inputs",
  "globalThis",
  "setTimeout",
  "clearTimeout",
  "sleep",
  ...["CairnError", "ToolCallError", "ToolNotFoundError", "ResultStoreError", "ArtifactStoreError", "PolicyError"],
  ...["SandboxError", "WorkspaceError", "QueryError", "ArgumentError"],
  ...["Object", "Function", "Array", "Number", "Boolean", "String", "Symbol", "BigInt", "Date", "RegExp", "JSON"],
  ...["Math", "Promise", "Proxy", "Reflect", "Map", "Set", "WeakMap", "WeakSet", "ArrayBuffer", "SharedArrayBuffer"],
  ...["DataView", "Error", "AggregateError", "EvalError", "InternalError", "RangeError", "ReferenceError"],
  ...["SyntaxError", "TypeError", "URIError", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array"],
  ...["Uint16Array", "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array", "Float32Array", "Float64Array"],
  ...["Infinity", "NaN", "undefined", "eval", "isFinite", "isNaN", "parseFloat", "parseInt", "decodeURI"],
  ...["decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape"],
]);

export const SERVER_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

const SandboxConfigSchema = z.strictObject({
  backend: z
    .enum(["quickjs", "node"])
    .default("quickjs")
    .describe('"quickjs" (WebAssembly isolation) or "node" (trusted code only; needs allow_unsafe = true)'),
  allow_unsafe: z.boolean().default(false).describe("must be true for the node backend, which is not a sandbox"),
  timeout_ms: int(100, 3_600_000, "wall clock for one execute_code, tool calls included").default(30_000),
  memory_mb: int(
    8,
    2000,
    "memory one run may hold in MiB, measured by Cairn (at most 2000: the engine's own ceiling)",
  ).default(128),
  max_tool_calls: int(0, 1_000_000, "host calls one run may make").default(1000),
  max_log_chars: int(0, 10_000_000, "console output kept per run").default(20_000),
  max_workers: int(
    1,
    256,
    "sandbox workers, so snippets running at once (a run holds its worker while it awaits)",
  ).default(4),
  max_queued: int(0, 100_000, "snippets that may wait for a worker; one more fails at once with BUSY").default(64),
});

const OutputConfigSchema = z
  .strictObject({
    view_chars: int(1000, 100_000_000, "a result longer than this is spilled").default(40_000),
    head_chars: int(0, 100_000_000, "characters kept from the start of a spilled result").default(20_000),
    tail_chars: int(0, 100_000_000, "characters kept from the end of a spilled result").default(20_000),
    max_file_bytes: int(1024, 16 * 1024 * MIB, "bytes of one spilled copy").default(64 * MIB),
    max_total_bytes: int(1024, 64 * 1024 * MIB, "bytes of all spilled copies of this process").default(256 * MIB),
    binary_budget_bytes: int(0, 1024 * MIB, "binary content forwarded inline; larger is saved").default(MIB),
    tokenizer: z
      .enum(["o200k_base", "cl100k_base"])
      .default("o200k_base")
      .describe('the encoding max_tokens counts replies with: "o200k_base" or "cl100k_base" (both offline)'),
  })
  .refine((o) => o.head_chars + o.tail_chars <= o.view_chars, {
    message: "head_chars + tail_chars must not exceed view_chars",
    path: ["head_chars"],
  });

const storeFields = (defaults: { entries: number; total: number; entry: number }) => ({
  enabled: z.boolean().default(true).describe("false turns the store and its resources off"),
  // Per identity (an HTTP token's; on stdio the process), not per connection: past either cap the least recently used
  // entries are evicted and answer HANDLE_EVICTED (decision 0261).
  max_entries: int(1, 1_000_000, "entries one identity's store holds").default(defaults.entries),
  max_total_bytes: int(1024, 64 * 1024 * MIB, "bytes of all entries of one identity").default(defaults.total),
  max_entry_bytes: int(1, 64 * 1024 * MIB, "bytes of one entry").default(defaults.entry),
  ttl_seconds: int(1, 31 * 24 * 3600, "seconds an entry lives").default(3600),
});

const ResultsConfigSchema = z.strictObject(storeFields({ entries: 64, total: 32 * MIB, entry: 8 * MIB }));
const ArtifactsConfigSchema = z.strictObject(storeFields({ entries: 32, total: 256 * MIB, entry: 64 * MIB }));

const WorkspaceConfigSchema = z.strictObject({
  path: z.string().min(1).default("~/.cairn/workspace").describe("workspace directory"),
  query_timeout_ms: int(100, 3_600_000, "deadline of one SQL query").default(15_000),
  query_memory: z
    .string()
    .regex(/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/, 'a size such as "512MB" or "1GB"')
    .default("1GB")
    .describe("memory limit of the SQL engine"),
  query_threads: int(1, 256, "threads of the SQL engine").default(2),
  max_preview_rows: int(0, 10_000, "rows returned by query").default(25),
  max_preview_bytes: int(256, 10 * MIB, "bytes of rows returned by query").default(7680),
  index_bytes: int(0, 64 * MIB, "bytes of text indexed for find").default(65_536),
  import_roots: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "folders the import tool and workspace.import may read under, relative to cairn.toml's folder (default: that folder; none without a cairn.toml); the command line's cairn import reads anywhere",
    ),
  catalog: z
    .string()
    .regex(/^(sqlite|postgres(ql)?:\/\/\S+)$/, 'write "sqlite" or a postgres:// URL')
    .default("sqlite")
    .describe(
      'where names and versions live: "sqlite" (catalog.db in path) or "postgres://USER@HOST:PORT/DB?schema=NAME" shared by a team (password from PGPASSWORD)',
    ),
  blobs: z
    .string()
    .regex(/^(fs|s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/\S*)?)$/, 'write "fs" or an s3://BUCKET/PREFIX URL')
    .default("fs")
    .describe(
      'where content lives: "fs" (blobs/ in path) or "s3://BUCKET/PREFIX" (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the AWS profile)',
    ),
  endpoint: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("an S3-compatible server's URL (MinIO, R2, Ceph); absent: AWS S3"),
  region: z.string().min(1).max(64).default("us-east-1").describe("the S3 region"),
  path_style: z.boolean().default(false).describe("address buckets as ENDPOINT/BUCKET (most S3-compatible servers)"),
  blob_cache: z
    .string()
    .regex(/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/, 'a size such as "512MB" or "4GB"')
    .default("4GB")
    .describe("local read-through cache of S3 blobs in path (least recently used go first)"),
  pool_size: int(1, 100, "PostgreSQL connections one process holds at most").default(4),
  backend_timeout_ms: int(
    100,
    3_600_000,
    "deadline of one request to PostgreSQL or the object store, retries included",
  ).default(60_000),
});

const PROGRAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

// "--long" (GNU prefixes count), "-x" (one letter, also inside "-abx" and glued "-xVALUE") or "-word" (find style).
const optionRule = z.string().regex(/^--?[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'an option such as "--output", "-o" or "-exec"');

export const ProgramPolicySchema = z.strictObject({
  subcommands: z
    .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "a subcommand name such as log"))
    .optional()
    .describe("the only subcommands allowed (the first argument that is not an option); replaces the built-in list"),
  deny_options: z.array(optionRule).default([]).describe("options refused in addition to the built-in rules"),
  allow_options: z.array(optionRule).default([]).describe("built-in refusals lifted, spelled as in the refusal"),
  env: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"))
    .default([])
    .describe("variables passed from Cairn's environment besides PATH, HOME, LANG and TZ"),
  timeout_ms: int(100, 3_600_000, "deadline of one run of this program").optional(),
  allow_any_arguments: z
    .boolean()
    .default(false)
    .describe("true turns the built-in argument rules off (needed for shells, interpreters and file writers)"),
  network: z
    .boolean()
    .optional()
    .describe('true lets the program use the network under confinement = "kernel" (default false: no network at all)'),
});

const CliConfigSchema = z
  .strictObject({
    mode: z.enum(["disabled", "allowlist"]).default("disabled").describe('"disabled" or "allowlist"'),
    allow: z
      .array(z.string().regex(PROGRAM_NAME, "a program name without a path, e.g. git"))
      .default([])
      .describe("program names looked up on PATH"),
    timeout_ms: int(100, 3_600_000, "deadline of one program run").default(30_000),
    max_concurrent: int(1, 256, "programs running at once across all sessions; more calls wait").default(4),
    confinement: z
      .enum(["kernel", "none"])
      .default("kernel")
      .describe(
        '"kernel": each program in a bubblewrap sandbox (read-only files, a private /tmp, no network unless granted), refused where it cannot start; "none": argument rules and process-tree kill only',
      ),
    scratch_mb: int(1, 65_536, "MiB of the private /tmp (and /dev/shm) a sandboxed program may write").default(64),
    programs: z
      .record(z.string().regex(PROGRAM_NAME, "a program name from allow"), ProgramPolicySchema)
      .default({})
      .describe("argument policy, environment and deadline per program: [cli.programs.NAME]"),
  })
  .superRefine((cli, ctx) => {
    for (const name of Object.keys(cli.programs)) {
      if (!cli.allow.includes(name)) {
        ctx.addIssue({
          code: "custom",
          path: ["programs", name],
          message: `${name} has a [cli.programs.${name}] table but is not in allow: add "${name}" to [cli] allow`,
        });
      }
    }
  });

const GatewayConfigSchema = z.strictObject({
  direct: z.boolean().default(false).describe("also list every upstream tool as a direct MCP tool NAME__tool"),
});

const MemoryConfigSchema = z.strictObject({
  capture: z
    .boolean()
    .optional()
    .describe(
      "record compact observations of runs, upstream calls and workspace writes for recall (default: on in the runtime profile, off otherwise)",
    ),
  goal: z.string().min(1).max(1000).optional().describe("the query recall uses when a call gives none"),
  recall_tokens: int(1, 131_072, "token budget of a recall call that gives no max_tokens").default(1500),
  model_dir: z
    .string()
    .min(1)
    .optional()
    .describe("a provisioned local embedding model (embedder.json) for hybrid recall; never downloaded"),
});

const stringMap = z.record(z.string(), z.string());

const serverCommon = {
  timeout_ms: int(100, 3_600_000, "deadline of one upstream call").default(60_000),
  // At most 256 MiB: one message is decoded to one string, and V8 strings stop near 512 Mi characters.
  max_reply_bytes: int(
    64 * 1024,
    256 * MIB,
    "bytes of one message from the server (a stdio line, an SSE event, a JSON body); a call whose reply is bigger fails with TOO_LARGE (default 10 MiB)",
  ).optional(), // the default lives in upstream/reply-limit.ts, next to the code it bounds
  // The defaults of these three live in upstream/upstream-connection.ts, beside the code they bound.
  startup_timeout_ms: int(
    100,
    3_600_000,
    "deadline for starting (or reaching) the server, initialize and tools/list; calls and searches wait for a server still starting at most this long (default 30000)",
  ).optional(),
  max_concurrency: int(
    1,
    256,
    "calls this server runs at once, from every session; more calls wait their turn (default 4)",
  ).optional(),
  parallel_writes: z
    .boolean()
    .optional()
    .describe(
      "true lets tools the server does not mark read-only (readOnlyHint) run in parallel too, up to max_concurrency; by default they run one at a time, since many servers lose writes made at once (default false)",
    ),
  allow: z.array(z.string().min(1)).default([]).describe("tool allow-list; empty = all"),
  deny: z.array(z.string().min(1)).default([]).describe("tools hidden from snippets"),
  approve: z
    .array(z.string().min(1).max(200))
    .max(256)
    .optional()
    .describe(
      'tools whose calls from snippets wait for a person to approve them: names or glob patterns ("delete_*", "send_?mail"; * any run of characters, ? one; default none)',
    ),
  approve_destructive: z
    .boolean()
    .optional()
    .describe(
      "also ask for approval of every tool the server does not mark read-only and non-destructive (MCP annotations; a tool without annotations counts as destructive, as MCP's defaults say; default false)",
    ),
};

export const StdioServerConfigSchema = z.strictObject({
  command: z.string().min(1).describe("program that starts the server"),
  args: z.array(z.string()).default([]),
  env: stringMap.default({}),
  cwd: z.string().min(1).optional(),
  ...serverCommon,
});

/** Keys of an HTTP server that only mean something with `auth = "oauth"`. */
const OAUTH_KEYS = ["client_id", "client_secret", "client_metadata_url", "scopes", "redirect_port"] as const;

export const HttpServerConfigSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/ }).describe("Streamable HTTP endpoint"),
    headers: stringMap.default({}),
    auth: z
      .enum(["oauth"])
      .optional()
      .describe(
        '"oauth": OAuth 2.1 with PKCE, signed in once with `cairn auth login NAME`, tokens refreshed by Cairn (absent: headers only)',
      ),
    client_id: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe("a client id registered with the authorization server beforehand (absent: dynamic registration)"),
    client_secret: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('the secret of client_id, written as "${VAR}" so it stays out of the file and out of every log'),
    client_metadata_url: z
      .url({ protocol: /^https$/ })
      .optional()
      .describe(
        "an HTTPS URL of Cairn's client metadata document, used as client_id where the server accepts such ids",
      ),
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, "an OAuth scope: printable ASCII, no space or quote"))
      .max(64)
      .optional()
      .describe("scopes asked for when the server names none (its WWW-Authenticate or scopes_supported win)"),
    redirect_port: int(
      1024,
      65535,
      "the loopback port of login's redirect URI, for a client_id registered with a fixed one (default: any free port)",
    ).optional(),
    ...serverCommon,
  })
  .superRefine((server, ctx) => {
    if (server.auth !== "oauth") {
      for (const key of OAUTH_KEYS) {
        if (server[key] !== undefined) {
          ctx.addIssue({ code: "custom", path: [key], message: `${key} needs auth = "oauth" in the same table` });
        }
      }
      return;
    }
    if (Object.keys(server.headers).some((name) => name.toLowerCase() === "authorization")) {
      ctx.addIssue({
        code: "custom",
        path: ["headers"],
        message: 'auth = "oauth" sends its own Authorization header: remove Authorization from headers',
      });
    }
    if (server.client_secret !== undefined && server.client_id === undefined) {
      ctx.addIssue({ code: "custom", path: ["client_secret"], message: "client_secret needs client_id" });
    }
  });

const identityName = z
  .string()
  .regex(IDENTITY_NAME_PATTERN, "letters, digits, '.', '_', '@' or '-', at most 64, e.g. research-agent");
const role = z
  .enum(ROLES)
  .describe('"reader" (read-only operations), "writer" (every operation but approve) or "approver" (approve too)');

const IdentityConfigSchema = z.strictObject({
  name: identityName.optional().describe("the name every write records (default: the local account's name)"),
  role: role.default("writer"),
});

const HttpTokenSchema = z.strictObject({
  token_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name, e.g. CAIRN_TOKEN_REVIEWER")
    .describe("the environment variable holding the bearer token (the token itself never goes in the file)"),
  identity: identityName.describe("the identity of clients presenting this token"),
  role,
});

const HttpConfigSchema = z.strictObject({
  tokens: z
    .array(HttpTokenSchema)
    .max(64)
    .default([])
    .describe("[[http.tokens]]: bearer tokens of `serve --transport http`, each mapped to an identity and role"),
  // Shares leave every identity room: identities times a share may not pass its total (decision 0252).
  max_sessions_per_identity: int(
    1,
    100_000,
    "live HTTP sessions one identity (token) may hold; identities times this may not pass --max-sessions (default: --max-sessions divided by the identities)",
  ).optional(),
  max_runs_per_identity: int(
    1,
    1024,
    "tool calls of tools that are not read-only (execute_code, writes, direct upstream tools) one identity may have in flight; identities times this may not pass sandbox.max_workers (default: sandbox.max_workers divided by the identities; no limit with one identity)",
  ).optional(),
  // A graceful drain on SIGTERM (decision 0290): new work is refused with 503 DRAINING meanwhile.
  drain_timeout_ms: int(
    0,
    3_600_000,
    "after SIGTERM, how long `serve --transport http` lets the requests in flight finish before it stops them and exits (0: at once; a second SIGTERM stops them at once too) (default 30000)",
  ).default(30_000),
  // Several servers on one PostgreSQL workspace forward an approval's retry to the server holding its run (0294).
  advertise_url: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      "where the other servers of a shared (PostgreSQL) workspace reach this one's /mcp, to forward an approval's retry to the server holding its run (default: http://<listening address>:<port>/mcp, the machine's hostname when it listens on every address)",
    ),
});

const ApprovalsConfigSchema = z.strictObject({
  timeout_ms: int(
    1000,
    3_600_000,
    "how long a run waits for a person to answer an approval request (MCP elicitation); this time does not count against the run's deadline. No answer by then declines the call (default 300000)",
  ).default(300_000),
  handle_ttl_s: int(
    1,
    7 * 86_400,
    "how long an approval handle (apv_…, given to hosts without elicitation) stays usable (default 900)",
  ).default(900),
  max_pending: int(
    1,
    10_000,
    "approval handles waiting at once in this workspace; one more is refused (default 256)",
  ).default(256),
  max_held: int(
    1,
    1000,
    "runs of one identity that may wait at once between 2026-07-28 requests for a person's answer to an approval (multi round-trip requests); a run past it is told its call was declined (default 8)",
  ).default(8),
});

const ServerConfigSchema = z.union([StdioServerConfigSchema, HttpServerConfigSchema]);

export const ConfigSchema = z.strictObject({
  profile: z
    .enum(PROFILE_NAMES)
    .default("agent")
    .describe(
      'tools a host sees: "minimal" (execute_code, read_output), "agent" (the workspace, SQL, retrieval and tasks), "runtime" (agent with approvals, schedules, skills and session memory), "full" (all, import and delete too)',
    ),
  sandbox: SandboxConfigSchema.prefault({}),
  output: OutputConfigSchema.prefault({}),
  results: ResultsConfigSchema.prefault({}),
  artifacts: ArtifactsConfigSchema.prefault({}),
  workspace: WorkspaceConfigSchema.prefault({}),
  cli: CliConfigSchema.prefault({}),
  gateway: GatewayConfigSchema.prefault({}),
  memory: MemoryConfigSchema.prefault({}),
  identity: IdentityConfigSchema.prefault({}),
  http: HttpConfigSchema.prefault({}),
  approvals: ApprovalsConfigSchema.prefault({}),
  servers: z.record(z.string(), ServerConfigSchema).default({}),
});

export type Config = z.infer<typeof ConfigSchema>;
export type SandboxConfig = Config["sandbox"];
export type OutputConfig = Config["output"];
export type StoreConfig = Config["results"];
export type WorkspaceConfig = Config["workspace"];
export type CliConfig = Config["cli"];
export type MemoryConfig = Config["memory"];
export type ApprovalsConfig = Config["approvals"];
export type IdentityConfig = Config["identity"];
export type HttpTokenConfig = Config["http"]["tokens"][number];
export type ProgramPolicyConfig = z.infer<typeof ProgramPolicySchema>;
export type ServerConfig = z.infer<typeof ServerConfigSchema>;
export type StdioServerConfig = z.infer<typeof StdioServerConfigSchema>;
export type HttpServerConfig = z.infer<typeof HttpServerConfigSchema>;

export function isStdioServer(server: ServerConfig): server is StdioServerConfig {
  return "command" in server;
}
