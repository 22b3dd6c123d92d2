// Spilled replies kept one record per line, through the built server: grep over a spilled array returns the matching
// records (here from a real upstream server, server-memory), the view and the copy agree, and the copy reloads as JSON.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const memory = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const scratch = mkdtempSync(join(tmpdir(), "cairn-spill-lines-"));

let c: Connected;
beforeAll(async () => {
  c = await connect(
    `[servers.memory]\ncommand = "${process.execPath}"\nargs = ["${memory}"]\nenv = { MEMORY_FILE_PATH = "${join(scratch, "memory.json")}" }\n`,
  );
});
afterAll(async () => {
  await c.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** The handle, the copy's length and its path, from the pointer line of a spilled reply. */
function pointer(text: string): { handle: string; chars: number; path: string } {
  const match = /\[Full output: ([\d,]+) chars saved as (art_[\w-]+) \| \S+ \| (\/.+)\]$/.exec(text);
  expect(match, text.slice(-300)).not.toBeNull();
  const [, chars, handle, path] = match as RegExpExecArray;
  return { handle: handle as string, chars: Number(chars?.replace(/,/g, "")), path: path as string };
}

describe("spilled replies, one record per line", () => {
  it("greps a spilled array from an upstream server and gets the matching records, whole", async () => {
    const r = await c.run(`
      await memory.create_entities({ entities: Array.from({ length: 600 }, (_, i) => ({
        name: "station-" + String(i).padStart(4, "0"), entityType: "station",
        observations: ["reading " + (i * 37) % 1000, i === 421 ? "needle: valve stuck" : "nominal"] })) });
      const graph = await memory.read_graph({});
      return graph.entities;
    `);
    expect(r.isError, r.text.slice(0, 300)).toBe(false);
    const { handle, chars, path } = pointer(r.text);
    // The view is cut from the copy: its first line is the reply's, then one record a line.
    const lines = r.text.split("\n");
    expect(lines[0]).toBe('{"ok":true,"value":[');
    expect(JSON.parse((lines[1] as string).replace(/,$/, ""))).toMatchObject({ name: "station-0000" });
    expect(readFileSync(path, "utf8").length).toBe(chars);

    const found = await c.call("read_output", { handle, grep: "needle" });
    expect(found.json.matches).toHaveLength(1);
    const [match] = found.json.matches;
    expect(JSON.parse(match.text.trim().replace(/,$/, ""))).toEqual({
      name: "station-0421",
      entityType: "station",
      observations: ["reading 577", "needle: valve stuck"],
    });
    const many = await c.call("read_output", { handle, grep: '"station-00', length: 20_000 });
    expect(many.json.matches.map((m: { text: string }) => JSON.parse(m.text.trim().replace(/,$/, "")).name)).toEqual(
      Array.from({ length: 100 }, (_, i) => `station-${String(i).padStart(4, "0")}`),
    );

    // The copy is the same JSON: a later run reloads the reply.
    const reloaded = await c.run(
      "const reply = await load_artifact(inputs.h, { as: 'json' }); return [reply.ok, reply.value.length, reply.value[421].name]",
      { h: handle },
    );
    expect(reloaded.json.value).toEqual([true, 600, "station-0421"]);
    // And a window at the view's offsets reads the same text the view shows.
    const window = await c.call("read_output", { handle, offset: 0, length: 200 });
    expect(r.text.startsWith(window.json.text)).toBe(true);
  });

  it("lays out an object value with its own fields on the first line and its records one a line", async () => {
    const r = await c.run(`
      const items = Array.from({ length: 3000 }, (_, i) => ({ id: i, label: "item " + i, ok: i % 7 !== 0 }));
      return { total: items.length, failed: items.filter((x) => !x.ok).length, items };
    `);
    const { handle } = pointer(r.text);
    expect(r.text.split("\n").slice(0, 2)).toEqual([
      '{"ok":true,"value":{"total":3000,"failed":429,"items":[',
      '  {"id":0,"label":"item 0","ok":false},',
    ]);
    const found = await c.call("read_output", { handle, grep: '"label":"item 2024"' });
    expect(found.json.matches).toEqual([{ line: 2026, text: '  {"id":2024,"label":"item 2024","ok":true},' }]);
  });

  it("spills a nested tree one node a line: grep returns a product whole and a category with its own fields", async () => {
    // The catalog of issue 31: four levels of categories, six products on each shelf, returned whole by a snippet.
    const r = await c.run(`
      const words = ["Granite", "Maple", "Copper", "Linen"];
      let sku = 0;
      const node = (depth, path) => depth === 4
        ? Array.from({ length: 6 }, () => { const i = sku++; return { sku: "S" + i, name: words[i % 4] + " Mug " + i, price: 5 + (i % 90), tags: ["home"] }; })
        : Array.from({ length: 4 }, (_, k) => ({ name: path + k, kind: "category", [depth === 3 ? "products" : "children"]: node(depth + 1, path + k + ".") }));
      return node(0, "cat-");
    `);
    const { handle, path } = pointer(r.text);
    const product = await c.call("read_output", { handle, grep: '"Granite Mug 40"' });
    expect(product.json.matches.map((m: { text: string }) => JSON.parse(m.text.trim().replace(/,$/, "")))).toEqual([
      { sku: "S40", name: "Granite Mug 40", price: 45, tags: ["home"] },
    ]);
    const category = await c.call("read_output", { handle, grep: '"name":"cat-1.2"' });
    expect(category.json.matches.map((m: { text: string }) => m.text)).toEqual([
      '    {"name":"cat-1.2","kind":"category","children":[',
    ]);
    const copy = JSON.parse(readFileSync(path, "utf8"));
    expect(copy.value[1].children[2].name).toBe("cat-1.2");
  });

  it("keeps a string value on its one line, as before", async () => {
    const r = await c.run("return 'a'.repeat(30000) + 'b'.repeat(30000)");
    expect(r.text.startsWith('{"ok":true,"value":"aaaa')).toBe(true);
    const { handle } = pointer(r.text);
    expect((await c.call("read_output", { handle, offset: 20, length: 5 })).json.text).toBe("aaaaa");
  });
});
