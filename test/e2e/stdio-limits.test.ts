// The built `cairn serve` over real stdio, driven line by line: a message over the stdio limit, a line that is not
// JSON or not JSON-RPC, each answered with a JSON-RPC error while the session goes on; the memory an oversized line
// costs; and how the process ends (stdin closed: 0; stdout broken: 1 with the reason on stderr). Issue 27.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_STDIO_MESSAGE_BYTES } from "../../src/server/transports/stdio-transport.js";
import { MAIN } from "../helpers/mcp-client.js";

const LIMIT = MAX_STDIO_MESSAGE_BYTES;
/** What V8 lets pile up in unreferenced Buffers before it collects (its external-memory soft limit). */
const V8_EXTERNAL_SLACK = 64 * 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "cairn-stdio-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are free-form in tests
type Reply = any;

/** `cairn serve` with its stdout read line by line and its stderr kept. */
class RawServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | null>;
  stderr = "";
  private readonly replies: Reply[] = [];
  private waiting: (() => void)[] = [];
  private partial = "";

  constructor(name: string) {
    this.child = spawn(process.execPath, [MAIN, "serve", "--workspace", join(dir, name)], {
      env: { ...process.env, CAIRN_LOG: "error" },
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.stdin.on("error", () => {});
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.child.stdout.on("data", (chunk: Buffer) => {
      const lines = (this.partial + chunk.toString()).split("\n");
      this.partial = lines.pop() ?? "";
      for (const line of lines) this.replies.push(JSON.parse(line));
      for (const wake of this.waiting.splice(0)) wake();
    });
  }

  /** Writes `text` in chunks, waiting for the pipe to drain, so a huge line never sits whole in this process. */
  async write(text: string | Buffer): Promise<void> {
    if (!this.child.stdin.write(text)) await new Promise((resolve) => this.child.stdin.once("drain", resolve));
  }

  async send(message: object): Promise<void> {
    await this.write(`${JSON.stringify(message)}\n`);
  }

  /** The next reply, in order of arrival. */
  async next(): Promise<Reply> {
    while (this.replies.length === 0) {
      if (this.child.exitCode !== null) throw new Error(`cairn serve exited ${this.child.exitCode}: ${this.stderr}`);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    return this.replies.shift();
  }

  async initialize(): Promise<void> {
    await this.send({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    expect((await this.next()).result.serverInfo.name).toBe("cairn");
    await this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  /** tools/list answers with the tools: the session is alive. */
  async expectServing(id: number): Promise<void> {
    await this.send({ jsonrpc: "2.0", id, method: "tools/list" });
    const reply = await this.next();
    expect(reply.id).toBe(id);
    expect(reply.result.tools.map((t: { name: string }) => t.name)).toContain("execute_code");
  }

  /** Peak resident memory of the server process so far (VmHWM), in bytes. */
  peakRss(): number {
    const status = readFileSync(`/proc/${this.child.pid}/status`, "utf8");
    return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
  }
}

/** A tools/list request of exactly `bytes` bytes before its newline, padded in `_meta`, with the id written last. */
function paddedRequest(id: number, bytes: number): string {
  const shell = (pad: string) =>
    `{"method":"tools/list","params":{"_meta":{"pad":"${pad}"}},"jsonrpc":"2.0","id":${id}}`;
  const overhead = shell("").length;
  return shell("x".repeat(bytes - overhead));
}

/** Streams a line of `bytes` bytes (a string value of `x`) with the id at its end, a MiB at a time. */
async function streamLine(server: RawServer, id: number, bytes: number): Promise<void> {
  const head = `{"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"return 1","inputs":{"s":"`;
  const tail = `"}}},"jsonrpc":"2.0","id":${id}}\n`;
  await server.write(head);
  const mib = Buffer.alloc(1024 * 1024, "x");
  let left = bytes - head.length - tail.length + 1;
  while (left > 0) {
    await server.write(left >= mib.length ? mib : mib.subarray(0, left));
    left -= mib.length;
  }
  await server.write(tail);
}

describe("messages over the stdio limit", () => {
  let server: RawServer;
  beforeAll(async () => {
    server = new RawServer("limits");
    await server.initialize();
  }, 60_000);
  afterAll(() => server.child.kill("SIGKILL"));

  it("answers a 30 MB line with TOO_LARGE naming the limit and its id, then serves tools/list", async () => {
    await streamLine(server, 5, 30 * 1024 * 1024);
    const reply = await server.next();
    expect(reply.id).toBe(5);
    expect(reply.error.code).toBe(-32600);
    expect(reply.error.data).toEqual({ code: "TOO_LARGE", limit_bytes: LIMIT, bytes: 30 * 1024 * 1024 });
    expect(reply.error.message).toContain(`stdio limit of ${LIMIT} bytes`);
    expect(reply.error.message).toContain("nothing ran");
    await server.expectServing(6);
  }, 60_000);

  it("accepts a line of exactly the limit and refuses one byte more", async () => {
    await server.write(`${paddedRequest(10, LIMIT)}\n`);
    const accepted = await server.next();
    expect(accepted.id).toBe(10);
    expect(accepted.result.tools.length).toBeGreaterThan(0);
    await server.write(`${paddedRequest(11, LIMIT + 1)}\n`);
    const refused = await server.next();
    expect(refused).toMatchObject({ id: 11, error: { data: { code: "TOO_LARGE", bytes: LIMIT + 1 } } });
    await server.expectServing(12);
  }, 60_000);

  it("answers each of many oversized lines in a row, in order, with valid requests between them", async () => {
    const ids = [20, 21, 22, 23, 24, 25];
    for (const id of ids) {
      await streamLine(server, id, LIMIT + 1 + id * 4096);
      if (id % 2 === 1) await server.send({ jsonrpc: "2.0", id: id + 100, method: "ping" });
    }
    for (const id of ids) {
      const refused = await server.next();
      expect(refused).toMatchObject({ id, error: { data: { code: "TOO_LARGE", bytes: LIMIT + 1 + id * 4096 } } });
      if (id % 2 === 1) expect(await server.next()).toEqual({ jsonrpc: "2.0", id: id + 100, result: {} });
    }
    await server.expectServing(30);
  }, 120_000);

  it("answers an oversized line whose id cannot be read cheaply with id null", async () => {
    // The id sits in the middle of the line: neither end shows it.
    const filler = "y".repeat(LIMIT);
    await server.write(`{"method":"tools/list","params":{"a":"${filler}"},"id":40,"params2":{"b":"${filler}"}}\n`);
    const reply = await server.next();
    expect(reply.id).toBeNull();
    expect(reply.error.data.code).toBe("TOO_LARGE");
    await server.expectServing(41);
  }, 60_000);

  it.each([
    ["not JSON", "{this is not json", -32700, null],
    ["truncated JSON", '{"jsonrpc":"2.0","id":50,"method":"tools/li', -32700, null],
    ["a JSON number", "42", -32600, null],
    ["an array", "[1,2]", -32600, null],
    ["a request without jsonrpc", '{"id":51,"method":"tools/list"}', -32600, 51],
    ["a request with an object id", '{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', -32600, null],
  ])("answers %s with a JSON-RPC error and keeps serving", async (_label, line, code, id) => {
    await server.write(`${line}\n`);
    const reply = await server.next();
    expect(reply).toMatchObject({ jsonrpc: "2.0", id, error: { code } });
    await server.expectServing(60);
  });

  it("skips blank lines and CRLF line ends without a reply", async () => {
    await server.write('\n\r\n   \n{"jsonrpc":"2.0","id":70,"method":"ping"}\r\n');
    expect(await server.next()).toEqual({ jsonrpc: "2.0", id: 70, result: {} });
  });
});

describe("messages over the stdio limit, on a connection opened with MCP 2026-07-28", () => {
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  let server: RawServer;
  beforeAll(async () => {
    server = new RawServer("limits-2026");
    await server.send({ jsonrpc: "2.0", id: 0, method: "server/discover", params: { _meta: meta } });
    expect((await server.next()).result.supportedVersions).toContain("2026-07-28");
  }, 60_000);
  afterAll(() => server.child.kill("SIGKILL"));

  it("answers a 30 MB line with TOO_LARGE as on a 2025 connection, then serves an enveloped tools/list", async () => {
    await streamLine(server, 5, 30 * 1024 * 1024);
    const reply = await server.next();
    expect(reply.id).toBe(5);
    expect(reply.error.code).toBe(-32600);
    expect(reply.error.data).toEqual({ code: "TOO_LARGE", limit_bytes: LIMIT, bytes: 30 * 1024 * 1024 });
    await server.send({ jsonrpc: "2.0", id: 6, method: "tools/list", params: { _meta: meta } });
    const listed = await server.next();
    expect(listed.id).toBe(6);
    expect(listed.result.tools.map((t: { name: string }) => t.name)).toContain("execute_code");
    expect(listed.result.ttlMs).toBe(60_000);
    await server.write("not json\n");
    expect((await server.next()).error.code).toBe(-32700);
  }, 60_000);
});

describe("memory an oversized line costs", () => {
  it("keeps the server's peak RSS within twice the limit over its baseline, for lines of 30 MB, 300 MB and 1 GiB alike", async () => {
    const server = new RawServer("memory");
    try {
      await server.initialize();
      await server.expectServing(1);
      const baseline = server.peakRss();
      const peaks: number[] = [];
      for (const [id, bytes] of [
        [2, 30 * 1024 * 1024],
        [3, 300 * 1024 * 1024],
        [4, 1024 * 1024 * 1024],
      ] as const) {
        await streamLine(server, id, bytes);
        expect((await server.next()).error.data).toMatchObject({ code: "TOO_LARGE", bytes });
        peaks.push(server.peakRss() - baseline);
      }
      // Skipped chunks are garbage until V8 collects them, which it does once ~64 MiB of external memory piled up.
      for (const growth of peaks) expect(growth).toBeLessThan(2 * LIMIT + V8_EXTERNAL_SLACK);
      await server.expectServing(5);
    } finally {
      server.child.kill("SIGKILL");
    }
  }, 180_000);
});

describe("how cairn serve over stdio ends", () => {
  it("exits 0 with nothing on stderr when the client closes stdin", async () => {
    const server = new RawServer("end-normal");
    await server.initialize();
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
    expect(server.stderr).toBe("");
  }, 60_000);

  it("exits 0 when stdin closes in the middle of an oversized line", async () => {
    const server = new RawServer("end-mid-line");
    await server.initialize();
    await server.write(`{"pad":"${"z".repeat(LIMIT + 10)}`);
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
  }, 60_000);

  it.each([
    ["an uncaught exception", "throw", /cairn serve: uncaught exception, exiting: Error: thrown on purpose/],
    [
      "an unhandled rejection",
      "reject",
      /cairn serve: unhandled promise rejection, exiting: Error: rejected on purpose/,
    ],
  ])(
    "exits 1 with the stack on stderr after %s while serving",
    async (_label, kind, expected) => {
      // The built transport under the built app, with a fault injected once it serves.
      const dist = join(import.meta.dirname, "../../dist");
      const script = `
      const { createApp } = await import(${JSON.stringify(`${dist}/app.js`)});
      const { loadConfig } = await import(${JSON.stringify(`${dist}/config/load.js`)});
      const { serveStdio } = await import(${JSON.stringify(`${dist}/server/transports/stdio.js`)});
      const app = createApp(loadConfig({ configPath: ${JSON.stringify(join(dir, "none.toml"))}, workspace: ${JSON.stringify(join(dir, `crash-${kind}`))} }));
      const serving = serveStdio(app, app.selectTools());
      setImmediate(() => {
        if (${JSON.stringify(kind)} === "throw") throw new Error("thrown on purpose");
        Promise.reject(new Error("rejected on purpose"));
      });
      await serving;
    `;
      writeFileSync(join(dir, "none.toml"), "");
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
        env: { ...process.env, CAIRN_LOG: "error" },
      });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code).toBe(1);
      expect(stderr).toMatch(expected);
    },
    60_000,
  );

  it("exits 1 with the reason on stderr when the client stops reading stdout (EPIPE)", async () => {
    const server = new RawServer("end-epipe");
    await server.initialize();
    server.child.stdout.destroy();
    // Replies keep coming; the first write after the pipe closed fails.
    for (let id = 1; id <= 20 && server.child.exitCode === null; id++) {
      await server.send({ jsonrpc: "2.0", id, method: "tools/list" }).catch(() => {});
    }
    expect(await server.exited).toBe(1);
    expect(server.stderr).toMatch(/cairn serve: stdout was closed by the client \(EPIPE\).*; exiting/);
  }, 60_000);
});
