// Cairn's upstream client against both eras of MCP (decision 0262): a 2026-07-28 server on SDK v2 (the modern.mjs
// fixture, over stdio and Streamable HTTP) and the 2025 servers server-everything and server-memory (SDK v1). Each
// one is connected with `auto` negotiation, listed, called, held to its reply limit and its timeout, and reconnected
// after it died. Every server is a real child process; nothing is mocked.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { CairnError } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import { readTraceContext } from "../../src/upstream/trace-context.js";
import { createUpstreamManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";
import { caught } from "../helpers/caught.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => join(here, "../fixtures/servers", name);
const require = createRequire(import.meta.url);
const everythingEntry = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
const memoryEntry = join(dirname(require.resolve("@modelcontextprotocol/server-memory/package.json")), "dist/index.js");
const quiet = () => createLogger("upstream", () => {});

/** Bytes of a reply past the limit the eras' tests set (64 KiB): enough for every tool list, not for this. */
const LIMIT = 64 * 1024;
const BIG = 100_000;

/** A started upstream: its config for Cairn, how many processes Cairn started (stdio), how to end one. */
interface Started {
  config: ServerConfig;
  starts(): number[];
  stop(): Promise<void>;
}

interface Era {
  name: string;
  protocol: RegExp;
  start(extra: Partial<ServerConfig>): Promise<Started>;
  /** A call that answers `text`, and how to read it back. */
  echo(text: string): { tool: string; args: Record<string, unknown> };
  read(result: { content: unknown[] }): string;
  /** A call that does not answer within a second, if the server has one. */
  slow?: { tool: string; args: Record<string, unknown> };
  /** How the server restarts after it died, if the test can make it die. */
  stdio: boolean;
}

const textOf = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;
const children: ChildProcess[] = [];

/** A stdio server started through counted.mjs, which appends each process's pid to a file. */
function counted(args: string[], extra: Partial<ServerConfig>, env: Record<string, string> = {}): Started {
  const startsFile = join(mkdtempSync(join(tmpdir(), "cairn-starts-")), "starts");
  writeFileSync(startsFile, "");
  const config = {
    command: process.execPath,
    args: [fixture("counted.mjs"), ...args],
    env: { STARTS_FILE: startsFile, ...env },
    timeout_ms: 60_000,
    allow: [],
    deny: [],
    ...extra,
  } as ServerConfig;
  const starts = () =>
    readFileSync(startsFile, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map(Number);
  return { config, starts, stop: async () => {} };
}

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const port = (probe.address() as { port: number }).port;
  probe.close();
  await once(probe, "close");
  return port;
}

/** Spawns an HTTP server and resolves once it prints `ready` on stdout or stderr. */
async function spawnHttp(args: string[], env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    const look = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("listening on port")) resolve();
    };
    child.stdout?.on("data", look);
    child.stderr?.on("data", look);
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited (${code}): ${seen}`)));
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

function http(url: string, extra: Partial<ServerConfig>): ServerConfig {
  return { url, headers: {}, timeout_ms: 60_000, allow: [], deny: [], ...extra } as ServerConfig;
}

const modernEcho = (text: string) => ({ tool: "echo", args: { text } });
const everythingEcho = (text: string) => ({ tool: "echo", args: { message: text } });
const everythingSlow = { tool: "trigger-long-running-operation", args: { duration: 30, steps: 1 } };

const ERAS: Era[] = [
  {
    name: "2026-07-28 over stdio (SDK v2 serveStdio)",
    protocol: /^2026-07-28$/,
    start: async (extra) => counted([fixture("modern.mjs")], extra),
    echo: modernEcho,
    read: textOf,
    slow: { tool: "hang", args: {} },
    stdio: true,
  },
  {
    name: "2026-07-28 over Streamable HTTP (SDK v2 createMcpHandler)",
    protocol: /^2026-07-28$/,
    start: async (extra) => {
      const port = await freePort();
      const child = await spawnHttp([fixture("modern.mjs"), "--http", "--port", String(port)], {});
      return { config: http(`http://127.0.0.1:${port}/mcp`, extra), starts: () => [], stop: () => stop(child) };
    },
    echo: modernEcho,
    read: textOf,
    slow: { tool: "hang", args: {} },
    stdio: false,
  },
  {
    name: "2025 server-everything over stdio (SDK v1)",
    protocol: /^2025-/,
    start: async (extra) => counted([everythingEntry, "stdio"], extra),
    echo: everythingEcho,
    read: (result) => textOf(result).replace(/^Echo: /, ""),
    slow: everythingSlow,
    stdio: true,
  },
  {
    name: "2025 server-everything over Streamable HTTP (SDK v1)",
    protocol: /^2025-/,
    start: async (extra) => {
      const port = await freePort();
      const child = await spawnHttp(["--import", fixture("loopback-only.mjs"), everythingEntry, "streamableHttp"], {
        PORT: String(port),
      });
      return { config: http(`http://127.0.0.1:${port}/mcp`, extra), starts: () => [], stop: () => stop(child) };
    },
    echo: everythingEcho,
    read: (result) => textOf(result).replace(/^Echo: /, ""),
    slow: everythingSlow,
    stdio: false,
  },
  {
    name: "2025 server-memory over stdio (SDK v1)",
    protocol: /^2025-/,
    start: async (extra) =>
      counted([memoryEntry], extra, {
        MEMORY_FILE_PATH: join(mkdtempSync(join(tmpdir(), "cairn-memory-")), "memory.jsonl"),
      }),
    echo: (text) => ({
      tool: "create_entities",
      args: { entities: [{ name: `e${Math.random()}`, entityType: "note", observations: [text] }] },
    }),
    read: (result) => {
      const reply = JSON.parse(textOf(result)) as { observations: string[] }[];
      return reply[0]?.observations[0] ?? "";
    },
    stdio: true,
  },
];

