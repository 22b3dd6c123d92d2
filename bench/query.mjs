// Benchmark: the same aggregates through DuckDbQueryEngine.query and through bare @duckdb/node-api, same run.
// Bare keeps one warm instance with views made once. The engine is measured warm (a repeat over the same files
// reuses its locked database) and cold (other files each time: a fresh locked instance, views, CSV sniffing).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DuckDBInstance } from "@duckdb/node-api";
import { createDuckDbQueryEngine } from "../dist/query/duckdb-query-engine.js";

const HERE = import.meta.dirname;
const FLIGHTS = resolve(HERE, "../node_modules/vega-datasets/data/flights-3m.parquet");
const LIMITS = { maxPreviewRows: 25, maxPreviewBytes: 7680, timeoutMs: 60_000 };

/** @type {{ name: string, input: "parquet" | "csv", sql: string }[]} */
const QUERIES = [
  {
    name: "flights by origin",
    input: "parquet",
    sql: "SELECT origin, count(*) AS n, avg(delay) AS avg_delay FROM input1 GROUP BY origin ORDER BY n DESC",
  },
  {
    name: "flights by month",
    input: "parquet",
    sql: "SELECT date_trunc('month', date) AS m, count(*) AS n, avg(delay) AS d, max(distance) AS dist FROM input1 GROUP BY 1 ORDER BY 1",
  },
  {
    name: "late routes",
    input: "parquet",
    sql: "SELECT origin, destination, count(*) AS n FROM input1 WHERE delay > 15 GROUP BY 1, 2 ORDER BY n DESC LIMIT 10",
  },
  {
    name: "sales by category",
    input: "csv",
    sql: "SELECT category, count(*) AS n, sum(amount) AS total FROM input1 GROUP BY category ORDER BY category",
  },
  {
    name: "sales by day",
    input: "csv",
    sql: "SELECT day, avg(qty) AS q, max(amount) AS top FROM input1 GROUP BY day ORDER BY day",
  },
  { name: "fixed cost (SELECT 1)", input: "csv", sql: "SELECT 1 AS one" },
];

/** @param {number[]} values */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  /** @param {number} i */
  const at = (i) => sorted[i] ?? Number.NaN;
  return sorted.length % 2 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
}

/** @param {() => Promise<unknown>} fn */
async function time(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

export default async function run() {
  const quick = process.env.CAIRN_BENCH_QUICK === "1";
  const runs = quick ? 3 : 9;
  const csvRows = quick ? 100_000 : 1_000_000;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-query-"));
  const csv = join(dir, "sales.csv");
  const paths = { parquet: FLIGHTS, csv };
  const bare = await DuckDBInstance.create(":memory:", { threads: "2", memory_limit: "1GB" });
  const connection = await bare.connect();
  const engine = await createDuckDbQueryEngine({ memory: "1GB", threads: 2, tempDir: join(dir, "spill") });
  try {
    await connection.run(
      `COPY (SELECT i AS id, 'cat_' || (i % 20) AS category, round(random() * 1000, 2) AS amount,
                    (i % 7) + 1 AS qty, DATE '2024-01-01' + (i % 365)::INTEGER AS day
             FROM range(${csvRows}) t(i)) TO '${csv}' (FORMAT csv, HEADER)`,
    );
    await connection.run(`CREATE VIEW parquet_input AS SELECT * FROM read_parquet('${FLIGHTS}')`);
    await connection.run(`CREATE VIEW csv_input AS SELECT * FROM read_csv('${csv}')`);

    // What one fresh instance costs: the engine creates one per query (a spare is made ahead between queries).
    const instanceMs = [];
    for (let i = 0; i < runs; i++) {
      instanceMs.push(
        await time(async () => {
          const db = await DuckDBInstance.create(":memory:", { threads: "2", memory_limit: "1GB" });
          (await db.connect()).closeSync();
          db.closeSync();
        }),
      );
    }

    const results = [];
    for (const q of QUERIES) {
      const bareSql = q.sql.replaceAll("input1", `${q.input}_input`);
      const viaBare = async () => {
        const reader = await connection.runAndReadAll(bareSql);
        reader.getRowObjectsJson();
      };
      const main = { path: paths[q.input], format: q.input };
      const viaEngine = () => engine.query({ inputs: [main], sql: q.sql, limits: LIMITS });
      // A second, never-seen input makes the input set new, so the engine cannot reuse a database.
      /** @param {number} i */
      const viaColdEngine = (i) => {
        const other = join(dir, `other-${q.name.replaceAll(" ", "-")}-${i}.csv`);
        writeFileSync(other, "x\n1\n");
        return engine.query({ inputs: [main, { path: other, format: "csv" }], sql: q.sql, limits: LIMITS });
      };
      // Cold runs alternate with bare runs first (each replaces the engine's kept database), then warm runs
      // alternate with bare runs: each ratio compares runs made in the same stretch of time.
      await viaBare();
      const coldBareMs = [];
      const coldMs = [];
      for (let i = 0; i < runs; i++) {
        coldBareMs.push(await time(viaBare));
        coldMs.push(await time(() => viaColdEngine(i)));
      }
      await viaEngine();
      const bareMs = [];
      const engineMs = [];
      for (let i = 0; i < runs; i++) {
        bareMs.push(await time(viaBare));
        engineMs.push(await time(viaEngine));
      }
      const b = median(bareMs);
      const e = median(engineMs);
      const c = median(coldMs);
      results.push({
        query: q.name,
        input: q.input === "csv" ? `csv ${csvRows.toLocaleString("en")} rows` : "parquet 3,000,000 rows",
        bare_ms: round(b),
        engine_ms: round(e),
        ratio: round(e / b),
        engine_cold_ms: round(c),
        cold_ratio: round(c / median(coldBareMs)),
        over_100ms: b >= 100,
      });
    }

    const table = results.map((r) => ({
      query: r.query,
      input: r.input,
      "bare node-api ms": r.bare_ms,
      "engine ms (repeat)": r.engine_ms,
      ratio: r.ratio,
      "target <=1.2x": r.over_100ms ? (r.ratio <= 1.2 ? "met" : "MISSED") : "n/a (<100 ms)",
      "engine ms (new inputs)": r.engine_cold_ms,
      "cold ratio": r.cold_ratio,
    }));
    console.log(`\nquery engine vs bare @duckdb/node-api, median of ${runs} runs each, 2 threads, 1GB`);
    console.table(table);
    console.log(`fresh DuckDB instance (create + connect + close): median ${round(median(instanceMs))} ms`);
    return { runs, csv_rows: csvRows, fresh_instance_ms: round(median(instanceMs)), queries: results };
  } finally {
    await engine.close();
    connection.closeSync();
    bare.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** @param {number} n */
function round(n) {
  return Math.round(n * 100) / 100;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await run()));
}
