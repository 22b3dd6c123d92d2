// UpstreamManager against real MCP servers: fixture servers and @modelcontextprotocol/server-everything/-memory.
// Every server is a real child process (or a real HTTP server); nothing is mocked.
import { type ChildProcess, spawn } from "node:child_process";
import { getEventListeners, once } from "node:events";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { CairnError } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import { MAX_LISTED_TOOLS } from "../../src/upstream/upstream-connection.js";
import { createUpstreamManager as createManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";
import { caught } from "../helpers/caught.js";

const here = dirname(fileURLToPath(import.meta.url));
// The warnings these tests provoke (crashes, timeouts, truncated listings) are expected: they go to a quiet logger
// unless a test passes its own to read them.
const createUpstreamManager: typeof createManager = (servers, options) =>
  createManager(servers, { logger: createLogger("upstream", () => {}), ...options });
const fixture = (name: string) => join(here, "../fixtures/servers", name);
const require = createRequire(import.meta.url);
const everythingEntry = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
const memoryEntry = join(dirname(require.resolve("@modelcontextprotocol/server-memory/package.json")), "dist/index.js");

function stdio(args: string[], extra: Partial<ServerConfig> = {}): ServerConfig {
  return {
    command: process.execPath,
    args,
    env: {},
    timeout_ms: 60_000,
    allow: [],
    deny: [],
    ...extra,
  } as ServerConfig;
}

/** server-memory keeps its graph in a file: give each test its own, in a fresh temp directory. */
function memoryFile(): string {
  return join(mkdtempSync(join(tmpdir(), "cairn-memory-")), "memory.jsonl");
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const textOf = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

let manager: UpstreamManager | undefined;
afterEach(async () => {
  await manager?.close();
  manager = undefined;
});

describe("UpstreamManager over stdio", () => {
  it("connects every server, reports a broken one as unavailable and keeps the others", async () => {
    manager = createUpstreamManager({
      memory: stdio([memoryEntry], { env: { MEMORY_FILE_PATH: memoryFile() } }),
      missing: { ...stdio([]), command: "cairn-no-such-command" } as ServerConfig,
      exits: stdio(["-e", "process.exit(1)"]),
    });
    await manager.start();
    const byName = Object.fromEntries(manager.list().map((s) => [s.server, s]));
    expect(byName.memory?.status).toBe("ready");
    expect(byName.memory?.tools.map((t) => t.name)).toContain("create_entities");
    expect(byName.missing).toMatchObject({ status: "unavailable", tools: [] });
    expect(byName.missing?.cause).toMatch(/not found on PATH/);
    expect(byName.exits?.status).toBe("unavailable");
    const error = await caught(manager.callTool("missing", "anything", {}));
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(error.message).toMatch(/missing.*not found on PATH/);
  });

  it("calls a tool of @modelcontextprotocol/server-memory and returns the raw result", async () => {
    manager = createUpstreamManager({ memory: stdio([memoryEntry], { env: { MEMORY_FILE_PATH: memoryFile() } }) });
    await manager.start();
    const result = await manager.callTool("memory", "read_graph", {});
    expect(result.isError).toBeFalsy();
    expect(result.content.length).toBeGreaterThan(0);
  });

  it("applies allow and deny to the list and refuses hidden tools with TOOL_NOT_FOUND", async () => {
    manager = createUpstreamManager({
      crash: stdio([fixture("crashing.mjs")], { allow: ["echo", "crash", "pid"], deny: ["crash"] }),
    });
    await manager.start();
    expect(
      manager
        .list()[0]
        ?.tools.map((t) => t.name)
        .sort(),
    ).toEqual(["echo", "pid"]);
    expect((await caught(manager.callTool("crash", "crash", {}))).code).toBe("TOOL_NOT_FOUND");
    expect((await caught(manager.callTool("crash", "fail", {}))).code).toBe("TOOL_NOT_FOUND");
    expect((await caught(manager.callTool("crash", "nope", {}))).code).toBe("TOOL_NOT_FOUND");
    expect((await caught(manager.callTool("nobody", "echo", {}))).code).toBe("TOOL_NOT_FOUND");
  });

  it("turns a server dying mid-call into UPSTREAM_UNAVAILABLE and reconnects on the next call", async () => {
    manager = createUpstreamManager({ crash: stdio([fixture("crashing.mjs")]) });
    await manager.start();
    const changes: string[] = [];
    manager.onChange((server) => changes.push(server));
    const error = await caught(manager.callTool("crash", "crash", {}));
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(manager.list()[0]?.status).toBe("unavailable");
    expect(manager.list()[0]?.tools.length).toBeGreaterThan(0);
    const again = await manager.callTool("crash", "echo", { text: "back" });
    expect(textOf(again)).toBe("back");
    expect(manager.list()[0]?.status).toBe("ready");
    expect(changes).toContain("crash");
  });

  it("serves concurrent calls and shares one reconnect among them", async () => {
    manager = createUpstreamManager({ crash: stdio([fixture("crashing.mjs")]) });
    await manager.start();
    const texts = await Promise.all(
      Array.from({ length: 40 }, (_, i) => manager?.callTool("crash", "echo", { text: `n${i}` })),
    );
    expect(texts.map((r) => (r ? textOf(r) : ""))).toEqual(Array.from({ length: 40 }, (_, i) => `n${i}`));
    await caught(manager.callTool("crash", "crash", {}));
    const pids = await Promise.all(Array.from({ length: 5 }, () => manager?.callTool("crash", "pid", {})));
    expect(new Set(pids.map((r) => (r ? textOf(r) : ""))).size).toBe(1);
  });

  it("returns an upstream isError result as it is", async () => {
    manager = createUpstreamManager({ crash: stdio([fixture("crashing.mjs")]) });
    await manager.start();
    const result = await manager.callTool("crash", "fail", {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/quota exceeded/);
  });

  it("sends upstream stderr to Cairn's log and never into a reply", async () => {
    const previous = process.env.CAIRN_LOG;
    process.env.CAIRN_LOG = "info";
    const lines: string[] = [];
    try {
      manager = createUpstreamManager(
        { crash: stdio([fixture("crashing.mjs")]) },
        { logger: createLogger("test", (line) => lines.push(line)) },
      );
      await manager.start();
      const error = await caught(manager.callTool("crash", "crash", {}));
      expect(JSON.stringify(error.toJSON())).not.toContain("secret-stderr-marker");
      expect(JSON.stringify(manager.list())).not.toContain("secret-stderr-marker");
      expect(lines.some((line) => line.includes("[test:crash]") && line.includes("secret-stderr-marker"))).toBe(true);
    } finally {
      process.env.CAIRN_LOG = previous;
    }
  });

  it("times out a call past timeout_ms with TOOL_TIMEOUT and keeps the server usable", async () => {
    manager = createUpstreamManager({ hang: stdio([fixture("hanging.mjs")], { timeout_ms: 300 }) });
    await manager.start();
    const error = await caught(manager.callTool("hang", "hang", {}));
    expect(error.code).toBe("TOOL_TIMEOUT");
    expect(error.message).toMatch(/300 ms.*timeout_ms/);
    const shorter = await caught(manager.callTool("hang", "hang", {}, { timeoutMs: 100 }));
    expect(shorter.message).toMatch(/100 ms/);
    expect(Number(textOf(await manager.callTool("hang", "pid", {})))).toBeGreaterThan(0);
  });

  it("stops a call when the caller's signal aborts", async () => {
    manager = createUpstreamManager({ hang: stdio([fixture("hanging.mjs")]) });
    await manager.start();
    const controller = new AbortController();
    const call = manager.callTool("hang", "hang", {}, { signal: controller.signal });
    controller.abort(new Error("run cancelled"));
    expect((await caught(call)).code).toBe("CANCELLED");
  });

  it("gives up on a server that does not initialize within connectTimeoutMs", async () => {
    const silent = stdio(["-e", "setInterval(() => {}, 1000)"]);
    manager = createUpstreamManager({ silent }, { connectTimeoutMs: 300 });
    await manager.start();
    expect(manager.list()[0]).toMatchObject({ status: "unavailable" });
    expect(manager.list()[0]?.cause).toMatch(/300 ms/);
  });

  it("gives up after the server's own startup_timeout_ms and names the key", async () => {
    manager = createUpstreamManager({
      stuck: stdio([fixture("hanging.mjs"), "--never-initialize"], { startup_timeout_ms: 300 }),
    });
    await manager.start();
    expect(manager.list()[0]).toMatchObject({ status: "unavailable" });
    expect(manager.list()[0]?.cause).toMatch(/300 ms \(startup_timeout_ms of \[servers\.stuck\]\)/);
    const error = await caught(manager.callTool("stuck", "hang", {}));
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(error.message).toMatch(/"stuck" is unavailable: no answer to initialize/);
  });

  it("ends a server still starting when closed, without waiting for its startup deadline", async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), "cairn-pid-")), "pid");
    manager = createUpstreamManager({
      stuck: stdio([fixture("hanging.mjs"), "--never-initialize"], {
        startup_timeout_ms: 3_600_000,
        env: { PID_FILE: pidFile },
      }),
    });
    const started = manager.start();
    while (!existsSync(pidFile)) await new Promise((resolve) => setTimeout(resolve, 20));
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(manager.list()[0]?.status).toBe("connecting");
    await manager.close();
    await started;
    expect(isAlive(pid)).toBe(false);
    expect(manager.list()[0]?.status).toBe("unavailable");
    manager = undefined;
  });

  it("reports a server still starting as connecting, and settled() waits for it", async () => {
    manager = createUpstreamManager({
      slow: stdio([fixture("slow-start.mjs"), "1000"]),
      crash: stdio([fixture("crashing.mjs")]),
    });
    const started = manager.start();
    expect(manager.list().map((s) => s.status)).toEqual(["connecting", "connecting"]);
    await manager.settled(["crash"]);
    expect(manager.list().find((s) => s.server === "crash")?.status).toBe("ready");
    await manager.settled();
    expect(manager.list().find((s) => s.server === "slow")?.status).toBe("ready");
    await started;
  });

  it("runs at most max_concurrency calls at once and queues the rest", async () => {
    manager = createUpstreamManager({ c: stdio([fixture("concurrency.mjs")], { max_concurrency: 2 }) });
    await manager.start();
    // Each call waits until two are running: with a limit of one it would never answer, with three the peak shows it.
    const calls = Array.from({ length: 6 }, () => manager?.callTool("c", "read_barrier", { target: 2 }));
    await Promise.all(calls);
    expect(JSON.parse(textOf(await manager.callTool("c", "peaks", {})))).toEqual({ read: 2, write: 0 });
  });

  it("runs tools not marked read-only one at a time, unless parallel_writes", async () => {
    manager = createUpstreamManager({
      serial: stdio([fixture("concurrency.mjs")]),
      parallel: stdio([fixture("concurrency.mjs")], { parallel_writes: true }),
    });
    await manager.start();
    await Promise.all(Array.from({ length: 8 }, () => manager?.callTool("serial", "write_step", {})));
    expect(JSON.parse(textOf(await manager.callTool("serial", "peaks", {}))).write).toBe(1);
    await Promise.all(Array.from({ length: 4 }, () => manager?.callTool("parallel", "write_barrier", { target: 4 })));
    expect(JSON.parse(textOf(await manager.callTool("parallel", "peaks", {}))).write).toBe(4);
  });

  it("keeps every write of 200 concurrent create_entities on server-memory with the defaults", async () => {
    manager = createUpstreamManager({ memory: stdio([memoryEntry], { env: { MEMORY_FILE_PATH: memoryFile() } }) });
    await manager.start();
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        manager?.callTool("memory", "create_entities", {
          entities: [{ name: `e${i}`, entityType: "test", observations: [] }],
        }),
      ),
    );
    const graph = await manager.callTool("memory", "read_graph", {});
    expect((graph.structuredContent as { entities: unknown[] }).entities).toHaveLength(200);
  });

  it("hangs one listener at most on the caller's signal however many calls share it", async () => {
    manager = createUpstreamManager({ c: stdio([fixture("concurrency.mjs")]) });
    await manager.start();
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const run = new AbortController();
      const calls = Array.from({ length: 50 }, () => manager?.callTool("c", "write_step", {}, { signal: run.signal }));
      expect(getEventListeners(run.signal, "abort").length).toBeLessThanOrEqual(1);
      await Promise.all(calls);
      expect(getEventListeners(run.signal, "abort").length).toBeLessThanOrEqual(1);
      // A queued call leaves the queue when its caller gives up.
      const stuck = manager.callTool("c", "write_barrier", { target: 2 }, { signal: run.signal });
      const queued = manager.callTool("c", "write_step", {}, { signal: run.signal });
      run.abort(new Error("run ended"));
      expect((await caught(stuck)).code).toBe("CANCELLED");
      expect((await caught(queued)).code).toBe("CANCELLED");
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  });

  it("leaves no child process behind after close, even with a call pending", async () => {
    manager = createUpstreamManager({ hang: stdio([fixture("hanging.mjs")]), crash: stdio([fixture("crashing.mjs")]) });
    await manager.start();
    const pids = [
      Number(textOf(await manager.callTool("hang", "pid", {}))),
      Number(textOf(await manager.callTool("crash", "pid", {}))),
    ];
    const pending = manager.callTool("hang", "hang", {}).catch((error: unknown) => error);
    await manager.close();
    expect(pids.map(isAlive)).toEqual([false, false]);
    expect((await pending) as CairnError).toBeInstanceOf(CairnError);
    expect(((await pending) as CairnError).code).toBe("UPSTREAM_UNAVAILABLE");
    expect((await caught(manager.callTool("hang", "pid", {}))).code).toBe("UPSTREAM_UNAVAILABLE");
    manager = undefined;
  });

  it("makes a second close wait until the first has ended every child", async () => {
    manager = createUpstreamManager({ hang: stdio([fixture("hanging.mjs")]) });
    await manager.start();
    const pid = Number(textOf(await manager.callTool("hang", "pid", {})));
    void manager.callTool("hang", "hang", {}).catch(() => {});
    const first = manager.close();
    await manager.close();
    expect(isAlive(pid)).toBe(false);
    await first;
    manager = undefined;
  });

  it("refreshes a stale tool list once before answering TOOL_NOT_FOUND", async () => {
    manager = createUpstreamManager({ odd: stdio([fixture("odd-names.mjs")]) });
    await manager.start();
    await manager.callTool("odd", "add_tool_silently", {});
    expect(manager.list()[0]?.tools.map((t) => t.name)).not.toContain("silent_tool");
    expect(textOf(await manager.callTool("odd", "silent_tool", {}))).toBe("silent");
    expect(manager.list()[0]?.tools.map((t) => t.name)).toContain("silent_tool");
  });

  // Broke: every listing counted as a change. Each call to a name the server lacks (a typo in a snippet) re-indexed
  // the server's whole catalog and, with gateway.direct, sent notifications/tools/list_changed to every client.
  it("tells listeners of a listing only when the tools changed", async () => {
    manager = createUpstreamManager({
      odd: stdio([fixture("odd-names.mjs")]),
      neighbour: stdio([fixture("crashing.mjs")]),
    });
    await manager.start();
    const changes: string[] = [];
    manager.onChange((server) => changes.push(server));
    for (let i = 0; i < 20; i++) {
      expect((await caught(manager.callTool("odd", `missing_${i}`, {}))).code).toBe("TOOL_NOT_FOUND");
    }
    expect(changes).toEqual([]);
    await manager.callTool("odd", "add_tool_silently", {});
    expect(textOf(await manager.callTool("odd", "silent_tool", {}))).toBe("silent");
    expect(changes).toEqual(["odd"]);
    expect(textOf(await manager.callTool("neighbour", "pid", {}))).toMatch(/^\d+$/);
  });

  it("follows notifications/tools/list_changed", async () => {
    manager = createUpstreamManager({ odd: stdio([fixture("odd-names.mjs")]) });
    await manager.start();
    const changed = new Promise<string>((resolve) => {
      manager?.onChange((server) => {
        if (manager?.list()[0]?.tools.some((t) => t.name === "late_tool")) resolve(server);
      });
    });
    await manager.callTool("odd", "add_tool", {});
    expect(await changed).toBe("odd");
    expect(textOf(await manager.callTool("odd", "late_tool", {}))).toBe("late");
  });

  it("lists thousands of tools from one server", async () => {
    manager = createUpstreamManager({ many: stdio([fixture("many-tools.mjs"), "3000"]) });
    await manager.start();
    expect(manager.list()[0]?.tools).toHaveLength(3000);
  });

  // Broke: tools/list was paged until the server stopped sending a nextCursor. A server that never stops filled
  // Cairn's heap: 2 GB within its startup deadline, and after one call to an unknown name (a listing with no
  // deadline) the process died out of memory within a minute. One page of 150,000 tools overflowed the stack.
  it("stops listing a server whose tools/list pages never end, and keeps it and its neighbours usable", async () => {
    manager = createUpstreamManager({
      start: stdio([fixture("endless-tools.mjs"), "--from-start"], { startup_timeout_ms: 600_000 }),
      empty: stdio([fixture("endless-tools.mjs"), "--empty-pages"], { startup_timeout_ms: 600_000 }),
      later: stdio([fixture("endless-tools.mjs"), "--after-first"]),
      small: stdio([fixture("endless-tools.mjs"), "--from-start"], { max_reply_bytes: 512 * 1024 }),
      wide: stdio([fixture("endless-tools.mjs"), "--one-page"]),
      neighbour: stdio([fixture("crashing.mjs")]),
    });
    await manager.start();
    const tools = () => Object.fromEntries(manager?.list().map((s) => [s.server, s.tools.length]) ?? []);
    expect(manager.list().map((s) => s.status)).toEqual(["ready", "ready", "ready", "ready", "ready", "ready"]);
    expect(tools().later).toBe(1);
    // A call to a name the list lacks lists again: that listing stops too.
    expect((await caught(manager.callTool("later", "missing", {}))).code).toBe("TOOL_NOT_FOUND");
    const counts = tools();
    for (const server of ["start", "empty", "later", "wide"]) {
      expect(counts[server]).toBeGreaterThan(0);
      expect(counts[server]).toBeLessThanOrEqual(MAX_LISTED_TOOLS);
    }
    // The tools of all pages are held to max_reply_bytes, as one reply is.
    expect(counts.small).toBeLessThan(2000);
    for (const server of ["start", "empty", "later", "small", "wide"]) {
      expect(textOf(await manager.callTool(server, "ok", {}))).toBe("ok");
    }
    expect(textOf(await manager.callTool("neighbour", "pid", {}))).toMatch(/^\d+$/);
  });
});