let manager: UpstreamManager | undefined;
let started: Started | undefined;
afterEach(async () => {
  await manager?.close();
  manager = undefined;
  await started?.stop();
  started = undefined;
  await Promise.all(children.splice(0).map(stop));
});

describe.each(ERAS)("an upstream speaking $name", (era) => {
  it("is connected with auto negotiation, listed and called, and a stdio one is started once", async () => {
    started = await era.start({});
    manager = createUpstreamManager({ up: started.config }, { logger: quiet() });
    await manager.start();
    const [status] = manager.list();
    expect(status?.status).toBe("ready");
    expect(status?.tools.length).toBeGreaterThan(0);
    expect(manager.protocolVersion("up")).toMatch(era.protocol);
    const call = era.echo("hello");
    expect(era.read(await manager.callTool("up", call.tool, call.args))).toBe("hello");
    // The server/discover probe ran on the server's own process: no second one was started for it.
    if (era.stdio) expect(started.starts()).toHaveLength(1);
  });

  it("fails a reply over max_reply_bytes with TOO_LARGE and goes on answering", async () => {
    started = await era.start({ max_reply_bytes: LIMIT });
    manager = createUpstreamManager({ up: started.config }, { logger: quiet() });
    const big = era.echo("x".repeat(BIG));
    const error = await caught(manager.callTool("up", big.tool, big.args));
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toContain(`more than ${LIMIT} bytes`);
    const small = era.echo("still here");
    expect(era.read(await manager.callTool("up", small.tool, small.args))).toBe("still here");
    expect(manager.list()[0]?.status).toBe("ready");
  });

  it.runIf(era.slow !== undefined)(
    "cancels a call past timeout_ms with TOOL_TIMEOUT and goes on answering",
    async () => {
      const slow = era.slow as { tool: string; args: Record<string, unknown> };
      started = await era.start({ timeout_ms: 300 });
      manager = createUpstreamManager({ up: started.config }, { logger: quiet() });
      const error = await caught(manager.callTool("up", slow.tool, slow.args));
      expect(error.code).toBe("TOOL_TIMEOUT");
      expect(error.message).toContain("300 ms");
      const call = era.echo("after the timeout");
      expect(era.read(await manager.callTool("up", call.tool, call.args))).toBe("after the timeout");
    },
  );

  it("reconnects after the server died, in the era it learnt, with one process per connection", async () => {
    started = await era.start({});
    manager = createUpstreamManager({ up: started.config }, { logger: quiet() });
    await manager.start();
    const protocol = manager.protocolVersion("up");
    if (era.stdio) {
      const [pid] = started.starts();
      process.kill(pid as number, "SIGKILL");
      while (manager.list()[0]?.status === "ready") await new Promise((resolve) => setTimeout(resolve, 10));
    } else {
      const first = children.pop() as ChildProcess;
      const url = new URL((started.config as { url: string }).url);
      await stop(first);
      const down = era.echo("nobody");
      expect((await caught(manager.callTool("up", down.tool, down.args))).code).toBe("UPSTREAM_UNAVAILABLE");
      const args = era.name.includes("everything")
        ? ["--import", fixture("loopback-only.mjs"), everythingEntry, "streamableHttp"]
        : [fixture("modern.mjs"), "--http", "--port", url.port];
      await spawnHttp(args, { PORT: url.port });
    }
    const call = era.echo("back");
    expect(era.read(await manager.callTool("up", call.tool, call.args))).toBe("back");
    expect(manager.protocolVersion("up")).toBe(protocol);
    if (era.stdio) expect(started.starts()).toHaveLength(2);
  });
});

