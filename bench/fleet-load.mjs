// The fleet bench's load generator and meters: 2026-07-28 clients that count their HTTP requests, a bare HTTP client
// for the floor, the catalog's write lock sampled from pg_locks, and timed segments with the CPU time they cost.
import { performance } from "node:perf_hooks";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import pg from "pg";
import { cpuSeconds } from "../scripts/fleet.mjs";
import { ms, summary } from "./lib.mjs";

export const FLEET_TOKEN = "cairn-bench-fleet-token-5b2e90c4d1a7f3";
const SAMPLE_MS = 25;

/**
 * A 2026-07-28 client (v2 SDK, pinned) that counts the HTTP requests it sends.
 * @param {string} url
 */
export async function connect(url) {
  let requests = 0;
  /** @type {typeof fetch} */
  const counting = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  const client = new ModernClient(
    { name: "cairn-bench-fleet", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernHttp(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${FLEET_TOKEN}` } },
      fetch: counting,
    }),
  );
  /**
   * A tool's text; a failed call is a fault the bench must not hide.
   * @param {string} name
   * @param {Record<string, unknown>} args
   */
  const call = async (name, args) => {
    const r = /** @type {{ content?: { type: string, text?: string }[], isError?: boolean }} */ (
      await client.callTool({ name, arguments: args }, { timeout: 120_000 })
    );
    const text = (r.content ?? []).map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("");
    if (r.isError) throw new Error(`${name} through ${url} failed: ${text.slice(0, 400)}`);
    return text;
  };
  /** @param {string} code */
  const run = async (code) => {
    const text = await call("execute_code", { code });
    const json = JSON.parse(text);
    if (json.ok !== true) throw new Error(`execute_code through ${url}: ${text.slice(0, 400)}`);
    return json.value;
  };
  return { call, run, requests: () => requests, close: () => client.close().catch(() => {}) };
}

/** @typedef {Awaited<ReturnType<typeof connect>>} Peer */
/** @typedef {(name: string, t0: number) => void} Recorder */

/**
 * Samples the catalog's write lock (an advisory lock, decision 0220) and the client connections every SAMPLE_MS
 * from one connection of its own: the fraction of samples in which the lock was held is its utilisation.
 * @param {string} url
 */
export async function lockSampler(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  /** @type {{ held: number, waiting: number, active: number, connections: number }[]} */
  let samples = [];
  let on = false;
  /** @type {Promise<void>} */
  let loop = Promise.resolve();
  const sql = `SELECT
      (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted)::int AS held,
      (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)::int AS waiting,
      (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid())::int AS active,
      (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())::int AS connections`;
  return {
    start() {
      samples = [];
      on = true;
      loop = (async () => {
        while (on) {
          samples.push((await client.query(sql)).rows[0]);
          await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
        }
      })();
    },
    async stop() {
      on = false;
      await loop;
      const n = samples.length || 1;
      /** @param {(s: (typeof samples)[number]) => number} f */
      const mean = (f) => samples.reduce((sum, s) => sum + f(s), 0) / n;
      return {
        samples: samples.length,
        lock_held: Number(mean((s) => (s.held > 0 ? 1 : 0)).toFixed(3)),
        lock_waiters: Number(mean((s) => s.waiting).toFixed(2)),
        active_connections: Number(mean((s) => s.active).toFixed(2)),
        max_connections_open: Math.max(0, ...samples.map((s) => s.connections)),
      };
    },
    close: () => client.end(),
  };
}

/**
 * Runs `work` on every client in a loop for `seconds`, then reads what it cost: calls, latencies by kind, HTTP
 * requests sent, and CPU seconds of each process group (and of this load generator) over the segment.
 * @template {string} K
 * @param {{ peers: Peer[], seconds: number, groups: Record<K, number[]>, sampler?: Awaited<ReturnType<typeof lockSampler>>, work: (peer: Peer, client: number, i: number, record: Recorder) => Promise<void> }} options
 */
export async function segment({ peers, seconds, groups, sampler, work }) {
  /** @type {Map<string, number[]>} */
  const samples = new Map();
  /** @type {Recorder} */
  const record = (name, t0) => {
    const list = samples.get(name) ?? [];
    list.push(performance.now() - t0);
    samples.set(name, list);
  };
  const requests0 = peers.reduce((sum, p) => sum + p.requests(), 0);
  const cpu0 = cpuSeconds(groups);
  const self0 = process.cpuUsage();
  sampler?.start();
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    peers.map(async (peer, c) => {
      for (let i = 0; performance.now() < deadline; i++) await work(peer, c, i, record);
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const lock = await sampler?.stop();
  const self = process.cpuUsage(self0);
  const cpu1 = cpuSeconds(groups);
  /** @type {Record<string, number>} */
  const cpu = {};
  for (const name of Object.keys(groups)) cpu[name] = cpu1[/** @type {K} */ (name)] - cpu0[/** @type {K} */ (name)];
  cpu.load_generator = (self.user + self.system) / 1e6;
  return {
    wall,
    samples,
    requests: peers.reduce((sum, p) => sum + p.requests(), 0) - requests0,
    cpu,
    ...(lock === undefined ? {} : { lock }),
  };
}

/** @typedef {Awaited<ReturnType<typeof segment>>} Segment */

/**
 * Adds segments of one setting over the rounds: throughput over their summed wall time, percentiles over every call.
 * @param {Segment[]} parts
 */
export function combine(parts) {
  const wall = parts.reduce((sum, p) => sum + p.wall, 0);
  /** @type {number[]} */
  const all = [];
  /** @type {Record<string, number[]>} */
  const byKind = {};
  for (const p of parts) {
    for (const [kind, list] of p.samples) {
      all.push(...list);
      byKind[kind] = [...(byKind[kind] ?? []), ...list];
    }
  }
  /** @type {Record<string, number>} */
  const cpu = {};
  for (const p of parts) for (const [name, s] of Object.entries(p.cpu)) cpu[name] = (cpu[name] ?? 0) + s;
  const calls = all.length;
  const s = summary(all);
  // Catalog writes: a handle's row (save_result) and a version (save), each behind the write lock.
  const writes = (byKind.save_result?.length ?? 0) + (byKind.save?.length ?? 0);
  /** @param {number} seconds */
  const perCall = (seconds) => Number(((seconds / calls) * 1000).toFixed(2));
  const locks = parts.flatMap((p) => (p.lock === undefined ? [] : [p.lock]));
  /** @param {(l: (typeof locks)[number]) => number} f */
  const lockMean = (f) =>
    locks.length ? Number((locks.reduce((sum, l) => sum + f(l), 0) / locks.length).toFixed(3)) : undefined;
  return {
    calls,
    seconds: Number(wall.toFixed(2)),
    rps: Math.round(calls / wall),
    p50_ms: ms(s.median),
    p95_ms: ms(s.p95),
    http_requests_per_call: Number((parts.reduce((sum, p) => sum + p.requests, 0) / calls).toFixed(2)),
    cpu_ms_per_call: Object.fromEntries(Object.entries(cpu).map(([name, seconds]) => [name, perCall(seconds)])),
    by_kind: Object.fromEntries(
      Object.entries(byKind).map(([kind, list]) => {
        const k = summary(list);
        return [kind, { calls: k.n, p50_ms: ms(k.median), p95_ms: ms(k.p95) }];
      }),
    ),
    ...(locks.length
      ? {
          lock_held: lockMean((l) => l.lock_held),
          writes_per_s: Math.round(writes / wall),
          // Little's law on the lock: held fraction = writes per second × hold time.
          lock_hold_ms_per_write: writes
            ? Number(((((lockMean((l) => l.lock_held) ?? 0) * wall) / writes) * 1000).toFixed(1))
            : undefined,
          lock_waiters: lockMean((l) => l.lock_waiters),
          active_connections: lockMean((l) => l.active_connections),
          max_connections_open: Math.max(...locks.map((l) => l.max_connections_open)),
        }
      : {}),
  };
}

/** @typedef {ReturnType<typeof combine>} Combined */

/**
 * The bare floor: the same number of clients POSTing a tools/call body and reading the answer, nothing parsed.
 * @param {string} url
 */
export function barePeer(url) {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "execute_code", arguments: { code: "return 1 + 1" } },
  });
  let requests = 0;
  /** @type {Peer} */
  const peer = {
    call: async () => {
      requests++;
      const response = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`bare HTTP ${url}: ${response.status} ${text}`);
      return text;
    },
    run: async () => undefined,
    requests: () => requests,
    close: async () => {},
  };
  return peer;
}
