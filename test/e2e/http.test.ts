// The built `cairn serve --transport http` on a loopback port, driven by raw HTTP and by the official SDK client:
// the token, Host and Origin gates, handles shared by an identity's sessions and kept from other identities, and
// the end of a session (DELETE, idle timeout, SIGTERM).
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MAIN, type ToolText } from "../helpers/mcp-client.js";

const TOKEN = "cairn-test-token-0123456789abcdef";
const dir = mkdtempSync(join(tmpdir(), "cairn-http-"));
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

interface Served {
  url: string;
  port: number;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Starts the built server on a free port and resolves with the URL it prints when listening. */
function serve(extra: string[] = [], env: Record<string, string> = { CAIRN_TOKEN: TOKEN }): Promise<Served> {
  const child = spawn(
    process.execPath,
    [MAIN, "serve", "--transport", "http", "--port", "0", "--workspace", join(dir, "ws"), ...extra],
    { env: { ...process.env, CAIRN_LOG: "error", ...env }, stdio: ["ignore", "ignore", "pipe"], cwd: dir },
  );
  children.add(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ url: match[1] as string, port: Number(new URL(match[1] as string).port), child, exited });
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One raw request with exactly the headers given (fetch would not let a test choose Host). */
function raw(port: number, method: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/mcp", method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

function initHeaders(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    Host: `127.0.0.1:${port}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${TOKEN}`,
    ...extra,
  };
}

interface Peer {
  client: Client;
  transport: StreamableHTTPClientTransport;
  run(code: string, inputs?: Record<string, unknown>): Promise<ToolText>;
  call(name: string, args: Record<string, unknown>): Promise<ToolText>;
}

async function connectPeer(url: string, token = TOKEN): Promise<Peer> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "cairn-http-tests", version: "1.0.0" });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown>): Promise<ToolText> => {
    const result = await client.callTool({ name, arguments: args });
    const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    return { isError: result.isError === true, text, json };
  };
  return { client, transport, call, run: (code, inputs) => call("execute_code", inputs ? { code, inputs } : { code }) };
}

/** The directory of a session's artifact store, read from the pointer line of a spilled reply. */
async function spillDirectory(peer: Peer): Promise<string> {
  const reply = await peer.run("return 'z'.repeat(60000)");
  const path = /\| (\/[^\]]+)\]$/.exec(reply.text)?.[1];
  expect(path && existsSync(path)).toBe(true);
  return dirname(path as string);
}

describe("cairn serve --transport http: start-up", () => {
  const start = (args: string[], env: Record<string, string | undefined>) =>
    spawnSync(process.execPath, [MAIN, "serve", "--transport", "http", "--port", "0", ...args], {
      encoding: "utf8",
      cwd: dir,
      env: { ...process.env, CAIRN_TOKEN: undefined, CAIRN_HOME: join(dir, "ws"), ...env },
      timeout: 30_000,
    });

  it("refuses to start without $CAIRN_TOKEN and says how to set it", () => {
    const r = start([], {});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("CAIRN_TOKEN");
    expect(r.stderr).toContain("export CAIRN_TOKEN=");
  });

  it("refuses an empty $CAIRN_TOKEN", () => {
    expect(start([], { CAIRN_TOKEN: "  " }).status).toBe(2);
  });

  it("refuses a non-loopback bind address without --allow-remote", () => {
    const r = start(["--host", "0.0.0.0"], { CAIRN_TOKEN: TOKEN });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--allow-remote");
  });

  it("refuses a malformed port", () => {
    expect(start(["--port", "http"], { CAIRN_TOKEN: TOKEN }).status).toBe(2);
  });
});

