// Test helper: a fleet. Several built `cairn serve --transport http` processes on one PostgreSQL catalog and one S3
// bucket (the run's shared servers, a fresh schema and key prefix per fleet), behind a real HAProxy (Debian's
// `haproxy`) that balances round-robin without stickiness (but for a 2025 session, kept on its server by its
// Mcp-Session-Id) and checks each server through /readyz. HAProxy's log (one
// line per request: the test's call id, the server it went to, the status, the retries) and its server state changes
// ("Server cairn/s2 is DOWN") are read from its stderr, so a test waits on what the balancer saw, never on time.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { freshPostgresUrl, freshS3 } from "./backends.js";
import { MAIN, type ToolText, toolText } from "./mcp-client.js";
import { stablePort } from "./restartable-services.js";

export const FLEET_TOKEN = "fleet-token-0123456789abcdef0123456789abcdef";
const INSTANCE_LINE = /serving MCP over Streamable HTTP at (http:\/\/\S+) .*instance ([A-Za-z0-9_-]+)\)/;

/** The haproxy program, or undefined when it is not installed (.ci/run installs it). */
export function haproxyPath(): string | undefined {
  for (const candidate of ["/usr/sbin/haproxy", "/usr/bin/haproxy"]) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync("sh", ["-c", "command -v haproxy"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export interface FleetServer {
  readonly name: string;
  readonly port: number;
  /** The server's own /mcp, bypassing the balancer. */
  readonly url: string;
  readonly child: ChildProcess;
  /** The exit code (null for a signal). */
  readonly exited: Promise<number | null>;
  /** The `Cairn-Instance` this process answers with. */
  readonly instance: string;
  /** What it wrote on stderr so far. */
  stderr(): string;
}

/** One request as HAProxy logged it when it ended. */
export interface BalancedRequest {
  /** The x-test-call header the client sent ("-" when none). */
  call: string;
  /** The server it went to last ("<NOSRV>" when none). */
  server: string;
  status: number;
  /** Retries HAProxy made ("+N" when it redispatched to another server). */
  retries: string;
  /** How the session ended, HAProxy's four characters ("----" when all went well; "SH--": the server hung up). */
  state: string;
}

export interface FleetOptions {
  /** How many servers. @default 3 */
  servers?: number;
  /** Lines added to every server's [workspace] table. */
  workspace?: string;
  /** TOML after the [workspace] table (tables only), the same for every server. */
  toml?: string;
  /** Environment of every server. */
  env?: Record<string, string>;
  /** Files copied beside the servers' cairn.toml (their default import root), by name: the path to copy. */
  files?: Record<string, string>;
}

export interface Fleet {
  /** The balancer's /mcp. */
  readonly url: string;
  readonly servers: FleetServer[];
  /** Every request HAProxy logged so far, in the order they ended. */
  requests(): BalancedRequest[];
  /** The request HAProxy logged with x-test-call `call`, once it has logged it (it logs when the response ends). */
  logged(call: string): Promise<BalancedRequest>;
  /** Resolves when HAProxy next reports `server` (s1, s2, ...) `state`; call it before what causes the change. */
  nextState(server: string, state: "UP" | "DOWN"): Promise<void>;
  /** Starts server `index` again on its port (after it exited) and resolves once its /readyz answers 200. */
  restart(index: number): Promise<FleetServer>;
  /** HAProxy's stderr (its log) so far. */
  haproxyLog(): string;
  close(): Promise<void>;
}

/** Starts the servers one after another (the first migrates the schema), each ready, then HAProxy in front. */
export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const haproxy = haproxyPath();
  if (haproxy === undefined) throw new Error("haproxy is not installed: apt-get install -y haproxy (.ci/run does)");
  const root = mkdtempSync(join(tmpdir(), "cairn-fleet-"));
  const catalog = freshPostgresUrl();
  const s3 = freshS3();
  const config = join(root, "cairn.toml");
  for (const [name, from] of Object.entries(options.files ?? {})) copyFileSync(from, join(root, name));
  writeFileSync(
    config,
    `[workspace]
catalog = "${catalog}"
blobs = "s3://${s3.bucket}/${s3.prefix}"
endpoint = "${s3.endpoint}"
region = "${s3.region}"
path_style = true
${options.workspace ?? ""}
${options.toml ?? ""}
`,
  );
  const env = {
    ...process.env,
    CAIRN_LOG: "warn",
    CAIRN_TOKEN: FLEET_TOKEN,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    ...options.env,
  };
  const count = options.servers ?? 3;
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await stablePort());

  const startServer = async (index: number): Promise<FleetServer> => {
    const name = `s${index + 1}`;
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    const port = ports[index] as number;
    const child = spawn(
      process.execPath,
      [MAIN, "serve", "--config", config, "--transport", "http", "--port", String(port), "--workspace", dir],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const instance = await new Promise<string>((resolve, reject) => {
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = INSTANCE_LINE.exec(stderr);
        if (match) resolve(match[2] as string);
      });
      child.once("exit", (code) => reject(new Error(`cairn serve ${name} exited ${code}: ${stderr}`)));
    });
    const server: FleetServer = {
      name,
      port,
      url: `http://127.0.0.1:${port}/mcp`,
      child,
      exited,
      instance,
      stderr: () => stderr,
    };
    await untilReady(server);
    return server;
  };

  const servers: FleetServer[] = [];
  for (let i = 0; i < count; i++) servers.push(await startServer(i));

  const front = await stablePort();
  const cfg = join(root, "haproxy.cfg");
  writeFileSync(cfg, haproxyConfig(front, ports));
  const proxy = spawn(haproxy, ["-db", "-f", cfg], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const lines: string[] = [];
  const waiters: { server: string; state: string; resolve: () => void }[] = [];
  const requests: BalancedRequest[] = [];
  let requestWaiters: { call: string; resolve: (r: BalancedRequest) => void }[] = [];
  let partial = "";
  proxy.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
    partial += chunk.toString();
    const complete = partial.split("\n");
    partial = complete.pop() ?? "";
    for (const line of complete) {
      lines.push(line);
      const m = /^call=(\S+) server=(\S+) status=(-?\d+) retries=(\S+) state=(\S+)$/.exec(line);
      if (m !== null) {
        const request = {
          call: m[1] as string,
          server: m[2] as string,
          status: Number(m[3]),
          retries: m[4] as string,
          state: m[5] as string,
        };
        requests.push(request);
        for (const waiter of requestWaiters) if (waiter.call === request.call) waiter.resolve(request);
        requestWaiters = requestWaiters.filter((w) => w.call !== request.call);
        continue;
      }
      const change = /^Server cairn\/(\S+) is (UP|DOWN)/.exec(line);
      if (change === null) continue;
      for (const waiter of waiters.splice(0)) {
        if (waiter.server === change[1] && waiter.state === change[2]) waiter.resolve();
        else waiters.push(waiter);
      }
    }
  });
  const proxyExited = new Promise<void>((resolve) => proxy.once("exit", () => resolve()));
  await untilAnswers(`http://127.0.0.1:${front}/healthz`, () => log);

  return {
    url: `http://127.0.0.1:${front}/mcp`,
    servers,
    requests: () => [...requests],
    logged: (call) => {
      const found = requests.find((r) => r.call === call);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => requestWaiters.push({ call, resolve }));
    },
    nextState: (server, state) => new Promise((resolve) => waiters.push({ server, state, resolve })),
    async restart(index) {
      const server = await startServer(index);
      servers[index] = server;
      return server;
    },
    haproxyLog: () => log,
    async close() {
      proxy.kill("SIGTERM");
      await proxyExited;
      await Promise.all(
        servers.map(async (server) => {
          if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
          await server.exited;
        }),
      );
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * The balancer's configuration, as the README's "Running several servers" shows it: round-robin without stickiness
 * for 2026-07-28 requests, a 2025 session kept on the server that opened it (its Mcp-Session-Id in a stick table),
 * health through /readyz, and retries only where nothing ran (a connection that failed, or Cairn's own 503).
 */
function haproxyConfig(front: number, ports: number[]): string {
  return `global
  log stderr format raw local0 info
  maxconn 1024

defaults
  mode http
  log global
  log-format "call=%[capture.req.hdr(0)] server=%s status=%ST retries=%rc state=%tsc"
  timeout connect 2s
  timeout client 150s
  timeout server 150s
  timeout check 6s
  retries 3
  option redispatch 1
  retry-on conn-failure 503

frontend mcp
  bind 127.0.0.1:${front}
  http-request capture req.hdr(x-test-call) len 64
  default_backend cairn

backend cairn
  balance roundrobin
  stick-table type string len 64 size 100k expire 30m
  stick match req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
  http-check expect status 200
  default-server check inter 500ms fall 1 rise 1
${ports.map((port, i) => `  server s${i + 1} 127.0.0.1:${port}`).join("\n")}
`;
}

/** Asks the server's own /readyz until it answers 200 (its first answer opens the workspace). */
async function untilReady(server: FleetServer): Promise<void> {
  await untilAnswers(`http://127.0.0.1:${server.port}/readyz`, server.stderr);
}

async function untilAnswers(url: string, output: () => string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    try {
      const response = await fetch(url);
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} never answered 200: ${output()}`);
}

/**
 * A failed request as a client sees it: the HTTP status and Cairn's error code when there was an answer, or
 * `closed` when the connection closed without one (HAProxy closes a keep-alive client connection so when the server
 * it sent the request to dies before answering: the client may send it again if it is safe to repeat).
 */
export interface Failure {
  status?: number;
  code?: string;
  closed?: boolean;
  message: string;
}

/** What a client call threw, classified: an HTTP status (and Cairn's data.code) or a failed connection. */
export function failureOf(error: unknown): Failure {
  const data = (error as { data?: { status?: unknown; text?: unknown } }).data;
  const cause = (error as { cause?: { message?: string; code?: string } }).cause;
  const message = `${error instanceof Error ? error.message : String(error)}${cause ? ` (${cause.code ?? ""} ${cause.message ?? ""})` : ""}`;
  if (typeof data?.status !== "number") {
    const closed = cause?.code === "UND_ERR_SOCKET" || cause?.code === "ECONNRESET";
    return closed ? { closed, message } : { message };
  }
  let code: string | undefined;
  try {
    const body = JSON.parse(String(data.text)) as { error?: { data?: { code?: string } } };
    code = body.error?.data?.code;
  } catch {
    // The balancer's own page, not Cairn's JSON.
  }
  return { status: data.status, ...(code === undefined ? {} : { code }), message };
}

/**
 * Failures a client may retry a request after, when repeating it is safe (a create, a write with expected_version):
 * the balancer found no server or lost it (502, 503, 504; Cairn's own 503 DRAINING means nothing ran), or the
 * connection closed without an answer.
 */
export function isRetriable(failure: Failure): boolean {
  return failure.status === 502 || failure.status === 503 || failure.status === 504 || failure.closed === true;
}

export interface FleetClient {
  /** The `Cairn-Instance` of the last response this client got. */
  readonly lastInstance: string | undefined;
  /** Calls `name` with the header x-test-call: `call` (HAProxy logs it); throws what the transport throws. */
  call(name: string, args: Record<string, unknown>, call?: string): Promise<ToolText & { instance: string }>;
  listTools(call?: string): Promise<{ names: string[]; instance: string }>;
  close(): Promise<void>;
}

/** A v2 client pinned to 2026-07-28 with the fleet's token; each response's `Cairn-Instance` is noted. */
export async function fleetClient(url: string, token = FLEET_TOKEN): Promise<FleetClient> {
  let current: string | undefined;
  let last: string | undefined;
  const fetchWithCall = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    if (current !== undefined) headers.set("x-test-call", current);
    const response = await fetch(input, { ...init, headers });
    last = response.headers.get("cairn-instance") ?? undefined;
    return response;
  };
  const client = new ModernClient(
    { name: "fleet-tests", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernHttp(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: fetchWithCall,
    }),
  );
  const answered = () => {
    if (last === undefined) throw new Error("the response carried no Cairn-Instance header");
    return last;
  };
  return {
    get lastInstance() {
      return last;
    },
    async call(name, args, call) {
      current = call;
      last = undefined;
      try {
        const result = await client.callTool({ name, arguments: args }, { timeout: 120_000 });
        return { ...toolText(result as { content?: unknown; isError?: unknown }), instance: answered() };
      } finally {
        current = undefined;
      }
    },
    async listTools(call) {
      current = call;
      last = undefined;
      try {
        const { tools } = await client.listTools(undefined, { cacheMode: "refresh" });
        return { names: tools.map((t) => t.name), instance: answered() };
      } finally {
        current = undefined;
      }
    },
    close: () => client.close(),
  };
}

/** Resolves once `path` exists (watching its directory: an event, not a poll). */
export function fileAppears(path: string): Promise<void> {
  const dir = join(path, "..");
  return new Promise((resolve) => {
    const watcher = watch(dir, () => {
      if (existsSync(path)) {
        watcher.close();
        resolve();
      }
    });
    if (existsSync(path)) {
      watcher.close();
      resolve();
    }
  });
}

/** One built `cairn serve --transport http` on its own, its stderr watched line by line. */
export interface Served {
  readonly url: string;
  readonly port: number;
  readonly instance: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** Resolves once stderr has a line matching `pattern` (already or later). */
  line(pattern: RegExp): Promise<string>;
}

/** Starts `cairn serve --transport http` with `args` (a free port unless one is given) and the fleet's token. */
export async function startServe(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [MAIN, "serve", "--transport", "http", "--port", "0", ...args], {
    env: { ...process.env, CAIRN_LOG: "warn", CAIRN_TOKEN: FLEET_TOKEN, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  let waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const match = (pattern: RegExp) => stderr.split("\n").find((l) => pattern.test(l));
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    waiters = waiters.filter((w) => {
      const found = match(w.pattern);
      if (found === undefined) return true;
      w.resolve(found);
      return false;
    });
  });
  const started = await new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const m = INSTANCE_LINE.exec(stderr);
      if (m) resolve(m);
    };
    child.stderr?.on("data", check);
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
  const url = started[1] as string;
  return {
    url,
    port: Number(new URL(url).port),
    instance: started[2] as string,
    child,
    exited,
    stderr: () => stderr,
    line: (pattern) => {
      const found = match(pattern);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ pattern, resolve }));
    },
  };
}