describe("a 2026-07-28 upstream that needs input mid-call", () => {
  it("is refused with TOOL_FAILED naming the server and what it asked, never answered for the person", async () => {
    manager = createUpstreamManager(
      { raw: counted([fixture("raw-modern.mjs")], {}).config, modern: counted([fixture("modern.mjs")], {}).config },
      { logger: quiet() },
    );
    await manager.start();
    expect(manager.protocolVersion("raw")).toBe("2026-07-28");
    // A server that asks though Cairn declared no elicitation: its question is shown, not answered.
    const asked = await caught(manager.callTool("raw", "ask", {}));
    expect(asked.code).toBe("TOOL_FAILED");
    expect(asked.message).toContain("raw.ask asked for input");
    expect(asked.message).toContain("Type the password of the production database");
    expect(asked.data?.input_required).toEqual([
      { method: "elicitation/create", message: "Type the password of the production database" },
    ]);
    // An SDK server refuses on its own (-32021: no elicitation declared); Cairn says why in the same words.
    const confirm = await caught(manager.callTool("modern", "confirm", { what: "deploy" }));
    expect(confirm.code).toBe("TOOL_FAILED");
    expect(confirm.message).toContain("modern.confirm asked for input");
    expect(confirm.message).toContain("elicitation/create");
    // Both connections live on.
    expect(manager.list().map((s) => s.status)).toEqual(["ready", "ready"]);
    expect(textOf(await manager.callTool("modern", "pid", {}))).toMatch(/^\d+$/);
  });
});

describe("the tool list of a 2026-07-28 upstream", () => {
  /** A 20-call session: 15 calls of listed tools and 5 of names the server does not offer. */
  async function session(ttlMs: number): Promise<Record<string, number>> {
    manager = createUpstreamManager(
      { up: counted([fixture("modern.mjs"), "--ttl-ms", String(ttlMs)], {}).config },
      { logger: quiet() },
    );
    for (let i = 0; i < 20; i++) {
      if (i % 4 === 3) {
        expect((await caught(manager.callTool("up", `missing_${i}`, {}))).code).toBe("TOOL_NOT_FOUND");
      } else {
        expect(textOf(await manager.callTool("up", "echo", { text: String(i) }))).toBe(String(i));
      }
    }
    const counts = (await manager.callTool("up", "counts", {})).structuredContent as Record<string, number>;
    await manager.close();
    manager = undefined;
    return counts;
  }

  it("is listed once in a 20-call session while its ttlMs holds, and again on each unknown name without one", async () => {
    const fresh = await session(60_000);
    const stale = await session(0);
    expect(fresh["tools/list"]).toBe(1);
    expect(stale["tools/list"]).toBe(6);
    // The probe was the only other request besides the calls.
    expect(fresh["server/discover"]).toBe(1);
    expect(fresh["tools/call"]).toBe(16);
  });
});

describe("trace context", () => {
  it("reaches a 2026-07-28 upstream as a child span of the run's traceparent, on stdio and HTTP", async () => {
    const port = await freePort();
    await spawnHttp([fixture("modern.mjs"), "--http", "--port", String(port)], {});
    manager = createUpstreamManager(
      { stdio: counted([fixture("modern.mjs")], {}).config, http: http(`http://127.0.0.1:${port}/mcp`, {}) },
      { logger: quiet() },
    );
    const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "cairn=1" };
    for (const server of ["stdio", "http"]) {
      const result = await manager.callTool(server, "echo", { text: "t" }, { trace });
      const meta = (result.structuredContent as { meta: Record<string, unknown> }).meta;
      const received = readTraceContext(meta);
      expect(received?.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
      expect(received?.traceparent).not.toBe(trace.traceparent);
      expect(received?.tracestate).toBe("cairn=1");
    }
    // Without a trace, the call carries none.
    const bare = await manager.callTool("stdio", "echo", { text: "t" });
    expect(readTraceContext((bare.structuredContent as { meta: unknown }).meta)).toBeUndefined();
  });
});

