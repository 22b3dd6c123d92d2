// The graceful drain of `cairn serve --transport http` on SIGTERM (decision 0290), against the built server: the
// requests in flight finish while new work is refused with 503, Retry-After and DRAINING (nothing of it ran), /readyz
// says draining and /healthz still answers, then exit 0; the bound ([http] drain_timeout_ms) or a second SIGTERM
// stops what remains, named on stderr, exit 1. Nothing a client holds keeps the process: open streams (a 2025
// session's GET stream, a 2026-07-28 subscriptions/listen), a body that never finishes arriving, a run waiting for a
// person's approval (stopped with the server; its retry is let through while the drain lasts). Runs are held open by
// the gate fixture (test/fixtures/servers/gate.mjs) until the test writes a file: events, never time.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLEET_TOKEN, fileAppears, type Served, startServe } from "../helpers/fleet.js";
import { connectHttp } from "../helpers/mcp-client.js";

const gate = resolve(import.meta.dirname, "../fixtures/servers/gate.mjs");
const AUTH = { Authorization: `Bearer ${FLEET_TOKEN}` };
const DRAINING_LINE = /^cairn: draining: /;

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "cairn-drain-"));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A server with the gate upstream (its `pass` behind an approval) and `http` lines in its [http] table. */
async function serve(name: string, http = ""): Promise<{ served: Served; gates: string }> {
  const dir = join(root, name);
  const gates = join(dir, "gates");
  const { mkdirSync } = await import("node:fs");
  mkdirSync(gates, { recursive: true });
  writeFileSync(
    join(dir, "cairn.toml"),
    `[http]
${http}

[approvals]
timeout_ms = 60000

[servers.gate]
command = "${process.execPath}"
args = ["${gate}"]
approve = ["pass"]
parallel_writes = true
`,
  );
  const served = await startServe(["--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")]);
  return { served, gates };
}

async function modernClient(url: string, manual = false): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "drain-tests", version: "1.0.0" },
    {
      capabilities: manual ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      ...(manual ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  await client.connect(new ModernHttp(new URL(url), { requestInit: { headers: AUTH } }));
  return client;
}

/** A run held at the gate `id` until the test writes its go file; resolves with the call's result text. */
function gatedRun(client: ModernClient, gates: string, id: string): Promise<string> {
  return client
    .callTool(
      {
        name: "execute_code",
        arguments: { code: `await gate.enter({ dir: ${JSON.stringify(gates)}, id: "${id}" }); return "after ${id}"` },
      },
      { timeout: 120_000 },
    )
    .then((r) => ((r.content ?? []) as { text?: string }[]).map((c) => c.text ?? "").join(""));
}

/** A raw POST of a JSON-RPC request to /mcp (what any client sends first), answered as status, headers and body. */
// biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
async function rawPost(url: string, body: unknown): Promise<{ status: number; headers: Headers; json: any }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { ...AUTH, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, headers: response.headers, json };
}

const CALL = {
  jsonrpc: "2.0",
  id: 7,
  method: "tools/call",
  params: { name: "execute_code", arguments: { code: "1" } },
};

describe("a graceful drain on SIGTERM", () => {
  it("lets the run in flight finish, refuses new work with 503 DRAINING and Retry-After, then exits 0", async () => {
    const { served, gates } = await serve("finish");
    const client = await modernClient(served.url);
    const legacy = await connectHttp("2025-11-25", served.url, FLEET_TOKEN);
    const origin = served.url.slice(0, -"/mcp".length);
    const running = gatedRun(client, gates, "a");
    await fileAppears(join(gates, "a.entered"));
    served.child.kill("SIGTERM");
    expect(await served.line(DRAINING_LINE)).toContain("1 request (tools/call execute_code) in flight");

    // New work, of either era, is refused: nothing of it ran.
    const refused = await rawPost(served.url, CALL);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("connection")).toBe("close");
    expect(refused.json.id).toBe(7);
    expect(refused.json.error.data).toEqual({ code: "DRAINING", retryAfterS: 1 });
    expect(refused.json.error.message).toMatch(/nothing of this request ran; send it again/);
    const initialize = await rawPost(served.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "late", version: "1" } },
    });
    expect([initialize.status, initialize.json.error.data.code]).toEqual([503, "DRAINING"]);
    // The client the SDK drives sees the same refusal as an HTTP error it can retry on.
    const late = await client.callTool({ name: "execute_code", arguments: { code: "return 1" } }).catch((e) => e);
    expect((late as { data?: { status?: number } }).data?.status).toBe(503);
    // A 2025 session opened before the drain gets no new run either.
    const lateLegacy = await legacy.callTool({ name: "execute_code", arguments: { code: "return 1" } }).catch((e) => e);
    expect(String(lateLegacy)).toMatch(/503|DRAINING/);

    // The balancer's view: not ready, but alive.
    const ready = await fetch(`${origin}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([503, { status: "draining" }]);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);

    writeFileSync(join(gates, "a.go"), "");
    expect(await running).toContain("after a");
    expect(await served.exited).toBe(0);
    expect(served.stderr()).toContain("cairn: drained: every request in flight finished");
    await Promise.allSettled([client.close(), legacy.close()]);
  }, 90_000);

  it("stops what remains when [http] drain_timeout_ms passes, naming it, and exits 1", async () => {
    const { served, gates } = await serve("bound", "drain_timeout_ms = 1000");
    const client = await modernClient(served.url);
    const running = gatedRun(client, gates, "b").catch((e: unknown) => e);
    await fileAppears(join(gates, "b.entered"));
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(1);
    expect(served.stderr()).toMatch(
      /cairn: 1 s \(\[http\] drain_timeout_ms\) passed: stopping 1 request \(tools\/call execute_code\) still in flight/,
    );
    // The client is not left waiting: its call ends (without an answer) when the server stops it.
    expect(await running).toBeInstanceOf(Error);
    await client.close().catch(() => {});
  }, 90_000);

  it("stops at once on a second SIGTERM, whatever the bound", async () => {
    const { served, gates } = await serve("twice");
    const client = await modernClient(served.url);
    const running = gatedRun(client, gates, "c").catch((e: unknown) => e);
    await fileAppears(join(gates, "c.entered"));
    served.child.kill("SIGTERM");
    await served.line(DRAINING_LINE);
    served.child.kill("SIGTERM");
    const code = await served.exited;
    expect([code, served.child.signalCode, served.stderr()]).toEqual([1, null, expect.any(String)]);
    expect(served.stderr()).toMatch(/a second signal came: stopping 1 request \(tools\/call execute_code\)/);
    expect(await running).toBeInstanceOf(Error);
    await client.close().catch(() => {});
  }, 90_000);

  it("is not held by open streams or by a request whose body never finishes arriving", async () => {
    const { served } = await serve("streams");
    // A 2025 session with its standalone GET stream open, and a 2026-07-28 subscriptions/listen stream.
    const legacy = await connectHttp("2025-11-25", served.url, FLEET_TOKEN);
    const modern = await modernClient(served.url);
    await modern.listen({ toolsListChanged: true });
    // Headers of a POST announcing 1000 bytes, and 10 of them: the request never reaches Cairn's routing.
    const slow = connectTcp(served.port, "127.0.0.1");
    await new Promise<void>((done) => slow.once("connect", () => done()));
    slow.on("error", () => {});
    slow.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${FLEET_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"`,
    );
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(served.stderr()).toContain("cairn: draining: no request in flight");
    slow.destroy();
    await Promise.allSettled([legacy.close(), modern.close()]);
  }, 90_000);
});

