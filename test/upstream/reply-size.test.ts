// Upstream replies over max_reply_bytes (issue 11, property 9): a real SDK server over stdio answers 11 MiB, 64 MiB
// and absurd lines; each call fails alone with TOO_LARGE (or survives), and the same process answers the next call.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import type { CairnError } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import { BoundedLineReader, replyTooLargeResponse, responseId } from "../../src/upstream/reply-limit.js";
import { createUpstreamManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";
import { caught } from "../helpers/caught.js";

const here = dirname(fileURLToPath(import.meta.url));
const MIB = 1024 * 1024;
const LIMIT = 10 * MIB;

function big(extra: Partial<ServerConfig> = {}): ServerConfig {
  return {
    command: process.execPath,
    args: [join(here, "../fixtures/servers/big-replies.mjs")],
    env: {},
    timeout_ms: 60_000,
    allow: [],
    deny: [],
    ...extra,
  } as ServerConfig;
}

const textOf = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

describe("an upstream reply over max_reply_bytes (stdio)", () => {
  let manager: UpstreamManager;
  let pid: string;
  const warnings: string[] = [];
  beforeAll(async () => {
    manager = createUpstreamManager(
      { big: big(), roomy: big({ max_reply_bytes: 16 * MIB }) },
      { logger: createLogger("upstream", (line) => warnings.push(line)) },
    );
    await manager.start();
    pid = textOf(await manager.callTool("big", "pid", {}));
  });
  afterAll(() => manager.close());

  /** The connection survived: same process, ready, and a normal call works. */
  async function stillUp() {
    expect(manager.list().find((s) => s.server === "big")?.status).toBe("ready");
    expect(textOf(await manager.callTool("big", "pid", {}))).toBe(pid);
    expect(textOf(await manager.callTool("big", "sized", { bytes: 1000 }))).toHaveLength(1000);
  }

  it.each([11 * MIB, 64 * MIB])("fails a %d-byte reply with TOO_LARGE naming the limit", async (bytes) => {
    const error = await caught(manager.callTool("big", "sized", { bytes }));
    expect(error.code).toBe("TOO_LARGE");
    expect(error.name).toBe("ToolCallError");
    expect(error.message).toContain(`more than ${LIMIT} bytes`);
    expect(error.message).toContain("max_reply_bytes of [servers.big]");
    expect(error.data).toMatchObject({ server: "big", tool: "sized", limit: LIMIT });
    await stillUp();
  });

  it("drops an absurd raw line of 128 MiB that is no message, and the call still gets its answer", async () => {
    expect(textOf(await manager.callTool("big", "absurd", { bytes: 128 * MIB }))).toBe("survived");
    expect(warnings.some((w) => w.includes("no request id found"))).toBe(true);
    await stillUp();
  });

  it("drops an over-size notification without failing the call it came with", async () => {
    expect(textOf(await manager.callTool("big", "notify_big", { bytes: 11 * MIB }))).toBe("after notification");
    await stillUp();
  });

  it("fails only the big call among concurrent ones", async () => {
    const [small, large, other] = await Promise.allSettled([
      manager.callTool("big", "sized", { bytes: 10 }),
      manager.callTool("big", "sized", { bytes: 12 * MIB }),
      manager.callTool("big", "sized", { bytes: 20 }),
    ]);
    expect(small.status === "fulfilled" && textOf(small.value)).toBe("x".repeat(10));
    expect(large.status === "rejected" && (large.reason as CairnError).code).toBe("TOO_LARGE");
    expect(other.status === "fulfilled" && textOf(other.value)).toBe("x".repeat(20));
    await stillUp();
  });

  it("delivers a reply within a raised max_reply_bytes", async () => {
    expect(textOf(await manager.callTool("roomy", "sized", { bytes: 11 * MIB }))).toHaveLength(11 * MIB);
    expect((await caught(manager.callTool("roomy", "sized", { bytes: 17 * MIB }))).message).toContain(
      `more than ${16 * MIB} bytes`,
    );
  });
});

describe("a tools/list over max_reply_bytes", () => {
  it("leaves the server unavailable with a cause naming the key, and the others ready", async () => {
    const manager = createUpstreamManager(
      {
        many: {
          ...big(),
          args: [join(here, "../fixtures/servers/many-tools.mjs"), "3000"],
          max_reply_bytes: 64 * 1024,
        },
        big: big(),
      },
      { logger: createLogger("upstream", () => {}) },
    );
    try {
      await manager.start();
      const many = manager.list().find((s) => s.server === "many");
      expect(many?.status).toBe("unavailable");
      expect(many?.cause).toContain("max_reply_bytes = 65536");
      expect(manager.list().find((s) => s.server === "big")?.status).toBe("ready");
    } finally {
      await manager.close();
    }
  });
});

describe("an HTTP endpoint that answers with a huge error page", () => {
  it("is read no further than max_reply_bytes, and the server is reported unavailable", async () => {
    const page = Buffer.alloc(11 * MIB, 0x3c);
    const http = createHttpServer((_req, res) => {
      res.writeHead(500, { "content-type": "text/html" });
      res.end(page);
    });
    http.listen(0, "127.0.0.1");
    await once(http, "listening");
    const { port } = http.address() as AddressInfo;
    const config = { url: `http://127.0.0.1:${port}/mcp`, headers: {}, timeout_ms: 60_000, allow: [], deny: [] };
    const manager = createUpstreamManager({ page: config as ServerConfig }, { logger: createLogger("u", () => {}) });
    try {
      await manager.start();
      // The server/discover probe is refused with the status alone: the bounded body is never read whole.
      const status = manager.list()[0];
      expect(status?.status).toBe("unavailable");
      expect(status?.cause).toContain("HTTP 500");
    } finally {
      await manager.close();
      http.closeAllConnections();
      http.close();
    }
  });
});

/** Starts the fixture over Streamable HTTP; resolves with its URL once it listens. */
function serveHttp(json: boolean): Promise<{ child: ChildProcess; url: string }> {
  const args = [join(here, "../fixtures/servers/big-replies.mjs"), "--http", ...(json ? ["--json"] : [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening on port (\d+)/.exec(seen);
      if (match) resolve({ child, url: `http://127.0.0.1:${match[1]}/mcp` });
    });
    child.once("exit", (code) => reject(new Error(`fixture exited ${code}: ${seen}`)));
  });
}

