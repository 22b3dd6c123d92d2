// DuckDB-specific behaviour of the query engine: memory limit, exact 128-bit saves, spill cleanup, lazy loading.
// The shared contract suite (test/contract/query-engine.test.ts) covers what every backend must do.

import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { QueryInput } from "../../src/query/query-engine.js";
import { redact } from "../../src/query/redact.js";
import { FLIGHTS, LIMITS, makeTempDir, rejectsWith, writeFixture } from "./helpers.js";

const SRC = resolve(import.meta.dirname, "../../src");

describe("DuckDbQueryEngine", () => {
  let dir: string;
  let spill: string;
  let engine: DuckDbQueryEngine;
  let input: QueryInput;

  beforeAll(async () => {
    dir = makeTempDir("query-duckdb");
    spill = join(dir, "spill");
    input = { path: writeFixture(dir, "input.csv", "a\n1\n2\n"), format: "csv" };
    engine = await createDuckDbQueryEngine({ memory: "256MB", threads: 1, tempDir: spill });
  });

  afterAll(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails a query past the memory limit with QUERY_FAILED and answers the next one", async () => {
    const error = await rejectsWith(
      engine.query({ inputs: [input], sql: "SELECT list(range) AS l FROM range(100000000)", limits: LIMITS }),
      ErrorCode.QUERY_FAILED,
    );
    expect(error.message).toMatch(/out of memory/i);
    expect(error.message).toMatch(/256MB per query/);
    const next = await engine.query({ inputs: [input], sql: "SELECT sum(a) AS s FROM input1", limits: LIMITS });
    expect(next.rows).toEqual([{ s: 3 }]);
  });

  it("times out a query still waiting behind a slow one, then runs the next", async () => {
    const slow = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7";
    const first = engine.query({ inputs: [input], sql: slow, limits: { ...LIMITS, timeoutMs: 1500 } });
    const queued = engine.query({ inputs: [input], sql: "SELECT 1 AS x", limits: { ...LIMITS, timeoutMs: 50 } });
    await rejectsWith(queued, ErrorCode.QUERY_TIMEOUT);
    await rejectsWith(first, ErrorCode.QUERY_TIMEOUT);
    const next = await engine.query({ inputs: [input], sql: "SELECT 1 AS x", limits: LIMITS });
    expect(next.rows).toEqual([{ x: 1 }]);
  });

  it("saves HUGEINT and UHUGEINT as exact DECIMAL(38,0) and nested ones too", async () => {
    const saveTo = join(dir, "huge.parquet");
    const result = await engine.query({
      inputs: [input],
      sql: `SELECT 99999999999999999999999999999999999999::HUGEINT AS h,
                   12345678901234567890123456789::UHUGEINT AS u,
                   [-99999999999999999999999999999999999999::HUGEINT, a::HUGEINT] AS l
            FROM input1 ORDER BY a`,
      limits: LIMITS,
      saveTo,
    });
    expect(result.saved?.row_count).toBe(2);
    expect(result.integer_string_columns).toEqual(["h", "u", "l"]);
    const back = await engine.query({
      inputs: [{ path: saveTo, format: "parquet" }],
      sql: "SELECT h, u, l, typeof(h) AS th, typeof(l) AS tl FROM input1",
      limits: LIMITS,
    });
    expect(back.rows[0]).toEqual({
      h: "99999999999999999999999999999999999999",
      u: "12345678901234567890123456789",
      l: ["-99999999999999999999999999999999999999", "1"],
      th: "DECIMAL(38,0)",
      tl: "DECIMAL(38,0)[]",
    });
  });

  it("refuses to save a 128-bit integer past 38 digits, leaving no file behind", async () => {
    const saveTo = join(dir, "too-big.parquet");
    const error = await rejectsWith(
      engine.query({
        inputs: [input],
        sql: "SELECT 170141183460469231731687303715884105727::HUGEINT AS h",
        limits: LIMITS,
        saveTo,
      }),
      ErrorCode.QUERY_FAILED,
    );
    expect(error.message).toMatch(/DECIMAL\(38,0\).*cast that column to VARCHAR/);
    expect(existsSync(saveTo)).toBe(false);
    expect(readdirSync(dir).filter((name) => name.includes("too-big"))).toEqual([]);
  });

  it("replaces an existing save file whole", async () => {
    const saveTo = join(dir, "replaced.parquet");
    writeFixture(dir, "replaced.parquet", "old content");
    const result = await engine.query({ inputs: [input], sql: "SELECT a FROM input1", limits: LIMITS, saveTo });
    expect(result.saved?.row_count).toBe(2);
    expect(readFileSync(saveTo).subarray(0, 4).toString()).toBe("PAR1");
  });

  it("saves a result larger than its preview, all of it", async () => {
    const saveTo = join(dir, "flights-sample.parquet");
    const result = await engine.query({
      inputs: [FLIGHTS],
      sql: "SELECT * FROM input1 WHERE origin = 'SFO'",
      limits: { ...LIMITS, maxPreviewRows: 3 },
      saveTo,
    });
    expect(result.rows).toHaveLength(3);
    expect(result.saved?.row_count).toBe(result.row_count);
    const back = await engine.query({
      inputs: [{ path: saveTo, format: "parquet" }],
      sql: "SELECT count(*) AS n, count(DISTINCT origin) AS origins FROM input1",
      limits: LIMITS,
    });
    expect(back.rows).toEqual([{ n: result.row_count, origins: 1 }]);
  });

  it("reads a CSV whose header names hold quotes and braces, exactly", async () => {
    const odd = { path: writeFixture(dir, "odd.csv", `a'b,"c""d",e}f\n1,x,2024-01-02\n`), format: "csv" as const };
    const [described] = await engine.describe({ inputs: [odd] });
    expect(described?.columns).toEqual([
      { name: "a'b", type: "BIGINT" },
      { name: 'c"d', type: "VARCHAR" },
      { name: "e}f", type: "DATE" },
    ]);
    const result = await engine.query({
      inputs: [odd],
      sql: `SELECT "a'b", "c""d", "e}f" FROM input1`,
      limits: LIMITS,
    });
    expect(result.rows).toEqual([{ "a'b": 1, 'c"d': "x", "e}f": "2024-01-02" }]);
  });

  it("sees a rewritten input file anew, columns included", async () => {
    const path = writeFixture(dir, "changing.csv", "a\n1\n");
    const first = await engine.query({
      inputs: [{ path, format: "csv" }],
      sql: "SELECT * FROM input1",
      limits: LIMITS,
    });
    expect(first.rows).toEqual([{ a: 1 }]);
    writeFixture(dir, "changing.csv", "a,b\n1,2\n3,4\n");
    const second = await engine.query({
      inputs: [{ path, format: "csv" }],
      sql: "SELECT * FROM input1",
      limits: LIMITS,
    });
    expect(second.rows).toEqual([
      { a: 1, b: 2 },
      { a: 3, b: 4 },
    ]);
  });

  it("leaves no spill directory behind once closed, with or without a kept database", async () => {
    const cold = await createDuckDbQueryEngine({ tempDir: join(dir, "cold-spill"), keepWarmMs: 0 });
    for (const x of [1, 2]) {
      const result = await cold.query({ inputs: [input], sql: "SELECT ? AS x", parameters: [x], limits: LIMITS });
      expect(result.rows).toEqual([{ x }]);
    }
    await cold.close();
    expect(readdirSync(join(dir, "cold-spill"))).toEqual([]);
    const own = await createDuckDbQueryEngine({ tempDir: join(dir, "own-spill") });
    await own.query({ inputs: [input], sql: "SELECT 1 AS x", limits: LIMITS });
    await own.close();
    expect(readdirSync(join(dir, "own-spill"))).toEqual([]);
    await rejectsWith(own.query({ inputs: [input], sql: "SELECT 1", limits: LIMITS }), ErrorCode.INTERNAL);
  });

  it("refuses invalid options and an unusable temp dir at construction", async () => {
    await rejectsWith(createDuckDbQueryEngine({ memory: "lots" }), ErrorCode.CONFIG_INVALID);
    await rejectsWith(createDuckDbQueryEngine({ threads: 0 }), ErrorCode.CONFIG_INVALID);
    await rejectsWith(createDuckDbQueryEngine({ keepWarmMs: -1 }), ErrorCode.CONFIG_INVALID);
    const notADirectory = writeFixture(dir, "not-a-directory", "");
    // Its spare instance fails the same way and says so in a warning this test expects.
    const quiet = createLogger("query", () => {});
    await rejectsWith(createDuckDbQueryEngine({ tempDir: notADirectory, logger: quiet }), ErrorCode.INTERNAL);
  });

  it("redacts known paths by name and any other absolute path", () => {
    const message = "Cannot open \"/data/blobs/ab/cd\" or '/etc/passwd' near /tmp/x/.sp (see 4/2 and /* c */)";
    expect(redact(message, [["/data/blobs/ab/cd", "input1"]])).toBe(
      "Cannot open \"input1\" or '<path>' near <path> (see 4/2 and /* c */)",
    );
  });

  it("is the only module of Cairn's runtime that loads @duckdb/node-api, and only lazily", () => {
    // src/demo is the bundled example upstream server: a separate process standing in for a third party's server,
    // which reads its dataset with DuckDB; Cairn itself never imports it.
    const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter(
      (f) => f.endsWith(".ts") && !f.startsWith(`demo${sep}`),
    );
    const users = files.filter((f) => readFileSync(join(SRC, f), "utf8").includes("@duckdb/node-api"));
    expect(users).toEqual([join("query", "duckdb-query-engine.ts")]);
    const source = readFileSync(join(SRC, "query", "duckdb-query-engine.ts"), "utf8");
    const imports = source.split("\n").filter((line) => /^import\b/.test(line) && !/^import type\b/.test(line));
    expect(imports.join("\n")).not.toContain("@duckdb/node-api");
    expect(source).toContain('await import("@duckdb/node-api")');
  });
});
