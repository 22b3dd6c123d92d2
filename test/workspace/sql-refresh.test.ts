// Refresh of saved queries on a real workspace and a real DuckDB: one link, a whole chain with cascade (each saved
// query once, ancestors first), what a cascade that stops part-way says, and the STALE_INPUT hint refresh accepts.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ErrorCode } from "../../src/errors.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { QueryEngine, QueryRequest } from "../../src/query/query-engine.js";
import { MAX_CASCADE_STEPS } from "../../src/workspace/refresh-plan.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { makeTempDir, rejectsWith } from "../query/helpers.js";

const config = ConfigSchema.parse({}).workspace;

let dir: string;
let ws: Workspace;
let engine: DuckDbQueryEngine;
/** Runs before each engine call: a test plays another writer here. */
let beforeQuery: (request: QueryRequest) => Promise<void> = async () => {};
let sql: WorkspaceSql;

beforeAll(async () => {
  dir = makeTempDir("sql-refresh");
  ws = await openWorkspace(join(dir, "ws"));
  engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  const watched: QueryEngine = {
    query: async (request) => {
      await beforeQuery(request);
      return engine.query(request);
    },
    describe: (request) => engine.describe(request),
    close: () => engine.close(),
  };
  sql = new WorkspaceSql(ws, async () => watched, config, join(dir, "ws", "scratch"));
});
afterAll(async () => {
  await engine.close();
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A CSV root under `prefix` and saved queries b (over the root), c (over b), d (over c). */
async function chain(prefix: string): Promise<string> {
  const csv = join(dir, `${prefix}.csv`);
  writeFileSync(csv, "id,score\n1,10\n2,20\n3,30\n");
  await ws.import({ path: csv, name: `${prefix}/root` });
  await sql.query({ inputs: [`${prefix}/root`], sql: "SELECT id, score * 2 AS s FROM input1", save_as: `${prefix}/b` });
  await sql.query({
    inputs: [`${prefix}/b`],
    sql: "SELECT sum(s)::BIGINT AS total FROM input1",
    save_as: `${prefix}/c`,
  });
  await sql.query({ inputs: [`${prefix}/c`], sql: "SELECT total + 1 AS t FROM input1", save_as: `${prefix}/d` });
  writeFileSync(csv, "id,score\n1,100\n");
  await ws.import({ path: csv, name: `${prefix}/root`, expected_version: 1 });
  return csv;
}

describe("refresh", () => {
  it("refuses a stale direct input with a hint that refresh accepts", async () => {
    await chain("hint");
    const error = await rejectsWith(sql.refresh({ ref: "hint/d" }), ErrorCode.STALE_INPUT);
    expect(error.message).toContain('refresh {ref: "hint/d", cascade: true}');
    expect(error.message).not.toContain("allow_historical");
  });

  it("refreshes a chain of three with one cascade call, ancestors first, and answers a summary", async () => {
    await chain("three");
    const r = await sql.refresh({ ref: "three/d", cascade: true });
    // Each step says what changed against the version it replaced, by whole rows (issue 31).
    expect(r.steps).toEqual([
      {
        name: "three/b",
        from_version: 1,
        version: 2,
        row_count: 1,
        changes: {
          by: "rows",
          added: 1,
          removed: 3,
          rows: [
            { change: "removed", before: { id: 1, s: 20 } },
            { change: "added", after: { id: 1, s: 200 } },
            { change: "removed", before: { id: 2, s: 40 } },
            { change: "removed", before: { id: 3, s: 60 } },
          ],
        },
      },
      {
        name: "three/c",
        from_version: 1,
        version: 2,
        row_count: 1,
        changes: expect.objectContaining({ by: "rows", added: 1, removed: 1 }),
      },
      {
        name: "three/d",
        from_version: 1,
        version: 2,
        row_count: 1,
        changes: {
          by: "rows",
          added: 1,
          removed: 1,
          rows: [
            { change: "removed", before: { t: 121 } },
            { change: "added", after: { t: 201 } },
          ],
        },
      },
    ]);
    expect(r.saved).toMatchObject({ name: "three/d", version: 2, stale: false });
    expect(r).not.toHaveProperty("rows");
    const final = await sql.query({ inputs: ["three/d"], sql: "SELECT t FROM input1" });
    expect(final.rows).toEqual([{ t: 201 }]);
    // Nothing is stale any more: a second cascade refreshes only the ref itself.
    const again = await sql.refresh({ ref: "three/d", cascade: true, preview: true });
    expect(again.steps.map((s) => s.name)).toEqual(["three/d"]);
    expect(again.steps[0]?.changes).toEqual({ by: "rows", added: 0, removed: 0, rows: [] });
    expect(again.rows).toEqual([{ t: 201 }]);
    expect(again.columns).toEqual([{ name: "t", type: "BIGINT" }]);
  });

  it("says what changed in the ref by its key, changed rows first, within 10 rows", async () => {
    const csv = join(dir, "keyed.csv");
    const rows = (moved: boolean) =>
      `id,score\n${Array.from({ length: 30 }, (_, i) => `${i},${moved && i % 2 === 0 ? i + 100 : i}`).join("\n")}\n31,0\n`;
    writeFileSync(csv, rows(false));
    await ws.import({ path: csv, name: "keyed/root" });
    await sql.query({ inputs: ["keyed/root"], sql: "SELECT id, score FROM input1", save_as: "keyed/copy" });
    writeFileSync(csv, rows(true).replace("31,0\n", "32,1\n"));
    await ws.import({ path: csv, name: "keyed/root", expected_version: 1 });
    const r = await sql.refresh({ ref: "keyed/copy", key: ["id"] });
    const changes = r.steps[0]?.changes as Record<string, unknown> & { rows: unknown[] };
    expect(changes).toMatchObject({ by: "key", key: ["id"], changed: 15, added: 1, removed: 1 });
    expect(changes.rows).toHaveLength(10);
    expect(changes.rows[0]).toEqual({ change: "changed", key: { id: 0 }, before: { score: 0 }, after: { score: 100 } });
    const bad = await rejectsWith(sql.refresh({ ref: "keyed/copy", key: ["id", "id"] }), ErrorCode.INVALID_ARGUMENT);
    expect(bad.message).toContain("key must list");
  });

  it("refreshes a shared ancestor once when two inputs read it", async () => {
    const csv = join(dir, "diamond.csv");
    writeFileSync(csv, "x\n1\n2\n");
    await ws.import({ path: csv, name: "diamond/root" });
    await sql.query({ inputs: ["diamond/root"], sql: "SELECT x FROM input1", save_as: "diamond/base" });
    await sql.query({
      inputs: ["diamond/base"],
      sql: "SELECT sum(x)::BIGINT AS s FROM input1",
      save_as: "diamond/sum",
    });
    await sql.query({ inputs: ["diamond/base"], sql: "SELECT count(*) AS n FROM input1", save_as: "diamond/count" });
    await sql.query({
      inputs: ["diamond/sum", "diamond/count"],
      sql: "SELECT s / n AS mean FROM input1, input2",
      save_as: "diamond/mean",
    });
    writeFileSync(csv, "x\n10\n20\n30\n");
    await ws.import({ path: csv, name: "diamond/root", expected_version: 1 });
    const r = await sql.refresh({ ref: "diamond/mean", cascade: true });
    const names = r.steps.map((s) => s.name);
    expect(names[0]).toBe("diamond/base");
    expect(names.slice(1, 3).sort()).toEqual(["diamond/count", "diamond/sum"]);
    expect(names[3]).toBe("diamond/mean");
    expect((await sql.query({ inputs: ["diamond/mean"], sql: "SELECT mean FROM input1" })).rows).toEqual([
      { mean: 20 },
    ]);
  });

  it("stops at a concurrent writer's VERSION_CONFLICT and says what was refreshed and what was not", async () => {
    await chain("conflict");
    // Another writer saves conflict/c while the cascade is about to re-run it.
    beforeQuery = async (request) => {
      if (request.sql.includes("sum(s)")) {
        beforeQuery = async () => {};
        await ws.save({ name: "conflict/c", content: "someone else's version", expected_version: 1 });
      }
    };
    const error = await rejectsWith(sql.refresh({ ref: "conflict/d", cascade: true }), ErrorCode.VERSION_CONFLICT);
    expect(error.message).toContain("refresh stopped at conflict/c");
    expect(error.message).toContain("Refreshed: conflict/b v2 (1 row)");
    expect(error.message).toContain("Not refreshed: conflict/c, conflict/d");
    expect(error.data).toMatchObject({
      refreshed: [{ name: "conflict/b", from_version: 1, version: 2, row_count: 1 }],
      not_refreshed: ["conflict/c", "conflict/d"],
      failed: "conflict/c",
    });
    // What the catalog says agrees: b is fresh, the other writer's c stands, d is still marked stale.
    const [b, c, d] = await ws.locate(["conflict/b", "conflict/c", "conflict/d"]);
    expect(b?.record).toMatchObject({ version: 2, stale: false });
    expect(c?.record).toMatchObject({ version: 2, kind: "note" });
    expect(d?.record).toMatchObject({ version: 1, stale: true });
  });

  it("refuses before writing anything when a stale input is not a saved query", async () => {
    const csv = join(dir, "note.csv");
    writeFileSync(csv, "x\n1\n");
    await ws.import({ path: csv, name: "plain/root" });
    await ws.save({ name: "plain/table", content: "x\n1\n", kind: "csv", dependencies: ["plain/root"] });
    await sql.query({ inputs: ["plain/table"], sql: "SELECT x FROM input1", save_as: "plain/q" });
    await ws.import({ path: csv, name: "plain/root", expected_version: 1 });
    const error = await rejectsWith(sql.refresh({ ref: "plain/q", cascade: true }), ErrorCode.STALE_INPUT);
    expect(error.message).toMatch(/plain\/table v1 is stale .* not a saved query/);
    const [q] = await ws.locate(["plain/q"]);
    expect(q?.record.version).toBe(1);
  });

  it("refuses a name computed from an older version of itself", async () => {
    const csv = join(dir, "self.csv");
    writeFileSync(csv, "x\n1\n");
    await ws.import({ path: csv, name: "self/t" });
    await sql.query({
      inputs: ["self/t"],
      sql: "SELECT x + 1 AS x FROM input1",
      save_as: "self/t",
      expected_version: 1,
    });
    const error = await rejectsWith(sql.refresh({ ref: "self/t", cascade: true }), ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain("computed from an older version of itself");
  });

  it(`refuses a cascade of more than ${MAX_CASCADE_STEPS} saved queries with TOO_LARGE, before writing anything`, async () => {
    const csv = join(dir, "long.csv");
    writeFileSync(csv, "x\n1\n");
    await ws.import({ path: csv, name: "long/0" });
    for (let i = 1; i <= MAX_CASCADE_STEPS + 1; i++) {
      await sql.query({ inputs: [`long/${i - 1}`], sql: "SELECT x FROM input1", save_as: `long/${i}` });
    }
    await ws.import({ path: csv, name: "long/0", expected_version: 1 });
    const last = `long/${MAX_CASCADE_STEPS + 1}`;
    const error = await rejectsWith(sql.refresh({ ref: last, cascade: true }), ErrorCode.TOO_LARGE);
    expect(error.message).toContain(`refreshing ${last} needs more than ${MAX_CASCADE_STEPS - 1}`);
    const [first] = await ws.locate(["long/1"]);
    expect(first?.record.version).toBe(1);
    // One step shorter fits.
    const r = await sql.refresh({ ref: `long/${MAX_CASCADE_STEPS}`, cascade: true });
    expect(r.steps).toHaveLength(MAX_CASCADE_STEPS);
  });
});