describe.each([
  { body: "SSE", json: false },
  { body: "JSON", json: true },
])("an upstream reply over max_reply_bytes (Streamable HTTP, $body bodies)", ({ json }) => {
  let manager: UpstreamManager;
  let child: ChildProcess;
  beforeAll(async () => {
    const served = await serveHttp(json);
    child = served.child;
    const config = { url: served.url, headers: {}, timeout_ms: 60_000, allow: [], deny: [] } as ServerConfig;
    manager = createUpstreamManager({ big: config }, { logger: createLogger("upstream", () => {}) });
    await manager.start();
  });
  afterAll(async () => {
    await manager.close();
    child.kill();
  });

  async function stillUp() {
    expect(manager.list().find((s) => s.server === "big")?.status).toBe("ready");
    expect(textOf(await manager.callTool("big", "sized", { bytes: 1000 }))).toHaveLength(1000);
  }

  it.each([11 * MIB, 64 * MIB])("fails a %d-byte reply with TOO_LARGE naming the limit", async (bytes) => {
    const error = await caught(manager.callTool("big", "sized", { bytes }));
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toContain(`more than ${LIMIT} bytes`);
    await stillUp();
  });

  it("drops an over-size notification without failing the call it came with", async () => {
    expect(textOf(await manager.callTool("big", "notify_big", { bytes: 11 * MIB }))).toBe("after notification");
    await stillUp();
  });

  it("fails only the big call among concurrent ones", async () => {
    const results = await Promise.allSettled([
      manager.callTool("big", "sized", { bytes: 10 }),
      manager.callTool("big", "sized", { bytes: 12 * MIB }),
    ]);
    expect(results[0].status === "fulfilled" && textOf(results[0].value)).toBe("x".repeat(10));
    expect(results[1].status === "rejected" && (results[1].reason as CairnError).code).toBe("TOO_LARGE");
  });
});

