// Containment family "sql" (issue 11, property 6): SQL bombs sent to a served `query`, each expected to stop.
// Run directly (`npm run build && node bench/containment/sql.mjs`) it measures in-process DuckDB against the child.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** @import { QueryEngine, QueryInput } from "../../src/query/query-engine.js" */
/** @import { Family } from "../containment.mjs" */

const MEMORY_BOMBS = /** @type {const} */ ([
  ["one huge value (repeat)", "SELECT length(repeat('x', 2500000000)) AS n"],
  ["one huge padded value (printf)", "SELECT length(printf('%02000000000d', 1)) AS n"],
  ["many medium values (string_agg)", "SELECT length(string_agg(repeat('x', 1000000), '')) AS n FROM range(3000)"],
  ["a huge list value (range)", "SELECT len(range(0, 1000000000)) AS n"],
  ["a cross join into one list", "SELECT len(list(a.range + b.range)) AS n FROM range(30000) a, range(30000) b"],
  [
    "a recursive CTE doubling a string",
    "WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM t WHERE n < 34) SELECT max(length(s)) AS m FROM t",
  ],
  ["a regex over a huge string", "SELECT length(regexp_replace(repeat('ab', 300000000), 'a', 'xyz', 'g')) AS n"],
]);

const CPU_BOMBS = /** @type {const} */ ([
  [
    "a 10^12-row cross join",
    "SELECT count(*) AS n FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7",
  ],
  [
    "a recursive CTE without end",
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
  ],
  [
    "a regex over many medium strings",
    "SELECT sum(length(regexp_replace(repeat('ab', 1000) || range, 'a', 'xyz', 'g'))) AS n FROM range(100000000)",
  ],
]);

const INPUT = "bench/containment/sql-input";

/**
 * The family the containment harness (bench/containment.mjs) runs against a served `cairn serve`.
 * @type {Family}
 */
export const family = {
  name: "sql",
  configToml: '[workspace]\nquery_timeout_ms = 3000\nquery_memory = "256MB"\n',
  limitMb: 256,
  setup: async (call) => {
    const saved = await call("save", { name: INPUT, content: "a\n1\n2\n", kind: "csv" });
    if (saved?.error) throw new Error(`sql family setup: ${JSON.stringify(saved.error)}`);
    // The SQL engine's process starts on the first query: start it here, so the baseline holds it.
    const warm = await call("query", { inputs: [INPUT], sql: "SELECT count(*) AS n FROM input1" });
    if (warm?.error) throw new Error(`sql family warm-up: ${JSON.stringify(warm.error)}`);
  },
  // Memory bombs stop at query_memory (QUERY_FAILED, naming workspace.query_memory, or DuckDB's own out-of-memory
  // error); CPU bombs at the deadline (QUERY_TIMEOUT). Either way the DuckDB child that ran them is gone.
  bombs: [
    ...MEMORY_BOMBS.map(([name, sql]) => ({
      name,
      tool: "query",
      args: { inputs: [INPUT], sql },
      expectCode: "QUERY_FAILED",
    })),
    ...CPU_BOMBS.map(([name, sql]) => ({
      name,
      tool: "query",
      args: { inputs: [INPUT], sql },
      expectCode: "QUERY_TIMEOUT",
    })),
  ],
};

const MIB = 2 ** 20;
const LIMITS = { maxPreviewRows: 25, maxPreviewBytes: 7680, timeoutMs: 3000 };
const FLIGHTS = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data/flights-3m.parquet");

/** @param {number} pid */
function rss(pid) {
  try {
    return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/**
 * Samples the summed RSS of `pids()` every 10 ms until stopped; returns the peak.
 * @param {() => number[]} pids
 */
function sampler(pids) {
  let peak = 0;
  const sample = () => {
    peak = Math.max(
      peak,
      pids().reduce((sum, pid) => sum + rss(pid), 0),
    );
  };
  const timer = setInterval(sample, 10);
  sample();
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** This process and its children: the server's whole tree as far as SQL goes. */
function tree() {
  const pids = [process.pid];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid) pids.push(Number(entry));
    } catch {
      // Ended while read.
    }
  }
  return pids;
}