describe("a drain on a server a balancer probes", () => {
  it("waits for the next readiness probe, which is told it drains, before it stops listening", async () => {
    const { served } = await serve("probed");
    const origin = served.url.slice(0, -"/mcp".length);
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    served.child.kill("SIGTERM");
    await served.line(DRAINING_LINE);
    const told = await fetch(`${origin}/readyz`);
    expect([told.status, await told.json()]).toEqual([503, { status: "draining" }]);
    expect(await served.exited).toBe(0);
    expect(served.stderr()).toContain("cairn: drained: every request in flight finished");
  }, 90_000);

  it("waits for that probe no longer than the bound, and exits 0 when nothing was in flight", async () => {
    const { served } = await serve("unprobed", "drain_timeout_ms = 1000");
    expect((await fetch(`${served.url.slice(0, -"/mcp".length)}/readyz`)).status).toBe(200);
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(served.stderr()).toContain("before a readiness probe saw the drain: no request was in flight");
  }, 90_000);
});

describe("runs waiting for an approval during a drain", () => {
  const pass = { name: "execute_code", arguments: { code: `await gate.pass({}); return "approved"` } };
  const approve = { approval: { action: "accept", content: { approve: true } } };

  it("do not hold the drain: the server exits 0 and says it stopped them", async () => {
    const { served } = await serve("held");
    const manual = await modernClient(served.url, true);
    // biome-ignore lint/suspicious/noExplicitAny: the input_required shape is free-form JSON here
    const first: any = await manual.callTool(pass, { allowInputRequired: true });
    expect(first.resultType).toBe("input_required");
    served.child.kill("SIGTERM");
    expect(await served.exited).toBe(0);
    expect(served.stderr()).toMatch(/stopping 1 run waiting for an approval \(their retries answer APPROVAL_EXPIRED/);
    await manual.close().catch(() => {});
  }, 90_000);

  it("resume when the retry comes while other work keeps the drain open", async () => {
    const { served, gates } = await serve("resume");
    const manual = await modernClient(served.url, true);
    const other = await modernClient(served.url);
    // biome-ignore lint/suspicious/noExplicitAny: the input_required shape is free-form JSON here
    const first: any = await manual.callTool(pass, { allowInputRequired: true });
    expect(first.resultType).toBe("input_required");
    const running = gatedRun(other, gates, "r");
    await fileAppears(join(gates, "r.entered"));
    served.child.kill("SIGTERM");
    await served.line(DRAINING_LINE);
    // The retry continues a run this server holds: it is not new work.
    const retry = { ...pass, inputResponses: approve, requestState: first.requestState } as typeof pass;
    const done = await manual.callTool(retry, { allowInputRequired: true, timeout: 60_000 });
    expect(JSON.stringify(done.content)).toContain("approved");
    // A state nobody issued passes the drain's door too, and is refused without running anything.
    const forged = await manual.callTool({ ...pass, requestState: "c1.e30.AAAA" } as typeof pass, {
      allowInputRequired: true,
    });
    expect(JSON.stringify(forged.content)).toContain("APPROVAL_INVALID");
    // A fresh call of the same client is new work.
    const fresh = await manual.callTool(pass, { allowInputRequired: true }).catch((e) => e);
    expect((fresh as { data?: { status?: number } }).data?.status).toBe(503);
    writeFileSync(join(gates, "r.go"), "");
    expect(await running).toContain("after r");
    expect(await served.exited).toBe(0);
    await Promise.allSettled([manual.close(), other.close()]);
  }, 90_000);
});