describe("responseId", () => {
  it.each([
    ['{"result":{"content":[]},"jsonrpc":"2.0","id":7}', 7],
    ['{"jsonrpc":"2.0","id":"a\\"b","result":{}}', 'a"b'],
    ['{"id":3,"result":{}}', 3],
    ['{"result":{"structuredContent":{"id":99}},"jsonrpc":"2.0","id":4}', 4],
    ['{"error":{"code":1,"message":"m"},"jsonrpc":"2.0","id":-2}\r', -2],
    ['{"method":"notifications/message","params":{"id":1},"jsonrpc":"2.0"}', undefined],
    ['{"method":"sampling/createMessage","params":{},"jsonrpc":"2.0","id":0}', undefined],
    ['{"result":{"x":{"id":5}}}', undefined],
    ['{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}', undefined],
    ['{"id":6,"jsonrpc":"2.0","error":{"code":1,"message":"m"}}', 6],
    ["yyyyyyyy", undefined],
    ['[{"jsonrpc":"2.0","id":1,"result":{}}]', undefined],
  ])("finds the top-level id of %s", (line, id) => {
    expect(responseId(line.slice(0, 40), line.slice(-40).replace(/\r$/, ""))).toEqual(id);
  });
});

describe("BoundedLineReader", () => {
  const drain = (reader: BoundedLineReader) => {
    const out: unknown[] = [];
    for (let m = reader.readMessage(); m !== null; m = reader.readMessage()) out.push(m);
    return out;
  };
  const response = (id: number, text: string) =>
    `${JSON.stringify({ result: { content: [{ type: "text", text }] }, jsonrpc: "2.0", id })}\n`;

  it("passes a line of exactly the limit and discards one byte more, in any chunking", () => {
    const exact = response(1, "a".repeat(100));
    const limit = exact.length - 1; // without the newline
    const over = response(2, "a".repeat(101));
    for (const size of [1, 7, 64, 10_000]) {
      const reader = new BoundedLineReader(limit);
      const bytes = Buffer.from(exact + over + response(3, "ok"));
      for (let i = 0; i < bytes.length; i += size) reader.append(bytes.subarray(i, i + size));
      const messages = drain(reader) as { id: number; error?: unknown }[];
      expect(messages.map((m) => m.id)).toEqual([1, 2, 3]);
      expect(messages[1]).toEqual(replyTooLargeResponse(2, limit));
    }
  });

  it("answers at once when the id comes first, before the line ends", () => {
    const reader = new BoundedLineReader(100);
    reader.append(Buffer.from(`{"jsonrpc":"2.0","id":9,"result":{"text":"${"b".repeat(200)}`));
    expect(drain(reader)).toEqual([replyTooLargeResponse(9, 100)]);
    reader.append(Buffer.from(`"}}\n${response(10, "next")}`));
    expect((drain(reader) as { id: number }[]).map((m) => m.id)).toEqual([10]);
  });

  it("holds no more than the limit while a line never ends", () => {
    const reader = new BoundedLineReader(1000);
    const piece = Buffer.alloc(64 * 1024, 0x79);
    for (let i = 0; i < 100; i++) reader.append(piece);
    expect(drain(reader)).toEqual([]);
    const internals = reader as unknown as { parts: Buffer[]; tail: Buffer };
    expect(internals.parts).toEqual([]);
    expect(internals.tail.length).toBeLessThanOrEqual(512);
  });
});