/** @param {number} bytes */
const mb = (bytes) => `${Math.round(bytes / MIB)} MiB`;

/**
 * One call's wall-clock milliseconds, and its value or what it threw.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<{ ms: number, value: T, error?: undefined } | { ms: number, value?: undefined, error: unknown }>}
 */
async function timed(fn) {
  const start = performance.now();
  try {
    const value = await fn();
    return { ms: performance.now() - start, value };
  } catch (error) {
    return { ms: performance.now() - start, error };
  }
}

/**
 * @param {number[]} samples
 * @param {number} p
 */
function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/**
 * The `code` of what a call threw (CairnError carries one), or "ok" when it answered.
 * @param {{ error?: unknown }} reply
 */
function codeOf({ error }) {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  return code ?? "ok";
}

/**
 * One bomb against one engine: reply time and code, peak RSS over baseline, RSS once replied and once settled.
 * @param {QueryEngine} engine
 * @param {QueryInput} input
 * @param {string} sql
 * @param {() => number[]} pids
 * @param {() => Promise<unknown>} settle
 */
async function bombOnce(engine, input, sql, pids, settle) {
  const baseline = pids().reduce((sum, pid) => sum + rss(pid), 0);
  const watch = sampler(pids);
  const reply = await timed(() => engine.query({ inputs: [input], sql, limits: LIMITS }));
  const afterReply = pids().reduce((sum, pid) => sum + rss(pid), 0);
  const settled = await timed(settle);
  const peak = watch.stop();
  return {
    code: codeOf(reply),
    replyMs: Math.round(reply.ms),
    settledMs: Math.round(reply.ms + settled.ms),
    peakOverBaseline: mb(peak - baseline),
    overBaselineAtReply: mb(afterReply - baseline),
  };
}

