// ChildProcessQueryEngine-specific behaviour: what crosses the process boundary, options, and its child's life.
// The shared contract suite (test/contract/query-engine.test.ts) covers what every backend must do.

import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import {
  type ChildProcessQueryEngine,
  createChildProcessQueryEngine,
  parseSize,
} from "../../src/query/child-process-query-engine.js";
import type { QueryInput } from "../../src/query/query-engine.js";
import { LIMITS, makeTempDir, rejectsWith, writeFixture } from "./helpers.js";

describe("ChildProcessQueryEngine", () => {
  let dir: string;
  let engine: ChildProcessQueryEngine;
  let input: QueryInput;

  beforeAll(async () => {
    dir = makeTempDir("query-child");
    input = { path: writeFixture(dir, "input.csv", "a\n1\n2\n"), format: "csv" };
    engine = await createChildProcessQueryEngine({ memory: "256MB", threads: 1, tempDir: join(dir, "spill") });
  });

  afterAll(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("binds bigint parameters across the process boundary, exactly", async () => {
    const result = await engine.query({
      inputs: [input],
      sql: "SELECT ?::HUGEINT AS h, ? + 1 AS b",
      parameters: [170141183460469231731687303715884105727n, 9007199254740993n],
      limits: LIMITS,
    });
    expect(result.rows).toEqual([{ h: "170141183460469231731687303715884105727", b: "9007199254740994" }]);
  });

  it("refuses a parameter that cannot cross the boundary with INVALID_ARGUMENT and answers the next query", async () => {
    await rejectsWith(
      engine.query({ inputs: [input], sql: "SELECT ? AS x", parameters: [() => 1], limits: LIMITS }),
      ErrorCode.INVALID_ARGUMENT,
    );
    const next = await engine.query({ inputs: [input], sql: "SELECT sum(a) AS s FROM input1", limits: LIMITS });
    expect(next.rows).toEqual([{ s: 3 }]);
  });

  it("keeps one child across ordinary calls and errors", async () => {
    const pid = engine.pid;
    await rejectsWith(engine.query({ inputs: [input], sql: "SELECT nope", limits: LIMITS }), ErrorCode.QUERY_FAILED);
    await rejectsWith(engine.query({ inputs: [input], sql: "DROP TABLE x", limits: LIMITS }), ErrorCode.SQL_REJECTED);
    await engine.describe({ inputs: [input] });
    expect(engine.pid).toBe(pid);
  });

  it("removes the rows file of a child it killed at the deadline", async () => {
    const path = join(dir, "rows-of-a-killed-child.json");
    await rejectsWith(
      engine.query({
        inputs: [input],
        // Rows stream out chunk by chunk for far longer than the deadline: the child dies with the file half written.
        sql: "SELECT md5(range::VARCHAR || repeat('x', 5000)) AS h FROM range(1000000000)",
        limits: { ...LIMITS, timeoutMs: 1500 },
        rowsTo: { path, maxRows: 10_000_000, maxBytes: 500_000_000 },
      }),
      ErrorCode.QUERY_TIMEOUT,
    );
    expect(existsSync(path)).toBe(false);
  });

  it("validates its options before starting anything", async () => {
    await rejectsWith(createChildProcessQueryEngine({ memory: "lots" }), ErrorCode.CONFIG_INVALID);
    await rejectsWith(createChildProcessQueryEngine({ memory: "0MB" }), ErrorCode.CONFIG_INVALID);
    await rejectsWith(createChildProcessQueryEngine({ threads: 0 }), ErrorCode.CONFIG_INVALID);
    await rejectsWith(createChildProcessQueryEngine({ memoryPollMs: 0 }), ErrorCode.CONFIG_INVALID);
    const notADirectory = join(dir, "not-a-directory");
    writeFileSync(notADirectory, "");
    await rejectsWith(createChildProcessQueryEngine({ tempDir: notADirectory }), ErrorCode.INTERNAL);
  });

  it("reads sizes in DuckDB's units", () => {
    expect(parseSize("1GB")).toBe(1e9);
    expect(parseSize("512MiB")).toBe(512 * 2 ** 20);
    expect(parseSize("1.5 kb")).toBe(1500);
    expect(parseSize("1 lot")).toBeUndefined();
  });

  it("ends its child and removes its temp directory on close, and refuses calls afterwards", async () => {
    const own = await createChildProcessQueryEngine({ tempDir: join(dir, "own-spill") });
    const pid = own.pid as number;
    await own.close();
    expect(() => process.kill(pid, 0)).toThrow();
    expect(readdirSync(join(dir, "own-spill"))).toEqual([]);
    await rejectsWith(own.query({ inputs: [input], sql: "SELECT 1", limits: LIMITS }), ErrorCode.INTERNAL);
  });
});
