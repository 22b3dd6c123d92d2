// Row changes between two table files on a real DuckDB: by key (added, removed, changed with only the changed columns),
// by whole rows (duplicates counted), NULLs, wide tables, columns added and retyped, a key that cannot match, paging.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { QueryInput } from "../../src/query/query-engine.js";
import { changeCount, checkKey, rowChanges } from "../../src/workspace/row-changes.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { makeTempDir } from "../query/helpers.js";

const config = ConfigSchema.parse({}).workspace;

let dir: string;
let ws: Workspace;
let engine: DuckDbQueryEngine;
let sql: WorkspaceSql;
let files = 0;

beforeAll(async () => {
  dir = makeTempDir("row-changes");
  ws = await openWorkspace(join(dir, "ws"));
  engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  sql = new WorkspaceSql(ws, async () => engine, config, join(dir, "ws", "scratch"));
});
afterAll(async () => {
  await engine.close();
  await ws.close();
});

function csv(text: string): QueryInput {
  const path = join(dir, `t${files++}.csv`);
  writeFileSync(path, text);
  return { path, format: "csv" };
}

const compare = (before: string, after: string, options: { key?: string[]; offset?: number; limit?: number } = {}) =>
  rowChanges(sql, csv(before), csv(after), { maxBytes: 64 * 1024, ...options });

/** 15 stores, the last 4 of which stop meeting their target in the second table (issue 31). */
function stores(flipped: boolean): string {
  const rows = Array.from(
    { length: 15 },
    (_, i) => `s${String(i).padStart(2, "0")},${flipped && i >= 11 ? "false" : "true"}`,
  );
  return `store,meets_target\n${rows.join("\n")}\n`;
}

