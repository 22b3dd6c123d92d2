// Progress and cancellation of tools/call through the built server, over stdio and over Streamable HTTP, with a real
// SDK client of each era (v2 pinned to 2026-07-28, v1 on 2025-11-25) and real upstream servers (server-everything's
// long-running operation, the cancellable fixture).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, ERAS, type Era, MAIN, newClient } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const cancellable = resolve(import.meta.dirname, "../fixtures/servers/cancellable.mjs");
const TOKEN = "cairn-progress-token-0123456789abcdef";
const LONG_RUNNING = "everything.trigger-long-running-operation";

// One worker: a run that outlived its cancellation would hold it, and the next call, queued, would answer BUSY at its
// own deadline instead of its value.
const TOML = `
[sandbox]
max_workers = 1
max_queued = 2

[gateway]
direct = true

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.cancellable]
command = "${process.execPath}"
args = ["${cancellable}"]
`;

interface Peer {
  era: Era;
  client: Client;
  /** Every notifications/progress that reached this client, whatever its token. */
  progressSeen: Progress[];
  close(): Promise<void>;
}

interface Called {
  result: CallToolResult;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  json: any;
  notes: Progress[];
}

/** Records progress notifications as they arrive, before the SDK routes them by token. */
function watchProgress(transport: Transport, seen: Progress[]): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ("method" in message && message.method === "notifications/progress") seen.push(message.params as Progress);
    deliver?.(message, extra);
  };
}

