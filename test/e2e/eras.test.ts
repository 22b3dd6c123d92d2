// Both protocol eras against the built server, stdio and HTTP (decisions 0260, 0261): a v2 client pinned to MCP
// 2026-07-28 and a v1 client on 2025-11-25 list the tools, run execute_code and save a result that a later request,
// and a second connection of the same identity, load; another identity cannot. Handles belong to the identity, not
// to the connection that minted them.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { serveHttp } from "../helpers/http-server.js";
import { callers, connect, connectHttp, ERAS, type Era, type McpClient } from "../helpers/mcp-client.js";

const ALICE = "alice-token-0123456789abcdefghijkl";
const BOB = "bob-token-0123456789abcdefghijklmno";
const dir = mkdtempSync(join(tmpdir(), "cairn-eras-"));
const clients = new Set<McpClient>();
let url = "";
let port = 0;
let child: ChildProcess | undefined;

beforeAll(async () => {
  writeFileSync(
    join(dir, "cairn.toml"),
    `[[http.tokens]]\ntoken_env = "TOKEN_ALICE"\nidentity = "alice"\nrole = "writer"\n\n[[http.tokens]]\ntoken_env = "TOKEN_BOB"\nidentity = "bob"\nrole = "writer"\n`,
  );
  const served = await serveHttp(
    ["--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
    { TOKEN_ALICE: ALICE, TOKEN_BOB: BOB },
    dir,
  );
  ({ url, port, child } = served);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([...clients].map((c) => c.close()));
  child?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

async function http(era: Era, token: string) {
  const client = await connectHttp(era, url, token);
  clients.add(client);
  return { client, ...callers(client, era) };
}

const SAVE = "return await save_result({ rows: [1, 2, 3], secret: inputs.secret })";
const LOAD = "return await load_result(inputs.h)";

describe.each(ERAS)("a %s client", (era) => {
  it("over stdio lists tools (with cache hints on 2026-07-28), saves a result and loads it in a later request", async () => {
    const c = await connect("", [], era);
    try {
      const listed = (await c.client.listTools()) as { tools: { name: string }[]; ttlMs?: number; cacheScope?: string };
      expect(listed.tools.map((t) => t.name)).toContain("execute_code");
      if (era === "2026-07-28") {
        expect(listed.ttlMs).toBe(60_000);
        expect(listed.cacheScope).toBe("private");
      } else {
        expect(listed.ttlMs).toBeUndefined();
      }
      // One deterministic order: two lists agree.
      const again = (await c.client.listTools()) as { tools: { name: string }[] };
      expect(again.tools.map((t) => t.name)).toEqual(listed.tools.map((t) => t.name));
      const saved = await c.run(SAVE, { secret: "s1" });
      expect(saved.isError).toBe(false);
      const handle = saved.json.value as string;
      expect(handle).toMatch(/^res_[A-Za-z0-9_-]{43}$/);
      const loaded = await c.run(LOAD, { h: handle });
      expect(loaded.json.value).toEqual({ rows: [1, 2, 3], secret: "s1" });
      // The resource face of the same handle.
      const read = await c.client.readResource({ uri: `cairn://results/${handle}` });
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual({ rows: [1, 2, 3], secret: "s1" });
    } finally {
      await c.close();
    }
  }, 60_000);

  it("over HTTP: a handle of one request is loaded by the next, on a second connection too; another identity gets HANDLE_NOT_FOUND", async () => {
    const first = await http(era, ALICE);
    const listed = (await first.client.listTools()) as { tools: unknown[]; ttlMs?: number; cacheScope?: string };
    expect(listed.tools.length).toBeGreaterThan(0);
    if (era === "2026-07-28") expect(listed.cacheScope).toBe("private");
    const saved = await first.run(SAVE, { secret: `alice-${era}` });
    const handle = saved.json.value as string;
    expect(handle).toMatch(/^res_/);
    expect((await first.run(LOAD, { h: handle })).json.value.secret).toBe(`alice-${era}`);
    await first.client.close();
    clients.delete(first.client);

    // A new connection of the same identity, of either era: the handle is still Alice's.
    for (const other of ERAS) {
      const second = await http(other, ALICE);
      expect((await second.run(LOAD, { h: handle })).json.value.secret).toBe(`alice-${era}`);
    }
    // Bob is another identity: the handle is not found, whatever era he speaks.
    for (const other of ERAS) {
      const bob = await http(other, BOB);
      const refused = await bob.run(
        "try { await load_result(inputs.h); return 'loaded' } catch (e) { return e.code }",
        { h: handle },
      );
      expect(refused.json.value).toBe("HANDLE_NOT_FOUND");
      await expect(bob.client.readResource({ uri: `cairn://results/${handle}` })).rejects.toThrow(/HANDLE_NOT_FOUND/);
    }
  }, 90_000);
});

describe.each(ERAS)("the run share of an identity, for a %s client over HTTP", (era) => {
  it("refuses a run past the identity's share with SHARE_EXHAUSTED, nothing run, and admits one once a run ends", async () => {
    // Two identities share sandbox.max_workers = 4: each may have 2 runs in flight.
    const peer = await http(era, BOB);
    const controllers = [new AbortController(), new AbortController()];
    const sleeping = controllers.map((controller) =>
      peer.client
        .callTool(
          {
            name: "execute_code",
            arguments: { code: "await new Promise((r) => setTimeout(r, 25000))", timeout_ms: 28000 },
          },
          ...((era === "2026-07-28"
            ? [{ signal: controller.signal, timeout: 120_000 }]
            : [undefined, { signal: controller.signal, timeout: 120_000 }]) as unknown as []),
        )
        .catch((error: unknown) => error),
    );
    const refused = await vi.waitFor(
      async () => {
        const reply = await peer.run("return 'third'");
        expect(reply.json?.error?.code, reply.text).toBe("SHARE_EXHAUSTED");
        return reply;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(refused.json.error.message).toContain("identity bob has 2 of its 2 runs in flight");
    for (const controller of controllers) controller.abort();
    await Promise.all(sleeping);
    await vi.waitFor(async () => expect((await peer.run("return 'after'")).json?.value).toBe("after"), {
      timeout: 30_000,
      interval: 100,
    });
  }, 90_000);
});

/** One raw POST to /mcp. */
function post(headers: Record<string, string>, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/mcp", method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("2026-07-28 over HTTP, raw", () => {
  const envelope = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const headers = (extra: Record<string, string> = {}) => ({
    Host: `127.0.0.1:${port}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${ALICE}`,
    "MCP-Protocol-Version": "2026-07-28",
    ...extra,
  });

  it("answers server/discover with 2026-07-28 and no session id", async () => {
    const reply = await post(headers({ "Mcp-Method": "server/discover" }), {
      jsonrpc: "2.0",
      id: 1,
      method: "server/discover",
      params: { _meta: envelope },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toContain("2026-07-28");
  });

  it("refuses a request whose Mcp-Method header contradicts its body", async () => {
    const reply = await post(headers({ "Mcp-Method": "tools/list" }), {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "return 1" }, _meta: envelope },
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatch(/-320\d\d/);
  });

  it("refuses a tools/call whose Mcp-Name header names another tool than its body, and runs nothing", async () => {
    const reply = await post(headers({ "Mcp-Method": "tools/call", "Mcp-Name": "read_output" }), {
      jsonrpc: "2.0",
      id: 4,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "return 1" }, _meta: envelope },
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatch(/-320\d\d/);
    expect(reply.body).not.toContain('"value"');
  });

  it("answers a matching Mcp-Method and Mcp-Name with the tool's result and no session id", async () => {
    const reply = await post(headers({ "Mcp-Method": "tools/call", "Mcp-Name": "execute_code" }), {
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "return 40 + 2" }, _meta: envelope },
    });
    expect(reply.status, reply.body).toBe(200);
    expect(reply.body).toContain('\\"value\\":42');
    expect(reply.body).toContain('"resultType"');
  });

  it("still checks the token before anything else", async () => {
    const reply = await post(headers({ Authorization: "Bearer wrong", "Mcp-Method": "tools/list" }), {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/list",
      params: { _meta: envelope },
    });
    expect(reply.status).toBe(401);
  });
});
