// resume previews pinned tables through the query engine (issue 31, item 3), on a real workspace and a real DuckDB:
// a Parquet, CSV or JSON pin shows its first rows and row count instead of "binary content" or 512 bytes of text, a
// superseded pin is shown as it was, a table the engine cannot read keeps its text beside the reason, and within a
// budget rows are cut first (the same number for every table) before any preview is left out.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import { PREVIEW_ROWS, type TableReader } from "../../src/workspace/resume.js";
import { measuredBudget } from "../../src/workspace/retrieval/budget.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import type { ArtifactPreview, ResumeResult } from "../../src/workspace/types.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { makeTempDir } from "../query/helpers.js";

const config = ConfigSchema.parse({}).workspace;

let dir: string;
let ws: Workspace;
let engine: DuckDbQueryEngine;
let tables: TableReader;

beforeAll(async () => {
  dir = makeTempDir("resume-tables");
  ws = await openWorkspace(join(dir, "ws"));
  engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  const sql = new WorkspaceSql(ws, async () => engine, config, join(dir, "ws", "scratch"));
  tables = (ref, rows) => sql.peek(ref, rows);
  const csv = ["sku,region,units", ...Array.from({ length: 40 }, (_, i) => `M-${i},${i % 2 ? "north" : "south"},${i}`)];
  await ws.save({ name: "sales/raw.csv", content: `${csv.join("\n")}\n`, kind: "csv" });
  await sql.query({
    inputs: ["sales/raw.csv"],
    sql: "SELECT region, sum(units)::BIGINT AS units, count(*) AS skus FROM input1 GROUP BY region ORDER BY region",
    save_as: "sales/by-region",
  });
  await sql.query({
    inputs: ["sales/raw.csv"],
    sql: "SELECT sku, units * 3 AS tripled FROM input1 ORDER BY units",
    save_as: "sales/tripled",
  });
  await ws.save({
    name: "sales/targets.json",
    content: JSON.stringify([
      { region: "north", target: 300 },
      { region: "south", target: 250 },
    ]),
    kind: "json",
  });
  await ws.save({ name: "sales/notes", content: "north missed its target; recheck the south returns\n" });
  await ws.save({
    name: "sales/handoff",
    checkpoint: { objective: "explain the regional gap", next_step: "join targets" },
    dependencies: ["sales/by-region", "sales/tripled", "sales/raw.csv", "sales/targets.json", "sales/notes"],
  });
});
afterAll(async () => {
  await engine.close();
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

function resumed(reply: ResumeResult): Extract<ResumeResult, { checkpoint: unknown }> {
  if ("candidates" in reply) throw new Error(`expected a checkpoint: ${reply.message}`);
  return reply;
}

const byName = (artifacts: ArtifactPreview[], name: string) => artifacts.find((a) => a.name === name);

describe("resume previews pinned tables", () => {
  it("shows a Parquet, CSV or JSON pin's first rows and row count, and text as its excerpt", async () => {
    const { artifacts, omitted } = resumed(await ws.resume({ text: "sales/handoff" }, undefined, tables));
    expect(omitted).toBeUndefined();
    expect(byName(artifacts, "sales/by-region")).toMatchObject({
      table: {
        row_count: 2,
        columns: [
          { name: "region", type: "VARCHAR" },
          { name: "units", type: "BIGINT" },
          { name: "skus", type: "BIGINT" },
        ],
        rows: [
          { region: "north", units: 400, skus: 20 },
          { region: "south", units: 380, skus: 20 },
        ],
      },
    });
    const tripled = byName(artifacts, "sales/tripled");
    expect(tripled?.table?.row_count).toBe(40);
    expect(tripled?.table?.rows).toEqual([0, 1, 2, 3, 4].map((i) => ({ sku: `M-${i}`, tripled: i * 3 })));
    expect(tripled).not.toHaveProperty("excerpt");
    const raw = byName(artifacts, "sales/raw.csv");
    expect(raw?.table).toMatchObject({ row_count: 40, rows: { length: PREVIEW_ROWS } });
    expect(raw?.table?.rows[0]).toEqual({ sku: "M-0", region: "south", units: 0 });
    expect(byName(artifacts, "sales/targets.json")?.table).toMatchObject({
      row_count: 2,
      rows: [
        { region: "north", target: 300 },
        { region: "south", target: 250 },
      ],
    });
    expect(byName(artifacts, "sales/notes")).toMatchObject({ excerpt: expect.stringContaining("north missed") });
  });

  it("without a table reader keeps the byte previews (the workspace alone)", async () => {
    const { artifacts } = resumed(await ws.resume({ text: "sales/handoff" }));
    expect(byName(artifacts, "sales/by-region")).toMatchObject({ excerpt: null, note: /binary content/ });
    expect(byName(artifacts, "sales/raw.csv")?.excerpt).toMatch(/^sku,region,units\n/);
  });

  it("shows a pin its name has moved past as the version pinned", async () => {
    await ws.save({ name: "moved/t.csv", content: "a\n1\n2\n3\n", kind: "csv" });
    await ws.save({ name: "moved/cp", checkpoint: { objective: "pinned old" }, dependencies: ["moved/t.csv"] });
    await ws.save({ name: "moved/t.csv", content: "a\n9\n", kind: "csv", expected_version: 1 });
    const { artifacts } = resumed(await ws.resume({ text: "moved/cp" }, undefined, tables));
    expect(artifacts[0]).toMatchObject({ version: 1, table: { row_count: 3, rows: [{ a: 1 }, { a: 2 }, { a: 3 }] } });
  });

  it("keeps the text of a table the engine cannot read, with the engine's reason", async () => {
    await ws.save({ name: "broken/t.json", content: '{"region": "north", "target": ', kind: "json" });
    await ws.save({ name: "broken/cp", checkpoint: { objective: "broken pin" }, dependencies: ["broken/t.json"] });
    const { artifacts } = resumed(await ws.resume({ text: "broken/cp" }, undefined, tables));
    expect(artifacts[0]).toMatchObject({
      excerpt: '{"region": "north", "target": ',
      note: expect.stringMatching(/^the query engine cannot read it as a table: QUERY_FAILED: /),
    });
    expect(artifacts[0]).not.toHaveProperty("table");
  });

  it("cuts table rows first, the same number for every table, then leaves previews out", async () => {
    const whole = resumed(await ws.resume({ text: "sales/handoff" }, undefined, tables));
    const size = (reply: unknown) => Buffer.byteLength(JSON.stringify(reply));
    const seen = new Set<string>();
    for (let limit = size(whole); limit > 700; limit = Math.floor(limit * 0.95)) {
      const budget = measuredBudget({ field: "max_bytes", limit, unit: "bytes", measure: size });
      const reply = resumed(await ws.resume({ text: "sales/handoff" }, budget, tables));
      expect(size(reply)).toBeLessThanOrEqual(limit);
      const shown = reply.artifacts.filter((a) => a.table !== undefined).map((a) => a.table?.rows.length ?? 0);
      if (reply.omitted === undefined) {
        expect(reply).toEqual(whole);
        seen.add("whole");
        continue;
      }
      expect(reply.omitted.rows).toBeGreaterThan(0);
      if (reply.omitted.previews === undefined) {
        // Every table is still previewed, each with the same number of rows (or all it has, when fewer).
        expect(shown).toHaveLength(4);
        const kept = Math.max(...shown);
        expect(kept).toBeLessThan(PREVIEW_ROWS);
        for (const [i, a] of reply.artifacts.entries()) {
          const all = whole.artifacts[i]?.table?.rows.length ?? 0;
          if (a.table !== undefined) expect(a.table.rows.length).toBe(Math.min(kept, all));
        }
        seen.add("rows");
      } else {
        expect(shown.every((n) => n === 0)).toBe(true);
        seen.add("previews");
      }
    }
    expect([...seen].sort()).toEqual(["previews", "rows", "whole"]);
  });
});
