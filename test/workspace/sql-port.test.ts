// The catalog's SQL port (decision 0270): a statement compiles to each engine's placeholders with its fragments and
// spellings; and on both catalogs many writes of several stores started at once, with reads among them, each commit
// once (none joins another's transaction on SQLite's one connection), a refused one leaves nothing, and the connection
// is left usable.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { byDialect, compile, inTexts, NOTHING, sql } from "../../src/workspace/catalog/sql.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { freshPostgresUrl } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";
import { CATALOG_BACKENDS } from "../helpers/workspace-backends.js";

const root = mkdtempSync(join(tmpdir(), "cairn-sql-port-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("compile", () => {
  it("numbers PostgreSQL's placeholders and gives SQLite question marks, values in order", () => {
    const statement = sql`SELECT * FROM t WHERE a = ${1} AND b = ${"x"} AND c = ${null}`;
    expect(compile(statement, "sqlite")).toEqual({
      text: "SELECT * FROM t WHERE a = ? AND b = ? AND c = ?",
      values: [1, "x", null],
    });
    expect(compile(statement, "postgres")).toEqual({
      text: "SELECT * FROM t WHERE a = $1 AND b = $2 AND c = $3",
      values: [1, "x", null],
    });
  });

  it("splices fragments and each engine's spelling with their own values, numbered across the whole statement", () => {
    const condition = (v: number | undefined) => (v === undefined ? NOTHING : sql`AND n > ${v}`);
    const spelled = byDialect({ sqlite: sql`json_each(${"[1]"})`, postgres: sql`unnest(${[1]}::int[])` });
    const statement = sql`SELECT ${"a"} FROM ${spelled} WHERE k = ${"k"} ${condition(5)} ${condition(undefined)} LIMIT ${3}`;
    expect(compile(statement, "sqlite")).toEqual({
      text: "SELECT ? FROM json_each(?) WHERE k = ? AND n > ?  LIMIT ?",
      values: ["a", "[1]", "k", 5, 3],
    });
    expect(compile(statement, "postgres")).toEqual({
      text: "SELECT $1 FROM unnest($2::int[]) WHERE k = $3 AND n > $4  LIMIT $5",
      values: ["a", [1], "k", 5, 3],
    });
    expect(compile(sql`x ${inTexts(["a", "b"])}`, "sqlite").values).toEqual(['["a","b"]']);
    expect(compile(sql`x ${inTexts(["a", "b"])}`, "postgres").values).toEqual([["a", "b"]]);
  });

  it("compiles each shape of one call site to its own text, from the cache as from the first time", () => {
    // One template whose slots take a fragment or a plain value in turn: every combination, twice each.
    const at = (x: unknown, y: unknown) => sql`SELECT ${x} AND ${y}`;
    const fragment = sql`f(${7})`;
    const cases = [
      { x: fragment, y: 1, sqlite: "SELECT f(?) AND ?", values: [7, 1] },
      { x: 1, y: fragment, sqlite: "SELECT ? AND f(?)", values: [1, 7] },
      { x: fragment, y: fragment, sqlite: "SELECT f(?) AND f(?)", values: [7, 7] },
      { x: 1, y: 2, sqlite: "SELECT ? AND ?", values: [1, 2] },
      { x: sql`g(${fragment})`, y: 3, sqlite: "SELECT g(f(?)) AND ?", values: [7, 3] },
      { x: sql`g(${1})`, y: fragment, sqlite: "SELECT g(?) AND f(?)", values: [1, 7] },
    ];
    for (let round = 0; round < 2; round++) {
      for (const c of cases) expect(compile(at(c.x, c.y), "sqlite")).toEqual({ text: c.sqlite, values: c.values });
    }
    expect(compile(sql`x ${inTexts(["only"])}`, "postgres")).toEqual({ text: "x = $1", values: ["only"] });
  });

  it("binds undefined as null, and booleans as 0/1 on SQLite only", () => {
    const statement = sql`VALUES (${undefined}, ${true}, ${false})`;
    expect(compile(statement, "sqlite").values).toEqual([null, 1, 0]);
    expect(compile(statement, "postgres").values).toEqual([null, true, false]);
  });
});

let n = 0;
const open = (backend: (typeof CATALOG_BACKENDS)[number]) =>
  backend === "sqlite" ? createSqliteCatalog(join(root, `catalog${n++}.db`)) : createPgCatalog(freshPostgresUrl());

describe.each(CATALOG_BACKENDS)("writes started at once (%s catalog)", (backend) => {
  it("each commit once, a refused one leaves nothing, and the connection stays usable", async () => {
    const catalog = await open(backend);
    try {
      await catalog.claims.claim("held", "ada", 60_000);
      const writes: Promise<unknown>[] = [];
      const reads: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        writes.push(catalog.claims.claim(`r/${i}`, "bob", 60_000));
        writes.push(
          catalog.events.record({ operation: "note", ref: `e/${i}`, artifact_id: null, version: null, detail: { i } }),
        );
        writes.push(catalog.memory.record(`s/${i % 4}`, [{ kind: "run", label: `ran ${i}`, detail: {} }]));
        writes.push(
          catalog.tasks.cachePut(
            { key: `k/${i}`, sha256: "0".repeat(64), bytes: 1, kind: "note", media_type: "text/plain", meta: {} },
            { maxEntries: 1000, maxBytes: 1e9 },
          ),
        );
        reads.push(catalog.events.page({ limit: 100 }), catalog.claims.list({ limit: 100 }));
      }
      const refused = caught(catalog.claims.claim("held", "cy", 60_000));
      await Promise.all(writes);
      expect((await refused).code).toBe("CLAIM_HELD");
      await Promise.all(reads);
      const events = await catalog.events.page({ limit: 100 });
      expect(events.events.filter((e) => e.operation === "note")).toHaveLength(40);
      // seq order is the order the writes committed: strictly increasing, each event once.
      const seqs = events.events.map((e) => e.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect((await catalog.claims.list({ limit: 100 })).map((c) => c.holder)).toEqual([
        "ada",
        ...Array.from({ length: 40 }, () => "bob"),
      ]);
      expect((await catalog.memory.counts()).observations).toBe(40);
      expect((await catalog.claims.owner("held")).holder).toBe("ada");
      // The connection is left outside any transaction: a later write and read still work.
      await catalog.claims.release({ resource: "held", ticket: 1 });
      expect((await catalog.claims.owner("held")).held).toBe(false);
    } finally {
      await catalog.close();
    }
  });
});
