// import where the model is (decision 0280): the default profile lists it, snippets call workspace.import, both read
// only under the import roots of cairn.toml; a tool the profile leaves out answers how to enable it.
import { copyFileSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterEach, describe, expect, it } from "vitest";
import { type Connected, connect, ERAS } from "../helpers/mcp-client.js";

const data = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");

let c: Connected | undefined;
afterEach(async () => {
  await c?.close();
  c = undefined;
});

describe.each(ERAS)("import on the default profile, through a %s client", (era) => {
  it("brings CSV, Parquet and JSON in by a path relative to cairn.toml's folder, each with its kind", async () => {
    c = await connect("", [], era);
    copyFileSync(join(data, "airports.csv"), join(c.dir, "airports.csv"));
    copyFileSync(join(data, "flights-3m.parquet"), join(c.dir, "flights.parquet"));
    copyFileSync(join(data, "movies.json"), join(c.dir, "movies.json"));
    const kinds = [];
    for (const [path, name] of [
      ["airports.csv", "in/airports"],
      ["flights.parquet", "in/flights"],
      [join(c.dir, "movies.json"), "in/movies"],
    ]) {
      const r = await c.call("import", { path, name });
      expect(r.isError, r.text).toBe(false);
      kinds.push(r.json.kind);
    }
    expect(kinds).toEqual(["csv", "parquet", "json"]);
    const counted = await c.call("query", { inputs: ["in/airports"], sql: "SELECT count(*) AS n FROM input1" });
    expect(counted.json.rows).toEqual([{ n: 3376 }]);
  });

  it("brings an 8 MB CSV of 200,000 rows in with one call and counts every row, in under 300 tokens", async () => {
    c = await connect("", [], era);
    const lines = ["order_id,ordered_at,region,product,quantity,unit_price"];
    for (let i = 0; i < 200_000; i++) {
      const at = new Date(Date.UTC(2025, 0, 1) + i * 150_000).toISOString().slice(0, 19).replace("T", " ");
      const product = `P${String((i * 7919) % 5000).padStart(4, "0")}`;
      lines.push(
        `${i + 1},${at},${["north", "south", "east", "west"][i % 4]},${product},${1 + (i % 9)},${((i * 37) % 10000) / 100 + 1}`,
      );
    }
    writeFileSync(join(c.dir, "orders.csv"), `${lines.join("\n")}\n`);
    let tokens = 0;
    const counted = async (name: string, args: Record<string, unknown>) => {
      const r = await (c as Connected).call(name, args);
      tokens += countTokens(JSON.stringify({ name, arguments: args })) + countTokens(r.text);
      return r;
    };
    const imported = await counted("import", { path: "orders.csv", name: "data/orders" });
    expect(imported.json).toMatchObject({ kind: "csv", bytes: 9_190_750 });
    const q = await counted("query", {
      inputs: ["data/orders"],
      sql: "SELECT count(*) AS orders, count(DISTINCT order_id) AS ids, max(order_id) AS last FROM input1",
    });
    expect(q.json.rows).toEqual([{ orders: 200_000, ids: 200_000, last: 200_000 }]);
    expect(tokens).toBeLessThan(300);
  });

  it("imports from a snippet as workspace.import, under the same roots", async () => {
    c = await connect("", [], era);
    writeFileSync(join(c.dir, "sales.csv"), "region,amount\nnorth,10\nsouth,20\n");
    const r = await c.run(`
      const m = await workspace.import({ path: "sales.csv", name: "in/sales" });
      let refused;
      try { await workspace.import({ path: "/etc/passwd", name: "in/passwd" }); } catch (e) { refused = e.code; }
      return { kind: m.kind, refused };
    `);
    expect(r.json.value).toEqual({ kind: "csv", refused: "NOT_ALLOWED" });
  });

  it("refuses paths outside the roots, links out and Cairn's own workspace, and answers afterwards", async () => {
    c = await connect("", [], era);
    symlinkSync("/etc/passwd", join(c.dir, "passwd.csv"));
    for (const path of ["/etc/passwd", "../../etc/passwd", "passwd.csv", join(c.dir, "ws", "catalog.db")]) {
      const r = await c.call("import", { path, name: "in/x" });
      expect(r.json.error?.code, `${path}: ${r.text}`).toBe("NOT_ALLOWED");
      expect(r.text).toContain("import_roots");
    }
    expect((await c.call("list", {})).json.artifacts ?? []).toEqual([]);
    writeFileSync(join(c.dir, "ok.csv"), "a\n1\n");
    expect((await c.call("import", { path: "ok.csv", name: "in/ok" })).json.version).toBe(1);
  });

  it("refuses cairn.toml, hard links to the catalog and links out from snippets too, and answers afterwards", async () => {
    c = await connect(
      '[servers.api]\nurl = "http://127.0.0.1:9/mcp"\nheaders = { Authorization = "Bearer hunter2" }\n',
      [],
      era,
    );
    await c.call("list", {});
    linkSync(join(c.dir, "ws", "catalog.db"), join(c.dir, "catalog-copy.db"));
    linkSync(join(c.dir, "cairn.toml"), join(c.dir, "settings.txt"));
    symlinkSync("/proc/self/environ", join(c.dir, "env.csv"));
    symlinkSync("/dev/zero", join(c.dir, "zero.csv"));
    for (const path of ["cairn.toml", "catalog-copy.db", "settings.txt", "env.csv", "zero.csv"]) {
      const r = await c.call("import", { path, name: "in/x" });
      expect(r.json.error?.code, `${path}: ${r.text}`).toBe("NOT_ALLOWED");
      expect(r.text).not.toContain("hunter2");
    }
    const r = await c.run(`
      const codes = [];
      for (const path of ["cairn.toml", "catalog-copy.db", "settings.txt", "env.csv", "zero.csv", "/etc/passwd", "../ws/catalog.db"]) {
        try { await workspace.import({ path, name: "in/x" }); codes.push("imported " + path); } catch (e) { codes.push(e.code); }
        try { await call_tool("workspace.import", { path, name: "in/y" }); codes.push("imported " + path); } catch (e) { codes.push(e.code); }
      }
      return codes;
    `);
    expect(r.json.value, r.text).toEqual(Array(14).fill("NOT_ALLOWED"));
    expect(r.text).not.toContain("hunter2");
    expect((await c.call("list", {})).json.artifacts ?? []).toEqual([]);
    writeFileSync(join(c.dir, "ok.csv"), "a\n1\n");
    expect((await c.run('return (await workspace.import({ path: "ok.csv", name: "in/ok" })).version')).json.value).toBe(
      1,
    );
  });

  it("reads only the folders import_roots lists, relative to cairn.toml", async () => {
    c = await connect('[workspace]\nimport_roots = ["data"]\n', [], era);
    mkdirSync(join(c.dir, "data"));
    writeFileSync(join(c.dir, "data", "in.csv"), "a\n1\n");
    writeFileSync(join(c.dir, "beside.csv"), "a\n1\n");
    expect((await c.call("import", { path: "in.csv", name: "in/data" })).json.kind).toBe("csv");
    const beside = await c.call("import", { path: join(c.dir, "beside.csv"), name: "in/beside" });
    expect(beside.json.error.code).toBe("NOT_ALLOWED");
  });

  it("answers a call of a tool the profile leaves out with how to enable it", async () => {
    c = await connect("", [], era);
    const r = await c.call("delete", { ref: "in/x" });
    expect(r.json.error.code).toBe("TOOL_NOT_ENABLED");
    expect(r.json.error.message).toContain("--tools +delete");
    expect(r.json.error.message).toContain('profile = "full"');
    expect((await c.call("no_such_tool", {})).json.error.code).toBe("TOOL_NOT_FOUND");
  });
});
