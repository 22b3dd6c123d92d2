// SQL over the workspace through the built server: real DuckDB, real vega-datasets files, the stale/refresh cycle.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const data = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");

let c: Connected;
beforeAll(async () => {
  // The data files and the test's own folder (cairn.toml's, ".") are the import roots.
  c = await connect(`[workspace]\nimport_roots = [".", "${data}"]\n`, [
    "--tools",
    "execute_code",
    "save",
    "inspect",
    "find",
    "import",
    "query",
    "describe",
    "refresh",
  ]);
  await c.call("import", { path: join(data, "airports.csv"), name: "data/airports" });
  await c.call("import", { path: join(data, "flights-3m.parquet"), name: "data/flights" });
});
afterAll(() => c.close());

describe("query over MCP", () => {
  it("answers an aggregate over 3 million Parquet rows with a small preview", async () => {
    const r = await c.call("query", {
      inputs: ["data/flights"],
      sql: "SELECT origin, count(*) AS n FROM input1 GROUP BY origin ORDER BY n DESC, origin",
    });
    expect(r.isError).toBe(false);
    expect(r.json.columns).toEqual([
      { name: "origin", type: "VARCHAR" },
      { name: "n", type: "BIGINT" },
    ]);
    expect(r.json.rows[0]).toEqual({ origin: "ORD", n: 166341 });
    expect(r.json.rows).toHaveLength(25);
    expect(r.json.truncated).toBe(true);
    expect(r.json.row_count).toBeGreaterThan(25);
    expect(r.text.length).toBeLessThan(8000);
  });

  it("keeps a save_as without a preview with preview_rows 0, and takes fewer rows when asked", async () => {
    const sql = "SELECT * FROM input1 WHERE delay > 120";
    const kept = await c.call("query", { inputs: ["data/flights"], sql, save_as: "late/flights", preview_rows: 0 });
    expect(kept.isError, kept.text).toBe(false);
    expect(kept.json).toMatchObject({ rows: [], row_count: 42681, truncated: true, saved: { version: 1 } });
    // The intermediate is whole in the workspace: the saved Parquet holds every row.
    const counted = await c.call("query", { inputs: ["late/flights"], sql: "SELECT count(*) AS n FROM input1" });
    expect(counted.json.rows).toEqual([{ n: 42681 }]);
    const three = await c.call("query", { inputs: ["data/flights"], sql, preview_rows: 3 });
    expect(three.json.rows).toHaveLength(3);
    const snippet = await c.run(
      "const r = await workspace.query({ inputs: ['data/flights'], sql: 'SELECT 1 AS one', preview_rows: 0 }); return [r.rows.length, r.row_count]",
    );
    expect(snippet.json.value).toEqual([0, 1]);
  });

  it.each([[-1], [26], [1.5], ["3"]])("refuses preview_rows %j, naming the bound", async (preview_rows) => {
    const r = await c.call("query", { inputs: ["data/flights"], sql: "SELECT 1", preview_rows });
    expect(r.json.error.code).toBe("INVALID_ARGUMENT");
    expect(r.json.error.message).toContain("preview_rows");
  });

  it("joins two inputs with bound parameters", async () => {
    const r = await c.call("query", {
      inputs: ["data/flights", "data/airports"],
      sql: "SELECT a.state, count(*) AS n FROM input1 f JOIN input2 a ON f.origin = a.iata WHERE a.state = ? GROUP BY 1",
      parameters: ["CA"],
    });
    expect(r.json.rows).toEqual([{ state: "CA", n: 370248 }]);
  });

  it("describes columns without rows", async () => {
    const r = await c.call("describe", { inputs: ["data/airports"] });
    expect(r.json.inputs[0].columns.map((col: { name: string }) => col.name)).toEqual([
      "iata",
      "name",
      "city",
      "state",
      "country",
      "latitude",
      "longitude",
    ]);
    expect(r.json.inputs[0]).toMatchObject({ input: "input1", name: "data/airports", version: 1 });
  });

  it("refuses writes, other files and second statements", async () => {
    for (const sql of [
      "COPY (SELECT 1) TO '/tmp/x.csv'",
      "SELECT 1; SELECT 2",
      "ATTACH '/tmp/x.db'",
      "SELECT * FROM read_text('/etc/passwd')",
    ]) {
      const r = await c.call("query", { inputs: ["data/airports"], sql });
      expect(r.isError).toBe(true);
      expect(["SQL_REJECTED", "QUERY_FAILED"]).toContain(r.json.error.code);
      expect(r.text).not.toContain("root:");
    }
  });

  it("keeps exact big integers and decimals", async () => {
    const r = await c.call("query", {
      inputs: ["data/airports"],
      sql: "SELECT 9007199254740993::BIGINT AS big, 170141183460469231731687303715884105727::HUGEINT AS huge, 12.345::DECIMAL(10,3) AS d",
    });
    expect(r.json.rows[0]).toEqual({
      big: "9007199254740993",
      huge: "170141183460469231731687303715884105727",
      d: "12.345",
    });
    expect(r.json.integer_string_columns).toEqual(["big", "huge"]);
  });

  it("saves a result, marks a chain of three stale when the root moves, refuses stale inputs, and refreshes the chain with one cascade call", async () => {
    const csv = join(c.dir, "scores.csv");
    writeFileSync(csv, "id,score\n1,10\n2,20\n3,30\n");
    await c.call("import", { path: csv, name: "chain/scores" });
    const b = await c.call("query", {
      inputs: ["chain/scores"],
      sql: "SELECT id, score * 2 AS s FROM input1",
      save_as: "chain/b",
    });
    expect(b.json.saved).toMatchObject({ name: "chain/b", version: 1, kind: "parquet" });
    await c.call("query", { inputs: ["chain/b"], sql: "SELECT sum(s) AS total FROM input1", save_as: "chain/c" });
    await c.call("query", { inputs: ["chain/c"], sql: "SELECT total + 1 AS t FROM input1", save_as: "chain/d" });

    writeFileSync(csv, "id,score\n1,100\n");
    await c.call("import", { path: csv, name: "chain/scores", expected_version: 1 });
    for (const name of ["chain/b", "chain/c", "chain/d"]) {
      expect((await c.call("inspect", { ref: name, excerpt_bytes: 0 })).json.stale).toBe(true);
    }
    const refused = await c.call("query", { inputs: ["chain/c"], sql: "SELECT * FROM input1" });
    expect(refused.json.error.code).toBe("STALE_INPUT");
    const historical = await c.call("query", {
      inputs: ["chain/c"],
      sql: "SELECT total FROM input1",
      allow_historical: true,
    });
    // sum() is a 128-bit integer, saved as DECIMAL(38,0): decimals come back as exact strings.
    expect(historical.json.rows).toEqual([{ total: "120" }]);

    const stale = await c.call("refresh", { ref: "chain/d" });
    expect(stale.json.error.code).toBe("STALE_INPUT");
    // The hint names what refresh itself accepts.
    expect(stale.json.error.message).toContain('refresh {ref: "chain/d", cascade: true}');
    const d = await c.call("refresh", { ref: "chain/d", cascade: true });
    expect(d.isError, d.text).toBe(false);
    expect(d.json.steps).toMatchObject([
      { name: "chain/b", from_version: 1, version: 2, row_count: 1 },
      { name: "chain/c", from_version: 1, version: 2, row_count: 1 },
      { name: "chain/d", from_version: 1, version: 2, row_count: 1 },
    ]);
    // What changed in each, against the version it replaced (issue 31).
    for (const step of d.json.steps) expect(step.changes).toMatchObject({ by: "rows", added: 1 });
    expect(d.json.saved).toMatchObject({ name: "chain/d", version: 2, stale: false });
    // A summary: no preview unless asked.
    expect(d.json.rows).toBeUndefined();
    expect(d.text.length).toBeLessThan(1500);
    const again = await c.call("refresh", { ref: "chain/d", cascade: true, preview: true });
    expect(again.json.steps.map((s: { name: string }) => s.name)).toEqual(["chain/d"]);
    expect(again.json.rows).toEqual([{ t: "201" }]);
    const final = await c.call("query", { inputs: ["chain/d"], sql: "SELECT t FROM input1" });
    expect(final.json.rows).toEqual([{ t: "201" }]);
    expect((await c.call("inspect", { ref: "chain/d", full: true, excerpt_bytes: 0 })).json).toMatchObject({
      stale: false,
      sql: "SELECT total + 1 AS t FROM input1",
    });
  });

  it("runs SQL from a snippet with workspace.query", async () => {
    const r = await c.run(
      "const r = await workspace.query({ inputs: ['data/airports'], sql: 'SELECT count(*) AS n FROM input1 WHERE state = ?', parameters: ['TX'] }); return r.rows[0].n",
    );
    expect(r.json.value).toBeGreaterThan(100);
  });

  it("refuses a note as a query input", async () => {
    await c.call("save", { name: "plain/note", content: "not a table" });
    const r = await c.call("query", { inputs: ["plain/note"], sql: "SELECT 1" });
    expect(r.json.error.code).toBe("INVALID_ARGUMENT");
  });
});
