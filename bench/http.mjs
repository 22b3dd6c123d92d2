import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expectValue, ms, progress, QUICK, startCairn, startHttp, summary, table } from "./lib.mjs";

/** @import { CallToolResult } from "@modelcontextprotocol/sdk/types.js" */
/** @import { RunJson, RunReply } from "./lib.mjs" */

/** @typedef {{ exec: () => Promise<RunReply> }} BenchClient */

const CALLS_PER_CLIENT = QUICK ? 30 : 200;
const WARMUP_PER_CLIENT = 5;
const TOKEN = "cairn-bench-token-7d0c52e1b9";
const SNIPPET = "return 1 + 1";

/** @param {string} url */
async function httpClient(url) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  const client = new Client({ name: "cairn-bench-http", version: "1.0.0" });
  await client.connect(transport);
  const exec = async () => {
    // The default result schema is CallToolResultSchema; the declared type also admits the legacy `toolResult`.
    const r = /** @type {CallToolResult} */ (
      await client.callTool({ name: "execute_code", arguments: { code: SNIPPET } })
    );
    const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
    /** @type {RunJson | null} */
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { isError: !!r.isError, text, json };
  };
  const close = async () => {
    await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  };
  return { exec, close };
}

/**
 * Every client warms up, then all run their calls at once; latency per call and throughput over the wall time.
 * @param {BenchClient[]} clients
 */
async function drive(clients) {
  await Promise.all(
    clients.map(async (c) => {
      for (let i = 0; i < WARMUP_PER_CLIENT; i++) expectValue(await c.exec(), 2, "warm-up");
    }),
  );
  /** @type {number[]} */
  const samples = [];
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      for (let i = 0; i < CALLS_PER_CLIENT; i++) {
        const start = performance.now();
        const reply = await c.exec();
        samples.push(performance.now() - start);
        expectValue(reply, 2, "execute_code");
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const s = summary(samples);
  return {
    calls: samples.length,
    rps: Math.round(samples.length / seconds),
    median_ms: ms(s.median),
    p95_ms: ms(s.p95),
  };
}

export default async function run() {
  /** @type {({ transport: string, sessions: number, processes: number } & Awaited<ReturnType<typeof drive>>)[]} */
  const rows = [];
  const http = await startHttp(TOKEN);
  try {
    for (const sessions of [1, 4, 16]) {
      progress(`http: ${sessions} session(s)`);
      const clients = await Promise.all(Array.from({ length: sessions }, () => httpClient(http.url)));
      try {
        rows.push({ transport: "http", sessions, processes: 1, ...(await drive(clients)) });
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
    }
  } finally {
    await http.stop();
  }
  for (const processes of [1, 4]) {
    progress(`stdio: ${processes} process(es)`);
    const servers = await Promise.all(Array.from({ length: processes }, () => startCairn()));
    try {
      const clients = servers.map((s) => ({ exec: () => s.exec(SNIPPET) }));
      rows.push({ transport: "stdio", sessions: processes, processes, ...(await drive(clients)) });
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  }
  console.log(
    `execute_code "${SNIPPET}": ${CALLS_PER_CLIENT} timed calls per session after ${WARMUP_PER_CLIENT} warm-up`,
  );
  const text = table(rows);
  /**
   * @param {string} transport
   * @param {number} sessions
   */
  const one = (transport, sessions) => {
    const row = rows.find((r) => r.transport === transport && r.sessions === sessions);
    if (!row) throw new Error(`http bench: no ${transport} row for ${sessions} sessions`);
    return row;
  };
  const summaryLine = `http 1/4/16 sessions: ${one("http", 1).rps}/${one("http", 4).rps}/${one("http", 16).rps} req/s (p95 ${one("http", 1).p95_ms}/${one("http", 4).p95_ms}/${one("http", 16).p95_ms} ms); stdio 1/4: ${one("stdio", 1).rps}/${one("stdio", 4).rps} req/s (p95 ${one("stdio", 1).p95_ms}/${one("stdio", 4).p95_ms} ms)`;
  return { snippet: SNIPPET, calls_per_session: CALLS_PER_CLIENT, rows, table: text, summary: summaryLine };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await run();
  console.log(result.summary);
}
