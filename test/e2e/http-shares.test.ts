// Fair shares and role refusals on the built `cairn serve --transport http`, with three tokens (a reader, a writer, an
// approver) and a real upstream server behind direct tools: a reader that fills its share of sessions or of runs
// leaves the others room, is told its own limit and how to free a slot, and gets it back when it frees one; a tool a
// role hides answers NOT_ALLOWED with the role it needs; a configuration whose shares leave no room does not start.
// Issue 27.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const dir = mkdtempSync(join(tmpdir(), "cairn-http-shares-"));
const TOKENS = {
  reader: "reader-token-0123456789abcdefghij",
  writer: "writer-token-0123456789abcdefghij",
  approver: "approver-token-0123456789abcdefgh",
};
type Role = keyof typeof TOKENS;
const tokensToml = (roles: Role[]) =>
  roles
    .map(
      (role) =>
        `[[http.tokens]]\ntoken_env = "TOKEN_${role.toUpperCase()}"\nidentity = "${role}-1"\nrole = "${role}"\n`,
    )
    .join("\n");
const ENV = { TOKEN_READER: TOKENS.reader, TOKEN_WRITER: TOKENS.writer, TOKEN_APPROVER: TOKENS.approver };

// Three identities: --max-sessions 9 gives each 3 sessions, sandbox.max_workers = 6 each 2 runs.
const TOML = `profile = "runtime"

[sandbox]
max_workers = 6

[gateway]
direct = true

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

${tokensToml(["reader", "writer", "approver"])}`;

const children = new Set<ChildProcess>();
const clients = new Set<Client>();
afterAll(async () => {
  await Promise.allSettled([...clients].map((c) => c.close()));
  for (const child of children) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the built server; resolves with its URL, or rejects with its exit code and stderr. */
function serve(name: string, toml: string, args: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  writeFileSync(join(dir, `${name}.toml`), toml);
  const child = spawn(
    process.execPath,
    [MAIN, "serve", "--config", join(dir, `${name}.toml`), "--transport", "http", "--port", "0"].concat([
      "--workspace",
      join(dir, `ws-${name}`),
      ...args,
    ]),
    { env: { ...process.env, CAIRN_LOG: "error", CAIRN_TOKEN: "", ...ENV }, stdio: ["ignore", "ignore", "pipe"] },
  );
  children.add(child);
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ url: match[1] as string, child });
    });
    child.once("exit", (code) => reject(Object.assign(new Error(stderr), { code })));
  });
}

interface Peer {
  client: Client;
  transport: StreamableHTTPClientTransport;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  call(name: string, args: Record<string, unknown>, options?: CallOptions): Promise<{ isError: boolean; json: any }>;
}
interface CallOptions {
  signal?: AbortSignal;
  onprogress?: (progress: { message?: string }) => void;
}