describe("a 2025 upstream strict about the handshake", () => {
  it("that exits on the probe is started once more with initialize alone, and stays so at reconnections", async () => {
    const strict = counted([fixture("strict-legacy.mjs"), "--exit"], {});
    started = strict;
    manager = createUpstreamManager({ strict: strict.config }, { logger: quiet() });
    await manager.start();
    expect(manager.list()[0]?.status).toBe("ready");
    expect(manager.protocolVersion("strict")).toMatch(/^2025-/);
    expect(strict.starts()).toHaveLength(2);
    const pid = Number(textOf(await manager.callTool("strict", "pid", {})));
    process.kill(pid, "SIGKILL");
    while (manager.list()[0]?.status === "ready") await new Promise((resolve) => setTimeout(resolve, 10));
    expect(Number(textOf(await manager.callTool("strict", "pid", {})))).not.toBe(pid);
    // The era was remembered: the reconnection sent no probe, so the server did not exit on it.
    expect(strict.starts()).toHaveLength(3);
  });

  it("that never answers the probe gets initialize on the same process after the probe's deadline", async () => {
    const strict = counted([fixture("strict-legacy.mjs"), "--silent"], { startup_timeout_ms: 2000 });
    started = strict;
    manager = createUpstreamManager({ strict: strict.config }, { logger: quiet() });
    await manager.start();
    expect(manager.list()[0]?.status).toBe("ready");
    expect(manager.protocolVersion("strict")).toMatch(/^2025-/);
    expect(strict.starts()).toHaveLength(1);
  });
});

describe("list changes of a 2026-07-28 upstream", () => {
  it.each(["stdio", "http"])(
    "arrive on its subscriptions/listen stream over %s and end the list's ttlMs",
    async (kind) => {
      let config: ServerConfig;
      if (kind === "stdio") {
        config = counted([fixture("modern.mjs"), "--ttl-ms", "60000"], {}).config;
      } else {
        const port = await freePort();
        await spawnHttp([fixture("modern.mjs"), "--http", "--port", String(port), "--ttl-ms", "60000"], {});
        config = http(`http://127.0.0.1:${port}/mcp`, {});
      }
      manager = createUpstreamManager({ up: config }, { logger: quiet() });
      await manager.start();
      const up = manager;
      const grown = new Promise<void>((resolve) => {
        up.onChange(() => {
          if (up.list()[0]?.tools.some((tool) => tool.name === "grown")) resolve();
        });
      });
      await manager.callTool("up", "grow", {});
      await grown;
      expect(textOf(await manager.callTool("up", "grown", {}))).toBe("grown");
      const counts = (await manager.callTool("up", "counts", {})).structuredContent as Record<string, number>;
      expect(counts["subscriptions/listen"]).toBe(1);
      // Listed at the connection and once on the change, the ttlMs of the first listing notwithstanding.
      expect(counts["tools/list"]).toBe(2);
    },
  );
});

describe("a 2026-07-28 upstream's ttlMs", () => {
  it.each([
    ["60000", true],
    ["8640000000000", true],
    ["0", false],
  ])("of %s keeps the list fresh: %s (at most 24 h)", async (ttl, fresh) => {
    manager = createUpstreamManager(
      { raw: counted([fixture("raw-modern.mjs"), "--ttl", ttl], {}).config },
      { logger: quiet() },
    );
    for (let i = 0; i < 3; i++) {
      expect((await caught(manager.callTool("raw", `missing_${i}`, {}))).code).toBe("TOOL_NOT_FOUND");
    }
    expect(textOf(await manager.callTool("raw", "lists", {}))).toBe(fresh ? "1" : "4");
  });

  it.each(["-5", '"60000"', "null", "1.5", "1e300"])(
    "of %s is an invalid list: the server is unavailable, naming the field, and its neighbour is not",
    async (ttl) => {
      manager = createUpstreamManager(
        {
          raw: counted([fixture("raw-modern.mjs"), "--ttl", ttl], {}).config,
          modern: counted([fixture("modern.mjs")], {}).config,
        },
        { logger: quiet() },
      );
      await manager.start();
      const [raw, modern] = manager.list();
      expect(raw?.status).toBe("unavailable");
      expect(raw?.cause).toContain("ttlMs");
      expect(modern?.status).toBe("ready");
      expect((await caught(manager.callTool("raw", "lists", {}))).code).toBe("UPSTREAM_UNAVAILABLE");
    },
  );
});