describe("cairn serve --transport http", () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve();
  });

  it("prints the loopback URL of /mcp when listening", () => {
    expect(s.url).toBe(`http://127.0.0.1:${s.port}/mcp`);
  });

  it.each([
    ["a missing Authorization header", {}],
    ["a wrong token of the same length", { Authorization: `Bearer ${"x".repeat(TOKEN.length)}` }],
    ["a token of another length", { Authorization: `Bearer ${TOKEN}-and-more` }],
    ["a prefix of the token", { Authorization: `Bearer ${TOKEN.slice(0, 8)}` }],
    ["another scheme", { Authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString("base64")}` }],
  ])("answers 401 with a JSON body to %s", async (_what, auth: Record<string, string>) => {
    const headers = initHeaders(s.port);
    delete headers.Authorization;
    const r = await raw(s.port, "POST", { ...headers, ...auth }, INITIALIZE);
    expect(r.status).toBe(401);
    expect(r.headers["content-type"]).toContain("application/json");
    expect(r.headers["www-authenticate"]).toMatch(/^Bearer/);
    const body = JSON.parse(r.body);
    expect(body.error.message).toMatch(/^Unauthorized/);
    expect(r.body).not.toContain(TOKEN.slice(0, 8));
    expect(r.headers["mcp-session-id"]).toBeUndefined();
  });

  it("accepts the token whatever the case of the Bearer scheme", async () => {
    const r = await raw(s.port, "POST", initHeaders(s.port, { Authorization: `bearer ${TOKEN}` }), INITIALIZE);
    expect(r.status).toBe(200);
    expect(r.headers["mcp-session-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it.each(["http://evil.example", "https://localhost.evil.example:8731", "null", "file://", "http://10.0.0.5:8731"])(
    "answers 403 to a request from Origin %s",
    async (origin) => {
      const r = await raw(s.port, "POST", initHeaders(s.port, { Origin: origin }), INITIALIZE);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).error.message).toContain("Origin");
    },
  );

  it.each(["http://localhost:3000", "https://127.0.0.1", "http://[::1]:9999"])(
    "accepts a loopback Origin %s",
    async (origin) => {
      const r = await raw(s.port, "POST", initHeaders(s.port, { Origin: origin }), INITIALIZE);
      expect(r.status).toBe(200);
    },
  );

  it.each(["evil.example", "evil.example:8731", "192.168.1.10", "localhost.evil.example"])(
    "answers 403 to a non-loopback Host header %s (DNS rebinding)",
    async (host) => {
      const r = await raw(s.port, "POST", initHeaders(s.port, { Host: host }), INITIALIZE);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).error.message).toContain("Host");
    },
  );

  it("checks the Host before the token, so a rebinding page learns nothing about it", async () => {
    const headers = initHeaders(s.port, { Host: "evil.example" });
    delete headers.Authorization;
    expect((await raw(s.port, "POST", headers, INITIALIZE)).status).toBe(403);
  });

  it("answers 404 to an unknown session id, as the SDK does", async () => {
    const r = await raw(
      s.port,
      "POST",
      initHeaders(s.port, { "Mcp-Session-Id": "00000000-0000-4000-8000-000000000000" }),
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    );
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error.message).toBe("Session not found");
  });

  it("answers 400 to a request that is neither an initialize nor in a session", async () => {
    const r = await raw(s.port, "POST", initHeaders(s.port), JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }));
    expect(r.status).toBe(400);
  });

  it("answers 413 to an initialize body over 4 MiB, without reading it into a session", async () => {
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { pad: "x".repeat(5 * 1024 * 1024) },
    });
    const r = await raw(s.port, "POST", initHeaders(s.port), big);
    expect(r.status).toBe(413);
    expect(r.headers["mcp-session-id"]).toBeUndefined();
  });

  it("answers 400 to a GET or DELETE without a session and 405 to other methods", async () => {
    expect((await raw(s.port, "GET", initHeaders(s.port))).status).toBe(400);
    expect((await raw(s.port, "DELETE", initHeaders(s.port))).status).toBe(400);
    const put = await raw(s.port, "PUT", initHeaders(s.port), "{}");
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, POST, DELETE");
  });

  it("answers 404 outside /mcp, after the token check", async () => {
    const r = await new Promise<number>((resolve, reject) => {
      request(
        { host: "127.0.0.1", port: s.port, path: "/other", headers: { Authorization: `Bearer ${TOKEN}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      )
        .on("error", reject)
        .end();
    });
    expect(r).toBe(404);
  });

  it("serves tools/list and execute_code to the SDK client", async () => {
    const peer = await connectPeer(s.url);
    const { tools } = await peer.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["execute_code", "read_output"]));
    expect(peer.client.getServerVersion()?.name).toBe("cairn");
    expect((await peer.run("return 1 + 1")).json).toMatchObject({ ok: true, value: 2 });
    await peer.transport.terminateSession();
    await peer.client.close();
  });

  it("shares an identity's handles between its sessions: load, resource read and promotion", async () => {
    const a = await connectPeer(s.url);
    const b = await connectPeer(s.url);
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    const saved = await a.run("return [await save_result({ secret: 'A' }), await save_artifact('bytes of A')]");
    const [res, art] = saved.json.value as [string, string];
    // One token, one identity: session B reaches what session A saved (decision 0261).
    expect((await b.run("return await load_result(inputs.h)", { h: res })).json.value).toEqual({ secret: "A" });
    const loadArt = await b.run("return await load_artifact(inputs.h, { as: 'text' })", { h: art });
    expect(loadArt.json.value).toBe("bytes of A");
    const read = await b.client.readResource({ uri: `cairn://results/${res}` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ secret: "A" });
    const name = `http-test/shared-${Date.now()}`;
    const promoted = await b.call("save", { name, from: res });
    expect(promoted.isError, promoted.text).toBe(false);
    expect((await a.call("inspect", { ref: name })).text).toContain("secret");
    // Listings never name handles.
    const listed = JSON.stringify([await b.client.listResources(), await b.client.listResourceTemplates()]);
    expect(listed).not.toContain(res);
    expect(listed).not.toContain(art);
    for (const peer of [a, b]) {
      await peer.transport.terminateSession();
      await peer.client.close();
    }
  });

  it("keeps another identity's handles out of reach: HANDLE_NOT_FOUND, as for a handle that never existed", async () => {
    writeFileSync(
      join(dir, "two.toml"),
      '[[http.tokens]]\ntoken_env = "TOKEN_ONE"\nidentity = "one"\nrole = "writer"\n\n[[http.tokens]]\ntoken_env = "TOKEN_TWO"\nidentity = "two"\nrole = "writer"\n',
    );
    const other = await serve(["--config", join(dir, "two.toml")], { TOKEN_ONE: TOKEN, TOKEN_TWO: `${TOKEN}-two` });
    const a = await connectPeer(other.url, TOKEN);
    const b = await connectPeer(other.url, `${TOKEN}-two`);
    const [res, art] = (await a.run("return [await save_result({ secret: 'A' }), await save_artifact('bytes of A')]"))
      .json.value as [string, string];
    expect((await b.run("return await load_result(inputs.h)", { h: res })).json.error.code).toBe("HANDLE_NOT_FOUND");
    const loadArt = await b.run("return await load_artifact(inputs.h, { as: 'text' })", { h: art });
    expect(loadArt.json.error.code).toBe("HANDLE_NOT_FOUND");
    expect((await b.call("read_output", { handle: art })).json.error.code).toBe("HANDLE_NOT_FOUND");
    await expect(b.client.readResource({ uri: `cairn://results/${res}` })).rejects.toThrow(/HANDLE_NOT_FOUND/);
    await expect(b.client.readResource({ uri: `cairn://artifacts/${art}` })).rejects.toThrow(/HANDLE_NOT_FOUND/);
    const promoted = await b.call("save", { name: `http-test/from-${Date.now()}`, from: res });
    expect(promoted.json.error.code).toBe("HANDLE_NOT_FOUND");
    await Promise.allSettled([a.client.close(), b.client.close()]);
    other.child.kill("SIGTERM");
    expect(await other.exited).toBe(0);
  });

  it("rejects a cancelled call at the client and answers the session's next call", async () => {
    const peer = await connectPeer(s.url);
    const controller = new AbortController();
    const pending = peer.client.callTool({ name: "execute_code", arguments: { code: "while (true) {}" } }, undefined, {
      signal: controller.signal,
    });
    await peer.client.ping();
    controller.abort();
    await expect(pending).rejects.toThrow();
    expect((await peer.run("return 'after cancel'")).json.value).toBe("after cancel");
    await peer.client.close();
  });

  it("serves another session while one session's snippet computes", async () => {
    const a = await connectPeer(s.url);
    const b = await connectPeer(s.url);
    let slowDone = false;
    const slow = a.run("const end = Date.now() + 1500; while (Date.now() < end) {} return 'slow'").then((r) => {
      slowDone = true;
      return r;
    });
    expect((await b.run("return 'quick'")).json.value).toBe("quick");
    expect(slowDone).toBe(false);
    expect((await slow).json.value).toBe("slow");
    for (const peer of [a, b]) await peer.client.close();
  });

  it("ends a session on DELETE: its id answers 404, and its identity's handles outlive it", async () => {
    const peer = await connectPeer(s.url);
    const directory = await spillDirectory(peer);
    const kept = (await peer.run("return await save_result('kept')")).json.value as string;
    const id = peer.transport.sessionId as string;
    await peer.transport.terminateSession();
    expect(existsSync(directory)).toBe(true);
    const next = await connectPeer(s.url);
    expect((await next.run("return await load_result(inputs.h)", { h: kept })).json.value).toBe("kept");
    await next.client.close();
    const r = await raw(
      s.port,
      "POST",
      initHeaders(s.port, { "Mcp-Session-Id": id }),
      JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    );
    expect(r.status).toBe(404);
    await peer.client.close();
  });
});

