// The query tool through a real MCP client against bare @duckdb/node-api, in one run, on the same files: an aggregate
// over flights-3m.parquet (3,000,000 rows) and over a generated 1,000,000-row CSV. Target: within 1.2x for queries
// over 100 ms. Cairn's figure includes MCP, argument checks, the catalog lookup, the lock-down and the preview.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ms, progress, QUICK, ROOT, startCairn, summary, table } from "./lib.mjs";

const PARQUET = join(ROOT, "node_modules/vega-datasets/data/flights-3m.parquet");

export default async function run() {
  const runs = QUICK ? 3 : 9;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-query-"));
  const csv = join(dir, "sales.csv");
  const rowsCsv = QUICK ? 200_000 : 1_000_000;
  const lines = ["id,day,category,amount"];
  for (let i = 0; i < rowsCsv; i++)
    lines.push(`${i},2026-01-${String((i % 28) + 1).padStart(2, "0")},c${i % 17},${(i * 7919) % 1000}.${i % 100}`);
  writeFileSync(csv, `${lines.join("\n")}\n`);
  // import reads only under the import roots (decision 0280): the data files' folders.
  const cairn = await startCairn({
    toml: `[workspace]\nimport_roots = ${JSON.stringify([dirname(PARQUET), dir])}\n`,
    serveArgs: ["--tools", "query", "import"],
  });
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const bare = await (await DuckDBInstance.create(":memory:", { threads: "2", memory_limit: "1GB" })).connect();
  const cases = [
    {
      name: "flights by origin (Parquet, 3M rows)",
      ref: "bench/flights",
      path: PARQUET,
      read: `read_parquet('${PARQUET}')`,
      sql: "SELECT origin, count(*) AS n, avg(delay) AS d FROM input1 GROUP BY origin ORDER BY n DESC",
    },
    {
      name: "flights by month (Parquet, 3M rows)",
      ref: "bench/flights",
      path: PARQUET,
      read: `read_parquet('${PARQUET}')`,
      sql: "SELECT month(date) AS m, avg(delay) AS d, max(distance) AS dist FROM input1 GROUP BY m ORDER BY m",
    },
    {
      name: `sales by category (CSV, ${rowsCsv.toLocaleString("en-US")} rows)`,
      ref: "bench/sales",
      path: csv,
      read: `read_csv('${csv}')`,
      sql: "SELECT category, sum(amount) AS total, count(*) AS n FROM input1 GROUP BY category ORDER BY category",
    },
  ];
  const rows = [];
  /** @type {Record<string, { bare_ms: number, cairn_ms: number, ratio: number, runs: number }>} */
  const results = {};
  try {
    // The files enter the workspace once, as an agent would import them.
    for (const [name, path] of [
      ["bench/flights", PARQUET],
      ["bench/sales", csv],
    ]) {
      const imported = await cairn.call("import", { path, name });
      if (imported.isError) throw new Error(`import failed: ${imported.text}`);
    }
    for (const c of cases) {
      progress(c.name);
      const viaCairn = async () => {
        const r = await cairn.call("query", { inputs: [c.ref], sql: c.sql });
        if (r.isError) throw new Error(`query failed: ${r.text.slice(0, 300)}`);
      };
      const viaBare = async () => {
        const reader = await bare.runAndReadAll(c.sql.replace("input1", c.read));
        reader.getRowObjectsJS();
      };
      await viaCairn();
      await viaBare();
      const a = [];
      const b = [];
      for (let i = 0; i < runs; i++) {
        let t0 = performance.now();
        await viaCairn();
        a.push(performance.now() - t0);
        t0 = performance.now();
        await viaBare();
        b.push(performance.now() - t0);
      }
      const sa = summary(a);
      const sb = summary(b);
      const ratio = sa.median / sb.median;
      rows.push({
        query: c.name,
        "bare median ms": ms(sb.median),
        "Cairn query tool ms": ms(sa.median),
        ratio: ms(ratio),
        "target 1.2x": sb.median >= 100 ? (ratio <= 1.2 ? "PASS" : "MISS") : "n/a (<100 ms)",
      });
      results[c.name] = { bare_ms: sb.median, cairn_ms: sa.median, ratio, runs };
    }
  } finally {
    bare.closeSync?.();
    await cairn.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("\nSQL through Cairn's query tool (real MCP client, stdio) against bare @duckdb/node-api, same files");
  table(rows);
  return { runs, results };
}