describe("rowChanges", () => {
  it("matches rows on the key and shows the changed rows first with only their changed columns", async () => {
    const changes = await compare(
      "id,name,score\n1,a,10\n2,b,20\n3,c,30\n",
      "id,name,score\n1,a,10\n2,b,25\n4,d,40\n",
      { key: ["id"] },
    );
    expect(changes).toMatchObject({ by: "key", key: ["id"], added: 1, removed: 1, changed: 1, offset: 0 });
    expect(changes.rows).toEqual([
      { change: "changed", key: { id: 2 }, before: { score: 20 }, after: { score: 25 } },
      { change: "removed", before: { id: 3, name: "c", score: 30 } },
      { change: "added", after: { id: 4, name: "d", score: 40 } },
    ]);
  });

  it("finds the 4 of 15 rows that flipped (issue 31), by key and by whole rows", async () => {
    const keyed = await compare(stores(false), stores(true), { key: ["store"] });
    expect(keyed).toMatchObject({ added: 0, removed: 0, changed: 4 });
    expect(keyed.rows.map((r) => r.key)).toEqual([
      { store: "s11" },
      { store: "s12" },
      { store: "s13" },
      { store: "s14" },
    ]);
    expect(keyed.rows[0]).toMatchObject({ before: { meets_target: true }, after: { meets_target: false } });
    const whole = await compare(stores(false), stores(true));
    expect(whole).toMatchObject({ by: "rows", added: 4, removed: 4 });
    expect(whole.changed).toBeUndefined();
    // Each removed row sits next to the row that replaced it.
    expect(whole.rows.slice(0, 2)).toEqual([
      { change: "removed", before: { store: "s11", meets_target: true } },
      { change: "added", after: { store: "s11", meets_target: false } },
    ]);
  });

  it("answers zero changes for equal tables", async () => {
    const same = "id,v\n1,x\n2,y\n";
    expect(await compare(same, same, { key: ["id"] })).toMatchObject({ added: 0, removed: 0, changed: 0, rows: [] });
    expect(await compare(same, same)).toMatchObject({ added: 0, removed: 0, rows: [] });
  });

  it("counts repeated whole rows as a multiset", async () => {
    const changes = await compare("a,b\n1,x\n1,x\n1,x\n2,y\n", "a,b\n1,x\n2,y\n2,y\n");
    expect(changes).toMatchObject({ added: 1, removed: 2 });
  });

  it("treats NULL as a value: a NULL key matches a NULL key, NULL to a value is a change", async () => {
    const changes = await compare("id,v\n,1\n2,\n3,\n", "id,v\n,1\n2,5\n3,\n", { key: ["id"] });
    expect(changes).toMatchObject({ added: 0, removed: 0, changed: 1 });
    expect(changes.rows).toEqual([{ change: "changed", key: { id: 2 }, before: { v: null }, after: { v: 5 } }]);
  });

  it("compares whole rows and says why when the key is not unique or not in both tables", async () => {
    const repeated = await compare("id,v\n1,a\n1,b\n2,c\n", "id,v\n1,a\n2,d\n", { key: ["id"] });
    expect(repeated.by).toBe("rows");
    expect(repeated.key_unusable).toMatch(
      /key id is not unique: the older table holds 1 key value more than once \(e\.g\. \{"id":1\}\)/,
    );
    expect(repeated).toMatchObject({ added: 1, removed: 2 });
    const missing = await compare("id,v\n1,a\n", "id,v\n1,b\n", { key: ["nope"] });
    expect(missing).toMatchObject({ by: "rows", key_unusable: 'key column "nope" is not in both tables' });
  });

  it("keeps a wide table's SQL short and shows only the changed column of a changed row", async () => {
    const columns = Array.from({ length: 300 }, (_, i) => `column_with_a_long_name_${i}`);
    const row = (id: number, last: number) => [id, ...columns.slice(1, -1).map((_, i) => i), last].join(",");
    const before = `${columns.join(",")}\n${row(1, 7)}\n${row(2, 8)}\n`;
    const after = `${columns.join(",")}\n${row(1, 7)}\n${row(2, 9)}\n`;
    const changes = await compare(before, after, { key: ["column_with_a_long_name_0"] });
    expect(changes).toMatchObject({ changed: 1, added: 0, removed: 0 });
    expect(changes.rows[0]).toEqual({
      change: "changed",
      key: { column_with_a_long_name_0: 2 },
      before: { column_with_a_long_name_299: 8 },
      after: { column_with_a_long_name_299: 9 },
    });
  });

  it("compares the common columns, naming columns added, removed and retyped, also in another order", async () => {
    const changes = await compare("id,v,old\n1,1,x\n2,2,y\n", "extra,v,id\nq,1,1\nq,two,2\n", { key: ["id"] });
    expect(changes).toMatchObject({
      columns_added: ["extra"],
      columns_removed: ["old"],
      columns_retyped: ["v"],
      changed: 1,
    });
    expect(changes.rows).toEqual([{ change: "changed", key: { id: 2 }, before: { v: "2" }, after: { v: "two" } }]);
  });

  it("bounds the rows by limit and bytes with whole counts, and pages with offset", async () => {
    const many = (n: number, v: string) => `id,v\n${Array.from({ length: n }, (_, i) => `${i},${v}`).join("\n")}\n`;
    const first = await compare(many(50, "a"), many(50, "b"), { key: ["id"], limit: 10 });
    expect(first.changed).toBe(50);
    expect(first.rows).toHaveLength(10);
    const small = await rowChanges(sql, csv(many(50, "a")), csv(many(50, "b")), { key: ["id"], maxBytes: 200 });
    expect(small.rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(small.rows).length).toBeLessThanOrEqual(200);
    expect(changeCount(small)).toBe(50);
    const later = await compare(many(50, "a"), many(50, "b"), { key: ["id"], offset: 45, limit: 10 });
    expect(later.rows.map((r) => r.key?.id)).toEqual([45, 46, 47, 48, 49]);
    const past = await compare(many(50, "a"), many(50, "b"), { key: ["id"], offset: 60 });
    expect(past).toMatchObject({ changed: 50, rows: [], offset: 60 });
  });

  it("refuses a key that is not a list of column names, and tables with no column in common", async () => {
    expect(() => checkKey(["a", "a"])).toThrow(/distinct column names/);
    expect(() => checkKey("id")).toThrow(/key must list/);
    await expect(compare("a\n1\n", "b\n1\n")).rejects.toThrow(/no column in common/);
  });
});