describe("cairn serve --transport http --allow-remote", () => {
  it("accepts any Host header but still needs the token and a loopback Origin", async () => {
    const s = await serve(["--allow-remote"]);
    const headers = initHeaders(s.port, { Host: "cairn.lan:8731" });
    expect((await raw(s.port, "POST", headers, INITIALIZE)).status).toBe(200);
    const { Authorization: _, ...anonymous } = headers;
    expect((await raw(s.port, "POST", anonymous, INITIALIZE)).status).toBe(401);
    expect((await raw(s.port, "POST", { ...headers, Origin: "http://evil.example" }, INITIALIZE)).status).toBe(403);
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
  });
});

describe("cairn serve --transport http: the end of sessions", () => {
  it("ends a session after the idle timeout; its identity's handles stay until their own TTL", async () => {
    const s = await serve(["--idle-timeout", "0.3"]);
    const peer = await connectPeer(s.url);
    const directory = await spillDirectory(peer);
    const kept = (await peer.run("return await save_result('kept')")).json.value as string;
    const id = peer.transport.sessionId as string;
    const tools = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" });
    await vi.waitFor(
      async () =>
        expect((await raw(s.port, "POST", initHeaders(s.port, { "Mcp-Session-Id": id }), tools)).status).toBe(404),
      // Each probe is itself a request of the session: probes further apart than the idle timeout let it end.
      { timeout: 20_000, interval: 1000 },
    );
    expect(existsSync(directory)).toBe(true);
    const next = await connectPeer(s.url);
    expect((await next.run("return await load_result(inputs.h)", { h: kept })).json.value).toBe("kept");
    await next.client.close();
    await peer.client.close().catch(() => {});
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
  });

  it("answers 429 to an initialize past --max-sessions (one identity's share is all of them), and accepts one again after a DELETE", async () => {
    const s = await serve(["--max-sessions", "2"]);
    const a = await connectPeer(s.url);
    const b = await connectPeer(s.url);
    const refused = await raw(s.port, "POST", initHeaders(s.port), INITIALIZE);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    const error = JSON.parse(refused.body).error;
    expect(error.message).toContain("--max-sessions 2");
    expect(error.message).toContain("holds 2 of its 2 sessions");
    expect(error.data).toMatchObject({ code: "SHARE_EXHAUSTED", share: "sessions", limit: 2 });
    await a.transport.terminateSession();
    const c = await connectPeer(s.url);
    expect((await c.run("return 'third'")).json.value).toBe("third");
    await Promise.allSettled([a.client.close(), b.client.close(), c.client.close()]);
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
  });

  it("closes every session on SIGTERM and exits 0", async () => {
    const s = await serve();
    const a = await connectPeer(s.url);
    const b = await connectPeer(s.url);
    const directories = [await spillDirectory(a), await spillDirectory(b)];
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    for (const directory of directories) expect(existsSync(directory)).toBe(false);
    await Promise.allSettled([a.client.close(), b.client.close()]);
  });

  it("holds one budget per identity across its sessions: the least recently used handle is evicted, and says so", async () => {
    const config = join(dir, "small.toml");
    writeFileSync(config, "[results]\nmax_entries = 1\n");
    const s = await serve(["--config", config]);
    const a = await connectPeer(s.url);
    const b = await connectPeer(s.url);
    const first = (await a.run("return await save_result(1)")).json.value as string;
    // B is the same identity: its save takes the identity's one entry, evicting A's.
    expect((await b.run("return await save_result(2)")).isError).toBe(false);
    const evicted = await a.run("return await load_result(inputs.h)", { h: first });
    expect(evicted.json.error.code).toBe("HANDLE_EVICTED");
    expect(evicted.json.error.message).toContain("results.max_entries = 1");
    s.child.kill("SIGINT");
    expect(await s.exited).toBe(0);
  });
});