/** Starts server-everything in streamableHttp mode on 127.0.0.1 and a free port; resolves once it listens. */
async function startEverythingHttp(): Promise<{ child: ChildProcess; url: string }> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const port = (probe.address() as { port: number }).port;
  probe.close();
  await once(probe, "close");
  const child = spawn(process.execPath, ["--import", fixture("loopback-only.mjs"), everythingEntry, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  // The server announces readiness on stderr; the listener stays attached so the pipe keeps draining.
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("listening on port")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

const http = (url: string): ServerConfig => ({ url, headers: {}, timeout_ms: 30_000, allow: [], deny: [] });

describe("UpstreamManager over Streamable HTTP", () => {
  let server: { child: ChildProcess; url: string };

  beforeAll(async () => {
    server = await startEverythingHttp();
  });

  afterAll(() => stop(server.child));

  it("lists and calls the tools of server-everything over Streamable HTTP", async () => {
    manager = createUpstreamManager({ everything: http(server.url) });
    await manager.start();
    const [status] = manager.list();
    expect(status?.status).toBe("ready");
    expect(status?.tools.map((t) => t.name)).toContain("echo");
    const result = await manager.callTool("everything", "echo", { message: "over http" });
    expect(textOf(result)).toContain("over http");
  });

  it("reports an HTTP endpoint that refuses connections as unavailable", async () => {
    manager = createUpstreamManager({ gone: http("http://127.0.0.1:9/mcp") });
    await manager.start();
    expect(manager.list()[0]?.status).toBe("unavailable");
    expect((await caught(manager.callTool("gone", "echo", {}))).code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it("turns an HTTP server that went away into UPSTREAM_UNAVAILABLE", async () => {
    const doomed = await startEverythingHttp();
    manager = createUpstreamManager({ doomed: http(doomed.url) });
    await manager.start();
    expect(manager.list()[0]?.status).toBe("ready");
    await stop(doomed.child);
    const error = await caught(manager.callTool("doomed", "echo", { message: "anyone?" }));
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(manager.list()[0]?.status).toBe("unavailable");
  });
});

describe("UpstreamManager with server-everything over stdio", () => {
  it("calls echo and get-sum", async () => {
    manager = createUpstreamManager({ everything: stdio([everythingEntry, "stdio"]) });
    await manager.start();
    expect(manager.list()[0]?.status).toBe("ready");
    expect(textOf(await manager.callTool("everything", "echo", { message: "hi" }))).toContain("hi");
    const sum = await manager.callTool("everything", "get-sum", { a: 2, b: 3 });
    expect(textOf(sum)).toContain("5");
  });

  it("hands the long-running operation's progress notifications to onProgress", async () => {
    manager = createUpstreamManager({ everything: stdio([everythingEntry, "stdio"]) });
    await manager.start();
    const heard: unknown[] = [];
    const result = await manager.callTool(
      "everything",
      "trigger-long-running-operation",
      { duration: 0.3, steps: 3 },
      { onProgress: (progress) => heard.push(progress) },
    );
    expect(textOf(result)).toContain("Long running operation completed");
    // The SDK client drops a notification read in the same chunk as the reply (it runs notification handlers a
    // microtask later, after the reply has removed the call's progress handler): the last step may be missing.
    const steps = [1, 2, 3].map((progress) => ({ progress, total: 3 }));
    expect(heard.length, JSON.stringify(heard)).toBeGreaterThanOrEqual(2);
    expect(heard).toEqual(steps.slice(0, heard.length));
  });
});
