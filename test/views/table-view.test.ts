import { describe, expect, it } from "vitest";
import { tableSource } from "../../src/apps/table-source.js";
import { pageSql, tableMarkup } from "../../src/views/table-view.js";

describe("pageSql", () => {
  it("wraps the query so every page and order reads the whole result", () => {
    expect(pageSql("SELECT * FROM input1;  ", { offset: 50, limit: 25 })).toBe(
      "SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page LIMIT 25 OFFSET 50",
    );
    expect(
      pageSql("SELECT a FROM input1 -- the end", { offset: 0, limit: 25, sort: { column: 'a"b', descending: true } }),
    ).toBe(
      'SELECT * FROM (\nSELECT a FROM input1 -- the end\n) AS cairn_page ORDER BY "a""b" DESC NULLS LAST LIMIT 25 OFFSET 0',
    );
  });
});

describe("tableMarkup", () => {
  it("keeps markup in names, types and cells as text, and marks the sorted column", () => {
    const markup = tableMarkup({
      columns: [
        { name: "<b>x</b>", type: "VARCHAR" },
        { name: "n", type: "BIGINT" },
      ],
      rows: [{ "<b>x</b>": "<script>alert(1)</script>", n: null }],
      offset: 25,
      caption: "Rows <26>",
      captionId: "c",
      sortable: true,
      sort: { column: "n", descending: true },
    }).toString();
    expect(markup).not.toMatch(/<script>|<b>/);
    expect(markup).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(markup).toContain('<td class="num muted">26</td>');
    expect(markup).toContain('<td class="null">NULL</td>');
    expect(markup).toContain('aria-sort="descending"');
    expect(markup).toContain('aria-label="n, BIGINT: sort ascending"');
  });
});

describe("tableSource", () => {
  const reply = { columns: [{ name: "a", type: "BIGINT" }], rows: [{ a: 1 }], row_count: 40, truncated: true };

  it("pages a query by its own SQL, inputs and parameters, never saving again", () => {
    const source = tableSource(
      "query",
      { inputs: ["t"], sql: "SELECT ? AS a", parameters: [1], save_as: "x" },
      JSON.stringify(reply),
    );
    expect(source?.page?.({ offset: 25, limit: 25 })).toEqual({
      inputs: ["t"],
      parameters: [1],
      sql: "SELECT * FROM (\nSELECT ? AS a\n) AS cairn_page LIMIT 25 OFFSET 25",
    });
  });

  it("pages a saved version by its id, and finds a snippet's query reply in its value", () => {
    const saved = { ...reply, saved: { artifact_id: "ws_1", name: "t", version: 2 } };
    const source = tableSource(undefined, { code: "…" }, JSON.stringify({ ok: true, value: saved }));
    expect(source?.title).toBe("t v2");
    expect(source?.page?.({ offset: 0, limit: 25 })).toMatchObject({ inputs: ["ws_1"], allow_historical: true });
    expect(tableSource("execute_code", {}, JSON.stringify({ ok: true, value: reply }))?.page).toBeUndefined();
  });

  it("finds no table in other replies", () => {
    expect(tableSource("execute_code", {}, JSON.stringify({ ok: true, value: 2 }))).toBeUndefined();
    expect(tableSource("query", {}, "not json (a spilled reply)")).toBeUndefined();
    expect(tableSource("query", {}, undefined)).toBeUndefined();
  });
});