async function measure() {
  const { createDuckDbQueryEngine } = await import("../../dist/query/duckdb-query-engine.js");
  const { createChildProcessQueryEngine } = await import("../../dist/query/child-process-query-engine.js");
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-sql-"));
  const csv = join(dir, "t.csv");
  writeFileSync(csv, "a\n1\n2\n");
  /** @type {QueryInput} */
  const input = { path: csv, format: "csv" };
  /** @type {QueryInput} */
  const flights = { path: FLIGHTS, format: "parquet" };
  const memory = "1GB";
  console.log(`DuckDB containment, query_memory ${memory}, query_timeout_ms ${LIMITS.timeoutMs}, ${process.arch}`);

  // 1. A bomb in process: the reply comes at the deadline, DuckDB lets go (closing the engine waits) much later.
  console.log("\n== bombs: reply, then settled (in process: engine closed; child: next query answered)");
  for (const [name, sql] of [MEMORY_BOMBS[0], CPU_BOMBS[0]]) {
    const engine = await createDuckDbQueryEngine({ memory, tempDir: join(dir, "in") });
    const result = await bombOnce(engine, input, sql, tree, () => engine.close());
    console.log(`in process  ${name.padEnd(34)} ${JSON.stringify(result)}`);
  }
  const child = await createChildProcessQueryEngine({ memory, tempDir: join(dir, "child") });
  for (const [name, sql] of [MEMORY_BOMBS[0], MEMORY_BOMBS[6], CPU_BOMBS[0], CPU_BOMBS[2]]) {
    await child.query({ inputs: [input], sql: "SELECT 1", limits: LIMITS });
    const result = await bombOnce(child, input, sql, tree, () =>
      child.query({ inputs: [input], sql: "SELECT sum(a) FROM input1", limits: LIMITS }),
    );
    console.log(`child       ${name.padEnd(34)} ${JSON.stringify(result)}`);
  }

  // 2. Start cost: in process a fresh engine (DuckDB loaded once); the child a process that loads DuckDB.
  console.log("\n== start cost (mean of 5)");
  const inStarts = [];
  const childStarts = [];
  for (let i = 0; i < 5; i++) {
    const a = await timed(() => createDuckDbQueryEngine({ memory, tempDir: join(dir, "in") }));
    inStarts.push(a.ms);
    if (a.value === undefined) throw a.error;
    await a.value.close();
    const b = await timed(() => createChildProcessQueryEngine({ memory, tempDir: join(dir, "child") }));
    childStarts.push(b.ms);
    if (b.value === undefined) throw b.error;
    await b.value.close();
  }
  /** @param {number[]} xs */
  const mean = (xs) => Math.round(xs.reduce((s, x) => s + x, 0) / xs.length);
  console.log(`in process ${mean(inStarts)} ms; child ${mean(childStarts)} ms (first in-process start loads DuckDB)`);

  // 3. Per-query overhead: the same warm queries through both engines.
  console.log("\n== per-query latency, warm (median / p95)");
  const inProcess = await createDuckDbQueryEngine({ memory, tempDir: join(dir, "in") });
  /** @type {[name: string, target: QueryInput, sql: string, runs: number][]} */
  const latencyCases = [
    ["tiny CSV sum", input, "SELECT sum(a) AS s FROM input1", 300],
    ["flights by origin (3M rows)", flights, "SELECT origin, count(*) AS n FROM input1 GROUP BY 1 ORDER BY 2 DESC", 30],
  ];
  /** @type {[label: string, engine: QueryEngine][]} */
  const engines = [
    ["in process", inProcess],
    ["child", child],
  ];
  for (const [name, target, sql, runs] of latencyCases) {
    for (const [label, engine] of engines) {
      /** @type {number[]} */
      const samples = [];
      for (let i = 0; i < runs + 3; i++) {
        const { ms } = await timed(() => engine.query({ inputs: [target], sql, limits: LIMITS }));
        if (i >= 3) samples.push(ms);
      }
      console.log(
        `${label.padEnd(11)} ${name.padEnd(30)} ${percentile(samples, 50).toFixed(2)} / ${percentile(samples, 95).toFixed(2)} ms`,
      );
    }
  }
  await inProcess.close();
  await child.close();
  console.log(`\nthis process now: ${mb(rss(process.pid))}`);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Decision 0124's context: each SQL in process, interrupted 1 s after it starts; how long DuckDB takes to let go
 * (closing the engine waits for it) and the process's peak RSS. Takes about 80 s.
 */
async function context() {
  const { createDuckDbQueryEngine } = await import("../../dist/query/duckdb-query-engine.js");
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-sql-"));
  /** @type {QueryInput} */
  const input = { path: join(dir, "t.csv"), format: "csv" };
  writeFileSync(input.path, "a\n1\n2\n");
  console.log("in-process DuckDB, memory_limit 1GB, deadline 1 s (interrupt, then a 2 s grace before the reply)");
  for (const sql of [
    MEMORY_BOMBS[0][1],
    MEMORY_BOMBS[6][1],
    MEMORY_BOMBS[2][1],
    "SELECT sum(len(x)) AS n FROM (SELECT list(range) AS x FROM range(300000000))",
    CPU_BOMBS[0][1],
  ]) {
    const engine = await createDuckDbQueryEngine({ memory: "1GB", tempDir: join(dir, "in"), keepWarmMs: 0 });
    const baseline = rss(process.pid);
    const watch = sampler(() => [process.pid]);
    const start = performance.now();
    const reply = await timed(() => engine.query({ inputs: [input], sql, limits: { ...LIMITS, timeoutMs: 1000 } }));
    await engine.close();
    const letGo = performance.now() - start - 1000;
    console.log(
      `${sql.slice(0, 60).padEnd(60)} ${codeOf(reply)} after ${Math.round(reply.ms)} ms; ` +
        `DuckDB let go ${Math.max(0, Math.round(letGo))} ms after the interrupt; peak +${mb(watch.stop() - baseline)}`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await (process.argv[2] === "context" ? context() : measure());
}