describe("cairn serve --transport http: runs of different sessions are isolated (issue 11)", () => {
  it("lets one session's snippets finish while another's exhaust memory or hang in a regex", async () => {
    const config = join(dir, "isolation.toml");
    writeFileSync(config, "[sandbox]\nmemory_mb = 64\ntimeout_ms = 10000\nmax_workers = 3\n");
    const s = await serve(["--config", config]);
    const [bomber, hanger, worker] = await Promise.all([connectPeer(s.url), connectPeer(s.url), connectPeer(s.url)]);
    const steady = async () => {
      const values: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const reply = await worker.run(`const h = await save_result({ i: ${i} }); return (await load_result(h)).i`);
        values.push(reply.json?.value);
      }
      return values;
    };
    const [bomb, hang, values] = await Promise.all([
      bomber.run("const a = []; for (;;) { try { a.push('x'.repeat(1 << 20) + a.length) } catch {} }"),
      hanger.call("execute_code", { code: "return /(a+)+$/.test('a'.repeat(40) + 'b')", timeout_ms: 500 }),
      steady(),
    ]);
    expect(bomb.json.error.code).toBe("MEMORY_LIMIT");
    expect(hang.json.error.code).toBe("TIMEOUT");
    expect(values).toEqual([0, 1, 2, 3, 4]);
    for (const peer of [bomber, hanger, worker]) expect((await peer.run("return 'after'")).json.value).toBe("after");
    await Promise.all([bomber, hanger, worker].map((peer) => peer.client.close()));
    s.child.kill("SIGTERM");
    await s.exited;
  });
});
