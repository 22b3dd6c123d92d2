// Cairn as a client of its upstreams, each era side by side (decision 0262): the time to connect a stdio upstream and
// list its tools, for a 2026-07-28 server (SDK v2) and two 2025 ones (SDK v1), four ways: the 2025 handshake alone
// (no negotiation), `auto` on the SDK's own stdio transport (it probes on a second process), `auto` on Cairn's
// transport (the probe runs on the server's process), and a reconnection with the era remembered. Then the tools/list
// round trips of a 20-call session (15 listed tools, 5 unknown names) with and without a ttlMs on the list.
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { measure, ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const require = createRequire(import.meta.url);
/** @param {string} path under dist/ */
const dist = (path) => import(pathToFileURL(join(ROOT, "dist", path)).href);
const modern = join(ROOT, "test/fixtures/servers/modern.mjs");
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const memory = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");

export default async function run() {
  const runs = QUICK ? 5 : 20;
  const memoryDir = mkdtempSync(join(tmpdir(), "cairn-bench-memory-"));
  const { BoundedStdioClientTransport } = await dist("upstream/bounded-stdio-transport.js");
  const { createUpstreamManager } = await dist("upstream/upstream-manager.js");
  const { createLogger } = await dist("log.js");
  const servers = [
    { name: "2026-07-28 fixture (SDK v2)", args: [modern] },
    { name: "server-everything (SDK v1)", args: [everything, "stdio"] },
    { name: "server-memory (SDK v1)", args: [memory] },
  ];
  /** @param {string[]} args @returns {import("@modelcontextprotocol/client/stdio").StdioServerParameters} */
  const params = (args) => ({
    command: process.execPath,
    args,
    stderr: /** @type {const} */ ("pipe"),
    env: { ...process.env, MEMORY_FILE_PATH: join(memoryDir, "memory.jsonl") },
  });
  /**
   * Connects, lists, closes; the era is checked so that a figure never belongs to another one.
   * @param {import("@modelcontextprotocol/client").Transport} transport
   * @param {import("@modelcontextprotocol/client").ClientOptions} options
   * @param {import("@modelcontextprotocol/client").ConnectOptions} [connectOptions]
   */
  const connect = async (transport, options, connectOptions = {}) => {
    const client = new Client({ name: "cairn-bench", version: "1.0.0" }, options);
    await client.connect(transport, connectOptions);
    await client.listTools();
    const era = client.getProtocolEra();
    const discover = client.getDiscoverResult();
    await client.close();
    return { era, discover };
  };
  /** @type {Record<string, unknown>[]} */
  const rows = [];
  /** @type {Record<string, Record<string, unknown>>} */
  const results = {};
  for (const server of servers) {
    progress(server.name);
    const cairnTransport = () => new BoundedStdioClientTransport(params(server.args), { maxMessageBytes: 10 << 20 });
    const learnt = await connect(cairnTransport(), { versionNegotiation: { mode: "auto" } });
    /** @type {import("@modelcontextprotocol/client").PriorDiscovery} */
    const prior =
      learnt.era === "modern" && learnt.discover !== undefined
        ? { kind: "modern", discover: learnt.discover }
        : { kind: "legacy" };
    const ways = {
      "2025 handshake only": () => connect(new StdioClientTransport(params(server.args)), {}),
      "auto, SDK transport (second process)": () =>
        connect(new StdioClientTransport(params(server.args)), { versionNegotiation: { mode: "auto" } }),
      "auto, Cairn transport (in place)": () => connect(cairnTransport(), { versionNegotiation: { mode: "auto" } }),
      "era remembered (reconnection)": () =>
        connect(cairnTransport(), { versionNegotiation: { mode: "auto" } }, { prior }),
    };
    /** @type {Record<string, { median_ms: number, p95_ms: number, runs: number }>} */
    const byWay = {};
    for (const [way, fn] of Object.entries(ways)) {
      const s = summary(await measure(fn, { warmup: 1, runs }));
      byWay[way] = { median_ms: ms(s.median), p95_ms: ms(s.p95), runs: s.n };
      rows.push({ server: server.name, era: learnt.era, way, median_ms: ms(s.median), p95_ms: ms(s.p95) });
    }
    results[server.name] = { era: learnt.era, ...byWay };
  }
  table(rows);

  progress("20-call session");
  /** @param {number} ttlMs @returns {Promise<Record<string, number>>} */
  const session = async (ttlMs) => {
    const manager = createUpstreamManager(
      {
        up: {
          command: process.execPath,
          args: [modern, "--ttl-ms", String(ttlMs)],
          env: {},
          timeout_ms: 60_000,
          allow: [],
          deny: [],
        },
      },
      { logger: createLogger("upstream", () => {}) },
    );
    try {
      for (let i = 0; i < 20; i++) {
        if (i % 4 === 3) await manager.callTool("up", `missing_${i}`, {}).catch(() => {});
        else await manager.callTool("up", "echo", { text: String(i) });
      }
      return /** @type {Record<string, number>} */ ((await manager.callTool("up", "counts", {})).structuredContent);
    } finally {
      await manager.close();
    }
  };
  const withTtl = await session(60_000);
  const withoutTtl = await session(0);
  const lists = { ttl_60000: withTtl["tools/list"], ttl_0: withoutTtl["tools/list"] };
  table([
    { ttlMs: 60000, "tools/list": withTtl["tools/list"], "tools/call": withTtl["tools/call"] },
    { ttlMs: 0, "tools/list": withoutTtl["tools/list"], "tools/call": withoutTtl["tools/call"] },
  ]);
  const m = /** @type {Record<string, { median_ms: number }>} */ (results["server-everything (SDK v1)"]);
  /** @param {string} way */
  const median = (way) => m[way]?.median_ms;
  return {
    summary:
      `connect+list on stdio, median of ${runs}: server-everything ${median("auto, SDK transport (second process)")} ms ` +
      `with the SDK's probe process, ${median("auto, Cairn transport (in place)")} ms in place, ` +
      `${median("era remembered (reconnection)")} ms remembered; tools/list in a 20-call session ${lists.ttl_0} -> ${lists.ttl_60000} with ttlMs`,
    connect: results,
    session_tools_list: lists,
  };
}