async function overStdio(era: Era): Promise<Peer> {
  const connected = await connect(TOML, [], era);
  const progressSeen: Progress[] = [];
  watchProgress(connected.transport, progressSeen);
  return { era, client: connected.client, progressSeen, close: () => connected.close() };
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Starts the built server over HTTP on a free port; resolves with its URL once it listens. */
function serveHttp(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-progress-"));
  dirs.push(dir);
  writeFileSync(join(dir, "cairn.toml"), TOML);
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "serve",
      "--transport",
      "http",
      "--port",
      "0",
      "--config",
      join(dir, "cairn.toml"),
      "--workspace",
      join(dir, "ws"),
    ],
    { env: { ...process.env, CAIRN_LOG: "error", CAIRN_TOKEN: TOKEN }, stdio: ["ignore", "ignore", "pipe"], cwd: dir },
  );
  children.add(child);
  return new Promise((resolveUrl, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolveUrl(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
}

async function overHttp(url: string, era: Era = "2025-11-25"): Promise<Peer> {
  const requestInit = { headers: { Authorization: `Bearer ${TOKEN}` } };
  if (era === "2026-07-28") {
    const transport = new ModernHttp(new URL(url), { requestInit });
    const client = newClient(era);
    await (client as unknown as ModernClient).connect(transport);
    const progressSeen: Progress[] = [];
    watchProgress(transport as unknown as Transport, progressSeen);
    return { era, client, progressSeen, close: () => client.close() };
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  const client = new Client({ name: "cairn-progress-tests", version: "1.0.0" });
  await client.connect(transport);
  const progressSeen: Progress[] = [];
  watchProgress(transport, progressSeen);
  return {
    era,
    client,
    progressSeen,
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** One tools/call; with `progress`, the client sends a progress token and the notes are collected. */
async function call(
  peer: Peer,
  name: string,
  args: Record<string, unknown>,
  options: { progress?: boolean; signal?: AbortSignal; onNote?: (note: Progress) => void } = {},
): Promise<Called> {
  const notes: Progress[] = [];
  const request = {
    timeout: 120_000,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.progress
      ? {
          onprogress: (note: Progress) => {
            notes.push(note);
            options.onNote?.(note);
          },
        }
      : {}),
  };
  // The v2 client takes the request options second, the v1 client third (after a result schema).
  const result = (
    peer.era === "2026-07-28"
      ? await (peer.client as unknown as ModernClient).callTool({ name, arguments: args }, request)
      : await peer.client.callTool({ name, arguments: args }, undefined, request)
  ) as CallToolResult;
  const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { result, json, notes };
}

const LOGS_AND_SLEEPS =
  "console.log('loading page 1'); await new Promise((r) => setTimeout(r, 400)); " +
  "console.log('loading page 2'); await new Promise((r) => setTimeout(r, 400)); return 'done'";

function expectIncreasing(notes: Progress[]): void {
  for (let i = 1; i < notes.length; i++) {
    expect((notes[i] as Progress).progress).toBeGreaterThan((notes[i - 1] as Progress).progress);
  }
}

const transports: [string, () => Promise<() => Promise<Peer>>][] = ERAS.flatMap(
  (era): [string, () => Promise<() => Promise<Peer>>][] => [
    [`stdio, ${era}`, async () => () => overStdio(era)],
    [
      `Streamable HTTP, ${era}`,
      async () => {
        const url = await serveHttp();
        return () => overHttp(url, era);
      },
    ],
  ],
);

describe.each(transports)("progress and cancellation over %s", (_name, start) => {
  let open: () => Promise<Peer>;
  let peer: Peer;
  beforeAll(async () => {
    open = await start();
    peer = await open();
  }, 60_000);
  afterAll(async () => {
    await peer?.close();
  });

  it("reports a snippet's console lines while it sleeps, in notifications of increasing progress", async () => {
    const { json, notes } = await call(peer, "execute_code", { code: LOGS_AND_SLEEPS }, { progress: true });
    expect(json.value).toBe("done");
    const messages = notes.map((n) => n.message ?? "");
    expect(messages.some((m) => m.endsWith(": loading page 1"))).toBe(true);
    expect(messages.some((m) => m.endsWith(": loading page 2"))).toBe(true);
    for (const message of messages) expect(message).toMatch(/^running \d+\.\d s/);
    expectIncreasing(notes);
  });

  it("forwards server-everything's progress on a long-running call the snippet makes", async () => {
    const { json, notes } = await call(
      peer,
      "execute_code",
      { code: `return await call_tool("${LONG_RUNNING}", { duration: 2, steps: 4 })` },
      { progress: true },
    );
    expect(json.value).toContain("Long running operation completed");
    const forwarded = notes.filter((n) => new RegExp(`, 1 host call: ${LONG_RUNNING} [1-4]/4$`).test(n.message ?? ""));
    expect(forwarded.length).toBeGreaterThan(0);
    expectIncreasing(notes);
  });

  it("forwards upstream progress of a direct tool call", async () => {
    const { result, notes } = await call(
      peer,
      "everything__trigger-long-running-operation",
      { duration: 1, steps: 2 },
      { progress: true },
    );
    expect(result.isError).not.toBe(true);
    expect(
      notes.some((n) => /^running \d+\.\d s: everything\.trigger-long-running-operation 1\/2$/.test(n.message ?? "")),
    ).toBe(true);
  });

  it("sends no progress and asks no upstream for it when the client sent no token", async () => {
    peer.progressSeen.length = 0;
    const logged = await call(peer, "execute_code", { code: LOGS_AND_SLEEPS });
    expect(logged.json.value).toBe("done");
    const upstream = await call(peer, "execute_code", {
      code: `await call_tool("${LONG_RUNNING}", { duration: 0.4, steps: 2 }); return await cancellable.has_progress_token({})`,
    });
    expect(upstream.json.value).toBe(false);
    expect(peer.progressSeen).toEqual([]);
    const asked = await call(
      peer,
      "execute_code",
      { code: "return await cancellable.has_progress_token({})" },
      { progress: true },
    );
    expect(asked.json.value).toBe(true);
  });

  it("stops a cancelled snippet and its upstream call, and answers the next call", async () => {
    const before = (await call(peer, "execute_code", { code: "return await cancellable.cancellations({})" })).json
      .value;
    const controller = new AbortController();
    let inFlight: () => void = () => {};
    const waiting = new Promise<void>((resolveWaiting) => (inFlight = resolveWaiting));
    const pending = call(
      peer,
      "execute_code",
      { code: "console.log('about to wait'); await cancellable.wait({}); return 'never'" },
      {
        progress: true,
        signal: controller.signal,
        onNote: (note) => {
          if (note.message?.endsWith(": cancellable.wait 1 waiting")) inFlight();
        },
      },
    );
    await waiting;
    controller.abort();
    await expect(pending).rejects.toThrow();
    // Queued behind the cancelled run on the only worker: it runs only once that run has ended and, ending, has
    // cancelled its upstream call.
    const next = await call(peer, "execute_code", {
      code: "return await cancellable.cancellations({})",
      timeout_ms: 20_000,
    });
    expect(next.json).toMatchObject({ ok: true, value: before + 1 });
  });
});

describe("progress across Streamable HTTP sessions", () => {
  let url: string;
  beforeAll(async () => {
    url = await serveHttp();
  }, 60_000);

  it("reaches only the session and the call that asked for it", async () => {
    const [a, b, c] = await Promise.all([overHttp(url), overHttp(url), overHttp(url)]);
    const code = (who: string) =>
      `for (let i = 0; i < 3; i++) { console.log('${who} line ' + i); await new Promise((r) => setTimeout(r, 300)) } return '${who}'`;
    // One worker: the three runs take turns, so each session's notes come while another waits in the queue.
    const runs = await Promise.all([
      call(a as Peer, "execute_code", { code: code("alpha") }, { progress: true }),
      call(b as Peer, "execute_code", { code: code("beta") }, { progress: true }),
      call(c as Peer, "execute_code", { code: code("gamma") }),
    ]);
    expect(runs.map((r) => r.json.value)).toEqual(["alpha", "beta", "gamma"]);
    const [alpha, beta] = runs as [Called, Called, Called];
    expect(alpha.notes.length).toBeGreaterThan(0);
    expect(beta.notes.length).toBeGreaterThan(0);
    // Everything a session's connection carried, not only what the SDK handed the call (it drops a notification
    // read in the same chunk as the reply), is its own.
    const seenA = (a as Peer).progressSeen.map((n) => n.message ?? "");
    const seenB = (b as Peer).progressSeen.map((n) => n.message ?? "");
    expect(seenA).toEqual(expect.arrayContaining(alpha.notes.map((n) => n.message)));
    expect(seenB).toEqual(expect.arrayContaining(beta.notes.map((n) => n.message)));
    expect(seenA.filter((m) => /beta|gamma/.test(m))).toEqual([]);
    expect(seenB.filter((m) => /alpha|gamma/.test(m))).toEqual([]);
    expect((c as Peer).progressSeen).toEqual([]);
    for (const peer of [a, b, c]) await (peer as Peer).close();
  });
});