async function open(url: string, role: Role): Promise<Peer> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKENS[role]}` } },
  });
  const client = new Client({ name: `shares-${role}`, version: "1" });
  await client.connect(transport);
  clients.add(client);
  return {
    client,
    transport,
    async call(name, args, options = {}) {
      const r = await client.callTool({ name, arguments: args }, undefined, { ...options, timeout: 120_000 });
      const text = (r.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { isError: r.isError === true, json };
    },
  };
}

/** A raw initialize with `role`'s token: the status, the Retry-After header and the body. */
function rawInitialize(
  url: string,
  role: Role,
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
): Promise<{ status: number; retryAfter: string | undefined; body: any }> {
  const { port } = new URL(url);
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/mcp",
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          Authorization: `Bearer ${TOKENS[role]}`,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          const retry = res.headers["retry-after"];
          // A 200 answers over SSE; only refusals are parsed.
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: retry,
            body: res.statusCode === 200 ? text : JSON.parse(text),
          });
        });
      },
    );
    req.once("error", reject);
    req.end(body);
  });
}

/** Starts a snippet that loops until its deadline; resolves once it runs (its first progress line). */
async function startBlocker(peer: Peer, signal: AbortSignal): Promise<{ reply: Promise<unknown> }> {
  let started: () => void = () => {};
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const reply = peer
    .call(
      "execute_code",
      { code: "console.log('blocking'); while (true) {}", timeout_ms: 30_000 },
      { signal, onprogress: (p) => p.message?.includes("blocking") && started() },
    )
    .catch((error: unknown) => error);
  await Promise.race([running, reply.then((r) => Promise.reject(new Error(`blocker ended: ${JSON.stringify(r)}`)))]);
  return { reply };
}

describe("fair shares over HTTP, three identities", () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serve("shares", TOML, ["--max-sessions", "9"]));
  }, 60_000);

  it("refuses a reader's fourth session with 429 naming its limit, leaves the others room, and admits it again after a DELETE", async () => {
    const mine = [await open(url, "reader"), await open(url, "reader"), await open(url, "reader")];
    const refused = await rawInitialize(url, "reader");
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.retryAfter);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(1800);
    const { message, data } = refused.body.error;
    expect(message).toContain("identity reader-1 holds 3 of its 3 sessions");
    expect(message).toContain("[http] max_sessions_per_identity = 3");
    expect(message).toContain("3 identities share --max-sessions 9");
    expect(message).toMatch(/close an idle one with DELETE \/mcp.*wait for the idle timeout \(1800 s; 3 of them idle/);
    expect(data).toEqual({
      code: "SHARE_EXHAUSTED",
      identity: "reader-1",
      share: "sessions",
      limit: 3,
      held: 3,
      idle: 3,
    });
    // The approver and the writer still open sessions and run snippets.
    for (const role of ["approver", "writer"] as const) {
      const peer = await open(url, role);
      expect((await peer.call("execute_code", { code: "return 40 + 2" })).json.value).toBe(42);
      await peer.transport.terminateSession();
    }
    // The reader frees one with DELETE and opens again; the fresh session answers.
    await (mine[0] as Peer).transport.terminateSession();
    const again = await open(url, "reader");
    expect((await again.call("execute_code", { code: "return 'again'" })).json.value).toBe("again");
    expect((await rawInitialize(url, "reader")).status).toBe(429);
    for (const peer of [...mine.slice(1), again]) await peer.transport.terminateSession();
    expect((await rawInitialize(url, "reader")).status).toBe(200);
  }, 120_000);

  it("refuses a reader's third run in flight naming its limit, runs the others' snippets, and admits it again once one ends", async () => {
    const reader = await open(url, "reader");
    const cancel = [new AbortController(), new AbortController()];
    const blockers = [await startBlocker(reader, (cancel[0] as AbortController).signal)];
    blockers.push(await startBlocker(reader, (cancel[1] as AbortController).signal));
    const third = await reader.call("execute_code", { code: "return 3" });
    expect(third.isError).toBe(true);
    expect(third.json.error.code).toBe("SHARE_EXHAUSTED");
    expect(third.json.error.message).toContain("identity reader-1 has 2 of its 2 runs in flight");
    expect(third.json.error.message).toContain(
      "[http] max_runs_per_identity = 2; 3 identities share sandbox.max_workers = 6",
    );
    expect(third.json.error.message).toMatch(/nothing ran: wait for one of them to finish .* or cancel it/);
    expect(third.json.error.data).toEqual({ identity: "reader-1", share: "runs", limit: 2, held: 2 });
    // Read-only tools take no run share: the reader still reads.
    expect((await reader.call("list", {})).isError).toBe(false);
    // The others' snippets find a worker while the reader's two loop.
    const approver = await open(url, "approver");
    const writer = await open(url, "writer");
    const others = await Promise.all([
      approver.call("execute_code", { code: "return 'approver ran'" }),
      writer.call("execute_code", { code: "return 'writer ran'" }),
      writer.call("everything__get-sum", { a: 2, b: 3 }),
    ]);
    expect(others.map((r) => r.json.value ?? r.json)).toEqual([
      "approver ran",
      "writer ran",
      "The sum of 2 and 3 is 5.",
    ]);
    // One of the reader's runs is cancelled; its share comes back once the server has stopped it.
    (cancel[0] as AbortController).abort();
    await (blockers[0] as { reply: Promise<unknown> }).reply;
    let admitted: Awaited<ReturnType<Peer["call"]>> | undefined;
    for (let attempt = 0; attempt < 1000 && admitted === undefined; attempt++) {
      const r = await reader.call("execute_code", { code: "return 'reader again'" });
      if (r.isError) expect(r.json.error.code).toBe("SHARE_EXHAUSTED");
      else admitted = r;
    }
    expect(admitted?.json.value).toBe("reader again");
    (cancel[1] as AbortController).abort();
    await (blockers[1] as { reply: Promise<unknown> }).reply;
    // The server answers everyone afterwards.
    for (const peer of [reader, approver, writer]) {
      expect((await peer.client.listTools()).tools.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it("answers a tool the role hides with NOT_ALLOWED and the role it needs, and an unknown one with TOOL_NOT_FOUND", async () => {
    const peers = {
      reader: await open(url, "reader"),
      writer: await open(url, "writer"),
      approver: await open(url, "approver"),
    };
    const listed = async (role: Role) => (await peers[role].client.listTools()).tools.map((t) => t.name);
    expect(await listed("reader")).not.toContain("everything__get-sum");
    expect(await listed("writer")).toContain("everything__get-sum");
    expect(await listed("writer")).not.toContain("approve");
    expect(await listed("approver")).toContain("approve");
    const cases: [Role, string, Record<string, unknown>, string][] = [
      ["reader", "everything__get-sum", { a: 1, b: 2 }, "writer"],
      ["reader", "everything__echo", { message: "x" }, "writer"],
      ["reader", "save", { name: "notes/x", content: "x" }, "writer"],
      ["reader", "task_define", { name: "t", objective: "o", steps: [] }, "writer"],
      ["reader", "claim", { resource: "x" }, "writer"],
      ["reader", "approve", { ref: "notes/x" }, "approver"],
      ["writer", "approve", { ref: "notes/x" }, "approver"],
    ];
    for (const [role, tool, args, needed] of cases) {
      const r = await peers[role].call(tool, args);
      expect(r.isError, `${role} ${tool}`).toBe(true);
      expect(r.json.error.code, `${role} ${tool}: ${JSON.stringify(r.json)}`).toBe("NOT_ALLOWED");
      expect(r.json.error.data).toEqual({ operation: tool, required_role: needed, role });
      expect(r.json.error.message).toContain(`${tool} needs the ${needed} role and identity ${role}-1 is a ${role}`);
    }
    for (const role of ["reader", "writer", "approver"] as const) {
      const r = await peers[role].call("no_such_tool", {});
      expect(r.json.error.code).toBe("TOOL_NOT_FOUND");
    }
    // What a role allows it still calls.
    expect((await peers.writer.call("everything__get-sum", { a: 1, b: 2 })).json).toBe("The sum of 1 and 2 is 3.");
    expect((await peers.approver.call("everything__get-sum", { a: 2, b: 2 })).json).toBe("The sum of 2 and 2 is 4.");
    for (const peer of Object.values(peers)) await peer.transport.terminateSession();
  }, 120_000);
});

describe("shares that leave no room", () => {
  it.each([
    [
      "five identities and four sandbox workers",
      ["reader", "writer", "approver"],
      "",
      [],
      /sandbox\.max_workers = 4.*raise sandbox\.max_workers to at least 5/,
    ],
    [
      "a session share past --max-sessions",
      ["reader", "writer"],
      "[http]\nmax_sessions_per_identity = 6\n",
      ["--max-sessions", "10"],
      /max_sessions_per_identity = 6 for 3 identities needs 18 sessions, more than --max-sessions 10: lower it to 3/,
    ],
    [
      "a run share past sandbox.max_workers",
      ["reader"],
      "[http]\nmax_runs_per_identity = 3\n",
      [],
      /max_runs_per_identity = 3 for 2 identities needs 6 sandbox workers, more than sandbox\.max_workers = 4: lower it to 2/,
    ],
  ] as const)(
    "refuses to start with %s, naming the fix",
    async (_label, roles, extra, args, reason) => {
      // The configured identity ($CAIRN_TOKEN) counts too; five identities: the token of each role plus two more.
      const many = roles.length === 3;
      const toml = `${extra}${tokensToml([...roles])}${many ? `\n[[http.tokens]]\ntoken_env = "TOKEN_FOUR"\nidentity = "four"\nrole = "reader"\n` : ""}`;
      writeFileSync(join(dir, "refused.toml"), toml);
      const child = spawn(
        process.execPath,
        [MAIN, "serve", "--config", join(dir, "refused.toml"), "--transport", "http", "--port", "0", ...args].concat([
          "--workspace",
          join(dir, "ws-refused"),
        ]),
        {
          env: {
            ...process.env,
            CAIRN_LOG: "error",
            CAIRN_TOKEN: "main-token-0123456789abcdef",
            TOKEN_FOUR: "four-token-0123456789abcdef",
            ...ENV,
          },
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      children.add(child);
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code).not.toBe(0);
      expect(stderr).toMatch(reason);
      expect(stderr).not.toContain("serving MCP");
    },
    60_000,
  );
});
