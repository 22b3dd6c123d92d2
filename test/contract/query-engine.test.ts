// The QueryEngine contract suite, run against every backend over real vega-datasets files and generated tables.
// Deadlines come from the engine under test (tiny timeouts on genuinely slow SQL); no test asserts wall-clock time.

import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { createChildProcessQueryEngine } from "../../src/query/child-process-query-engine.js";
import { createDuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { QueryEngine, QueryInput } from "../../src/query/query-engine.js";
import {
  AIRPORTS,
  FLIGHTS,
  LIMITS,
  MOVIES,
  makeTempDir,
  rejectsWith,
  wideCsv,
  writeFixture,
} from "../query/helpers.js";

const BACKENDS: { name: string; create: (tempDir: string) => Promise<QueryEngine> }[] = [
  {
    name: "ChildProcessQueryEngine",
    create: (tempDir) => createChildProcessQueryEngine({ memory: "1GB", threads: 2, tempDir }),
  },
  { name: "DuckDbQueryEngine", create: (tempDir) => createDuckDbQueryEngine({ memory: "1GB", threads: 2, tempDir }) },
];

// A join that produces 10^12 rows: no backend finishes it before a short deadline.
const SLOW_SQL = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7";

describe.each(BACKENDS)("QueryEngine contract: $name", ({ create }) => {
  let dir: string;
  let engine: QueryEngine;
  let casts: QueryInput;
  let numbers: QueryInput;
  let wide: QueryInput;
  let narrow: QueryInput;

  beforeAll(async () => {
    dir = makeTempDir("query-contract");
    engine = await create(join(dir, "spill"));
    casts = {
      path: writeFixture(
        dir,
        "casts.csv",
        'day,amount,zip\n20241231,"$1,234.50",01234\n20250101,$0.25,98765\n20250115,"$10,000.00",00501\n',
      ),
      format: "csv",
    };
    numbers = {
      path: writeFixture(dir, "numbers.csv", "id,big\n1,9007199254740993\n2,42\n"),
      format: "csv",
    };
    wide = { path: writeFixture(dir, "wide.csv", wideCsv(300)), format: "csv" };
    narrow = { path: writeFixture(dir, "narrow.csv", "a,b\n1,x\n2,y\n"), format: "csv" };
  });

  afterAll(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("aggregates a 3-million-row Parquet file and counts the full result", async () => {
    const result = await engine.query({
      inputs: [FLIGHTS],
      sql: "SELECT origin, count(*) AS flights, round(avg(delay), 2) AS avg_delay FROM input1 GROUP BY origin ORDER BY flights DESC, origin",
      limits: { ...LIMITS, maxPreviewRows: 3 },
    });
    expect(result.columns).toEqual([
      { name: "origin", type: "VARCHAR" },
      { name: "flights", type: "BIGINT" },
      { name: "avg_delay", type: "DOUBLE" },
    ]);
    expect(result.rows).toHaveLength(3);
    expect(result.rows[0]).toMatchObject({ origin: expect.any(String), flights: expect.any(Number) });
    expect(result.row_count).toBeGreaterThan(100);
    expect(result.truncated).toBe(true);
    const total = await engine.query({ inputs: [FLIGHTS], sql: "SELECT count(*) AS n FROM input1", limits: LIMITS });
    expect(total.rows).toEqual([{ n: 3_000_000 }]);
    expect(total.truncated).toBe(false);
  });

  it("joins two inputs of different formats", async () => {
    const result = await engine.query({
      inputs: [FLIGHTS, AIRPORTS],
      sql: `SELECT a.state, count(*) AS flights
            FROM input1 f JOIN input2 a ON f.origin = a.iata
            WHERE a.state IN ('TX', 'CA') GROUP BY a.state ORDER BY a.state`,
      limits: LIMITS,
    });
    expect(result.rows.map((r) => r.state)).toEqual(["CA", "TX"]);
    expect(result.rows.every((r) => typeof r.flights === "number" && r.flights > 0)).toBe(true);
    expect(result.row_count).toBe(2);
  });

  it("reads a JSON array of objects with spaced column names", async () => {
    const result = await engine.query({
      inputs: [MOVIES],
      sql: `SELECT count(*) AS movies, count("IMDB Rating") AS rated FROM input1 WHERE "Major Genre" = ?`,
      parameters: ["Comedy"],
      limits: LIMITS,
    });
    expect(result.rows[0]?.movies).toBeGreaterThan(100);
    expect(result.rows[0]?.rated).toBeGreaterThan(0);
  });

  it("reads newline-delimited JSON", async () => {
    const ndjson = {
      path: writeFixture(dir, "events.ndjson", '{"kind":"a","n":1}\n{"kind":"b","n":2}\n{"kind":"a","n":3}\n'),
      format: "json" as const,
    };
    const result = await engine.query({
      inputs: [ndjson],
      sql: "SELECT kind, sum(n) AS total FROM input1 GROUP BY kind ORDER BY kind",
      limits: LIMITS,
    });
    expect(result.rows).toEqual([
      { kind: "a", total: 4 },
      { kind: "b", total: 2 },
    ]);
  });

  it("binds parameters to ? in order, integers as integers", async () => {
    const result = await engine.query({
      inputs: [AIRPORTS],
      sql: "SELECT iata, state, latitude FROM input1 WHERE state = ? AND latitude > ? ORDER BY iata LIMIT ?",
      parameters: ["TX", 33.5, 4],
      limits: LIMITS,
    });
    expect(result.row_count).toBe(4);
    expect(result.rows.every((r) => r.state === "TX" && (r.latitude as number) > 33.5)).toBe(true);
    const list = await engine.query({
      inputs: [AIRPORTS],
      sql: "SELECT count(*) AS n FROM input1 WHERE list_contains(?, state)",
      parameters: [["TX", "CA"]],
      limits: LIMITS,
    });
    expect(list.rows[0]?.n).toBeGreaterThan(400);
  });

  it("refuses a parameter count that does not match the placeholders", async () => {
    const error = await rejectsWith(
      engine.query({ inputs: [AIRPORTS], sql: "SELECT * FROM input1 WHERE state = ?", limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
    expect(error.message).toMatch(/1 parameter placeholder/);
    await rejectsWith(
      engine.query({ inputs: [AIRPORTS], sql: "SELECT ? AS x", parameters: [{ a: 1 }], limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
  });

  it("describes a CSV whose text columns need explicit casts, and the casts work", async () => {
    const [described] = await engine.describe({ inputs: [casts] });
    expect(described?.columns).toEqual([
      { name: "day", type: "BIGINT" },
      { name: "amount", type: "VARCHAR" },
      { name: "zip", type: "VARCHAR" },
    ]);
    const result = await engine.query({
      inputs: [casts],
      sql: `SELECT max(strptime(day::VARCHAR, '%Y%m%d')::DATE) AS last_day,
                   sum(replace(replace(amount, '$', ''), ',', '')::DECIMAL(12,2)) AS total,
                   min(zip) AS first_zip
            FROM input1`,
      limits: LIMITS,
    });
    expect(result.rows).toEqual([{ last_day: "2025-01-15", total: "11234.75", first_zip: "00501" }]);
    expect(result.columns.map((c) => c.type)).toEqual(["DATE", "DECIMAL(38,2)", "VARCHAR"]);
  });

  it("returns integers past 2^53 and decimals exactly, as strings, and lists their columns", async () => {
    const result = await engine.query({
      inputs: [numbers],
      sql: `SELECT id, big::BIGINT AS big,
                   CASE id WHEN 1 THEN 12345678901234567.891 ELSE 0.1 END::DECIMAL(38,3) AS price,
                   big::HUGEINT * 1000000000000000000 AS huge,
                   18446744073709551615::UBIGINT AS ubig,
                   [big::BIGINT, 1] AS list_big,
                   id::BIGINT AS small_bigint
            FROM input1 ORDER BY id`,
      limits: LIMITS,
    });
    expect(result.rows[0]).toEqual({
      id: 1,
      big: "9007199254740993",
      price: "12345678901234567.891",
      huge: "9007199254740993000000000000000000",
      ubig: "18446744073709551615",
      list_big: ["9007199254740993", 1],
      small_bigint: 1,
    });
    expect(result.rows[1]).toMatchObject({ big: 42, price: "0.100", huge: "42000000000000000000" });
    expect(result.integer_string_columns).toEqual(["big", "huge", "ubig", "list_big"]);
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  it("omits integer_string_columns when every integer fits a JSON number", async () => {
    const result = await engine.query({ inputs: [narrow], sql: "SELECT sum(a) AS s FROM input1", limits: LIMITS });
    expect(result.rows).toEqual([{ s: 3 }]);
    expect(result.integer_string_columns).toBeUndefined();
  });

  it("returns dates and timestamps as ISO strings and never a non-JSON value", async () => {
    const result = await engine.query({
      inputs: [narrow],
      sql: `SELECT DATE '2024-02-29' AS d, TIMESTAMP '2024-02-29 13:14:15.5' AS ts,
                   TIMESTAMPTZ '2024-02-29 13:14:15+00' AS tz, 'NaN'::DOUBLE AS nan, 'infinity'::DOUBLE AS inf,
                   'hi'::BLOB AS b, {'k': 1::BIGINT} AS st, MAP {'a': 2} AS m, NULL AS nothing,
                   0.1::FLOAT AS f, 16777217::FLOAT AS f_big`,
      limits: LIMITS,
    });
    expect(result.rows[0]).toEqual({
      d: "2024-02-29",
      ts: "2024-02-29T13:14:15.5",
      tz: "2024-02-29T13:14:15Z",
      nan: "NaN",
      inf: "Infinity",
      b: Buffer.from("hi").toString("base64"),
      st: { k: 1 },
      m: [{ key: "a", value: 2 }],
      nothing: null,
      f: 0.1,
      f_big: 16777216,
    });
  });

  it("stops the preview at maxPreviewRows and reports the full row count", async () => {
    const result = await engine.query({
      inputs: [AIRPORTS],
      sql: "SELECT iata FROM input1 ORDER BY iata",
      limits: { ...LIMITS, maxPreviewRows: 5 },
    });
    expect(result.rows).toHaveLength(5);
    expect(result.row_count).toBe(3376);
    expect(result.truncated).toBe(true);
    const none = await engine.query({
      inputs: [AIRPORTS],
      sql: "SELECT * FROM input1",
      limits: { ...LIMITS, maxPreviewRows: 0 },
    });
    expect(none.rows).toEqual([]);
    expect(none.row_count).toBe(3376);
    expect(none.columns).toHaveLength(7);
  });

  it("stops the preview at a value that alone passes maxPreviewBytes, and still counts every row", async () => {
    const result = await engine.query({
      inputs: [narrow],
      sql: "SELECT a, CASE WHEN a = 2 THEN repeat('x', 50000000) ELSE 'short' END AS text, repeat('y', 1000)::BLOB AS bytes FROM input1 ORDER BY a",
      limits: LIMITS,
    });
    expect(result.rows).toEqual([{ a: 1, text: "short", bytes: "[BLOB of 1000 bytes]" }]);
    expect(result.row_count).toBe(2);
    expect(result.truncated).toBe(true);
  });

  it("stops the preview before the first row that would pass maxPreviewBytes", async () => {
    const sql = "SELECT * FROM input1 ORDER BY iata";
    const budget = 700;
    const small = await engine.query({ inputs: [AIRPORTS], sql, limits: { ...LIMITS, maxPreviewBytes: budget } });
    const large = await engine.query({ inputs: [AIRPORTS], sql, limits: { ...LIMITS, maxPreviewBytes: 1_000_000 } });
    expect(small.rows.length).toBeGreaterThan(0);
    expect(Buffer.byteLength(JSON.stringify(small.rows))).toBeLessThanOrEqual(budget);
    const withNext = large.rows.slice(0, small.rows.length + 1);
    expect(Buffer.byteLength(JSON.stringify(withNext))).toBeGreaterThan(budget);
    expect(small.rows).toEqual(large.rows.slice(0, small.rows.length));
    expect(small.truncated).toBe(true);
    expect(small.row_count).toBe(3376);
  });

  it("writes every row to rowsTo as one JSON array with the preview's values, beside a normal preview", async () => {
    const path = join(dir, "all-airports.json");
    const result = await engine.query({
      inputs: [AIRPORTS],
      sql: "SELECT iata, latitude, 9007199254740993::BIGINT AS big FROM input1 ORDER BY iata",
      limits: LIMITS,
      rowsTo: { path, maxRows: 10_000, maxBytes: 1_000_000 },
    });
    const rows = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>[];
    expect(rows).toHaveLength(3376);
    expect(result.row_count).toBe(3376);
    expect(rows.slice(0, 25)).toEqual(result.rows);
    expect(rows[0]).toEqual({ iata: expect.any(String), latitude: expect.any(Number), big: "9007199254740993" });
    expect(result.rows_file).toEqual({
      path,
      bytes: statSync(path).size,
      integer_string_columns: ["big"],
    });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    rmSync(path);
  });

  it("fails past rowsTo's rows or bytes with TOO_LARGE naming the whole result, and leaves no file", async () => {
    const path = join(dir, "too-many.json");
    const rows = await rejectsWith(
      engine.query({
        inputs: [AIRPORTS],
        sql: "SELECT iata FROM input1",
        limits: LIMITS,
        rowsTo: { path, maxRows: 1000, maxBytes: 10_000_000 },
      }),
      ErrorCode.TOO_LARGE,
    );
    expect(rows.message).toMatch(/3,376 rows, over the 1,000 rows/);
    expect(rows.data).toMatchObject({ row_count: 3376, max_rows: 1000 });
    expect(existsSync(path)).toBe(false);
    // One value bigger than the whole budget is sized, never copied.
    const bytes = await rejectsWith(
      engine.query({
        inputs: [narrow],
        sql: "SELECT a, repeat('x', 50000000) AS text FROM input1",
        limits: LIMITS,
        rowsTo: { path, maxRows: 1000, maxBytes: 100_000 },
      }),
      ErrorCode.TOO_LARGE,
    );
    expect(bytes.data).toMatchObject({ row_count: 2, rows_that_fit: 0, max_bytes: 100_000 });
    expect(existsSync(path)).toBe(false);
    // So is a list of a million items: it could never fit, and converting it first would cost more than the query.
    const list = await rejectsWith(
      engine.query({
        inputs: [narrow],
        sql: "SELECT range(1000000) AS l",
        limits: LIMITS,
        rowsTo: { path, maxRows: 1000, maxBytes: 100_000 },
      }),
      ErrorCode.TOO_LARGE,
    );
    expect(list.data).toMatchObject({ row_count: 1, rows_that_fit: 0 });
    expect(existsSync(path)).toBe(false);
  });

  it("refuses a rowsTo file that already exists, or that is an input", async () => {
    const existing = writeFixture(dir, "existing.json", "keep me");
    await rejectsWith(
      engine.query({
        inputs: [narrow],
        sql: "SELECT * FROM input1",
        limits: LIMITS,
        rowsTo: { path: existing, maxRows: 10, maxBytes: 1000 },
      }),
      ErrorCode.INVALID_ARGUMENT,
    );
    expect(readFileSync(existing, "utf8")).toBe("keep me");
    await rejectsWith(
      engine.query({
        inputs: [narrow],
        sql: "SELECT * FROM input1",
        limits: LIMITS,
        rowsTo: { path: narrow.path, maxRows: 10, maxBytes: 1000 },
      }),
      ErrorCode.INVALID_ARGUMENT,
    );
  });

  it("interrupts a slow query at its deadline and answers the next one", async () => {
    const error = await rejectsWith(
      engine.query({ inputs: [narrow], sql: SLOW_SQL, limits: { ...LIMITS, timeoutMs: 300 } }),
      ErrorCode.QUERY_TIMEOUT,
    );
    expect(error.message).toMatch(/300 ms/);
    const next = await engine.query({ inputs: [narrow], sql: "SELECT count(*) AS n FROM input1", limits: LIMITS });
    expect(next.rows).toEqual([{ n: 2 }]);
  });

  it("cancels a running query when its signal aborts and answers the next one", async () => {
    // The signal fires while the never-ending join runs: the engine must interrupt it, not wait for it.
    const running = engine.query({ inputs: [narrow], sql: SLOW_SQL, limits: LIMITS, signal: AbortSignal.timeout(300) });
    await rejectsWith(running, ErrorCode.CANCELLED);
    const controller = new AbortController();
    const early = engine.query({ inputs: [narrow], sql: SLOW_SQL, limits: LIMITS, signal: controller.signal });
    controller.abort();
    await rejectsWith(early, ErrorCode.CANCELLED);
    const aborted = AbortSignal.abort();
    await rejectsWith(
      engine.query({ inputs: [narrow], sql: "SELECT 1", limits: LIMITS, signal: aborted }),
      ErrorCode.CANCELLED,
    );
    const next = await engine.query({ inputs: [narrow], sql: "SELECT max(b) AS b FROM input1", limits: LIMITS });
    expect(next.rows).toEqual([{ b: "y" }]);
  });

  it("runs queries issued together, each with its own answer", async () => {
    const results = await Promise.all(
      ["TX", "CA", "NY"].map((state) =>
        engine.query({
          inputs: [AIRPORTS],
          sql: "SELECT ? AS state, count(*) AS n FROM input1 WHERE state = ?",
          parameters: [state, state],
          limits: LIMITS,
        }),
      ),
    );
    expect(results.map((r) => r.rows[0]?.state)).toEqual(["TX", "CA", "NY"]);
  });

  it("rejects anything but one read-only SELECT with SQL_REJECTED", async () => {
    for (const sql of ["CREATE TABLE t AS SELECT 1", "SELECT 1; SELECT 2", "", "-- only a comment"]) {
      const error = await rejectsWith(engine.query({ inputs: [narrow], sql, limits: LIMITS }), ErrorCode.SQL_REJECTED);
      expect(error.message).toMatch(/one read-only SELECT/);
    }
  });

  it("allows read-only DESCRIBE and SUMMARIZE of an input", async () => {
    const described = await engine.query({ inputs: [narrow], sql: "DESCRIBE input1", limits: LIMITS });
    expect(described.rows.map((r) => [r.column_name, r.column_type])).toEqual([
      ["a", "BIGINT"],
      ["b", "VARCHAR"],
    ]);
    const summary = await engine.query({ inputs: [narrow], sql: "SUMMARIZE input1", limits: LIMITS });
    expect(summary.row_count).toBe(2);
  });

  it("reports DuckDB's error as QUERY_FAILED without revealing file paths", async () => {
    const error = await rejectsWith(
      engine.query({ inputs: [narrow], sql: "SELECT no_such_column FROM input1", limits: LIMITS }),
      ErrorCode.QUERY_FAILED,
    );
    expect(error.message).toMatch(/no_such_column/);
    const broken = { path: writeFixture(dir, "broken.parquet", "this is not parquet"), format: "parquet" as const };
    const unreadable = await rejectsWith(
      engine.query({ inputs: [broken], sql: "SELECT * FROM input1", limits: LIMITS }),
      ErrorCode.QUERY_FAILED,
    );
    expect(unreadable.message).toMatch(/input1/);
    expect(unreadable.message).not.toContain(dir);
  });

  it("validates inputs, SQL length and limits before running anything", async () => {
    const nine = Array.from({ length: 9 }, () => narrow);
    await rejectsWith(engine.query({ inputs: nine, sql: "SELECT 1", limits: LIMITS }), ErrorCode.INVALID_ARGUMENT);
    await rejectsWith(
      engine.query({ inputs: [narrow], sql: `SELECT 1 ${" ".repeat(6000)}`, limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
    await rejectsWith(
      engine.query({ inputs: [{ path: join(dir, "missing.csv"), format: "csv" }], sql: "SELECT 1", limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
    await rejectsWith(
      engine.query({ inputs: [{ path: join(dir, "*.csv"), format: "csv" }], sql: "SELECT 1", limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
    await rejectsWith(
      engine.query({ inputs: [narrow], sql: "SELECT 1", limits: { ...LIMITS, timeoutMs: 0 } }),
      ErrorCode.INVALID_ARGUMENT,
    );
  });

  it("pages the columns of a 300-column table", async () => {
    const pages = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const [page]: Awaited<ReturnType<QueryEngine["describe"]>> = await engine.describe({
        inputs: [wide],
        offset,
        limit: 120,
      });
      if (!page) throw new Error("describe returned no page");
      pages.push(page);
      offset = page.next_offset;
    }
    expect(pages.map((p) => p.next_offset)).toEqual([120, 240, null]);
    expect(pages.every((p) => p.column_count === 300 && p.input === "input1")).toBe(true);
    const columns = pages.flatMap((p) => p.columns);
    expect(columns).toHaveLength(300);
    expect(columns[0]).toEqual({ name: "col_1", type: "BIGINT" });
    expect(columns[299]?.name).toBe("col_300");
  });

  it("describes every input in order with exact SQL types", async () => {
    const described = await engine.describe({ inputs: [FLIGHTS, AIRPORTS, MOVIES] });
    expect(described.map((d) => d.input)).toEqual(["input1", "input2", "input3"]);
    expect(described[0]?.columns).toEqual([
      { name: "date", type: "TIMESTAMP" },
      { name: "delay", type: "BIGINT" },
      { name: "distance", type: "BIGINT" },
      { name: "origin", type: "VARCHAR" },
      { name: "destination", type: "VARCHAR" },
    ]);
    expect(described[1]?.columns.find((c) => c.name === "latitude")?.type).toBe("DOUBLE");
    expect(described[2]?.columns.find((c) => c.name === "Title")?.type).toBe("VARCHAR");
    expect(described.every((d) => d.next_offset === null)).toBe(true);
  });

  it("saves the full result as Parquet that reads back identically", async () => {
    const saveTo = join(dir, "by-origin.parquet");
    const result = await engine.query({
      inputs: [FLIGHTS],
      sql: "SELECT origin, count(*) AS flights FROM input1 GROUP BY origin ORDER BY origin",
      limits: { ...LIMITS, maxPreviewRows: 2 },
      saveTo,
    });
    expect(result.saved).toEqual({ path: saveTo, row_count: result.row_count, bytes: expect.any(Number) });
    expect(result.saved?.bytes).toBeGreaterThan(0);
    const back = await engine.query({
      inputs: [{ path: saveTo, format: "parquet" }],
      sql: "SELECT * FROM input1 ORDER BY origin",
      limits: { ...LIMITS, maxPreviewRows: 2 },
    });
    expect(back.row_count).toBe(result.row_count);
    expect(back.rows).toEqual(result.rows);
  });
});
