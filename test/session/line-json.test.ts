// The line-oriented layout of spilled JSON: the same value always, records on their own lines, and text that is not
// exactly one JSON object or array left alone (a reply that only looks like JSON is never rewritten).
import { describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ArtifactStore } from "../../src/session/artifact-store.js";
import { lineOrientedJson } from "../../src/session/line-json.js";
import { spillDetailed } from "../../src/session/spill.js";

/** A deterministic family of JSON values: nesting, escapes, unicode, numbers of every form, empty containers. */
function values(): unknown[] {
  const strings = ["", "plain", 'quo"te', "back\\slash", "line\nbreak", "tab\t", "\u0001ctl", "é ü 中文 😀", "\u2028"];
  const numbers = [0, -0, 1, -1, 1.5, 1e21, -2.5e-7, Number.MAX_SAFE_INTEGER];
  const leaves = [...strings, ...numbers, true, false, null, [], {}];
  const out: unknown[] = [leaves, Object.fromEntries(leaves.map((v, i) => [`k${i}`, v]))];
  const rows = Array.from({ length: 50 }, (_, i) => ({ id: i, s: strings[i % strings.length], n: numbers[i % 8] }));
  out.push(rows, { rows, total: 50, nested: { deeper: { rows, tags: ["a", "b"] } } });
  out.push({ "": "empty key", 'k"ey': { "a,b": "[not]{a}:container" } });
  out.push(Array.from({ length: 20 }, (_, i) => Array.from({ length: i * 10 }, (_, j) => j)));
  out.push([{ big: "x".repeat(5000) }, { small: 1 }]);
  return out;
}

describe("lineOrientedJson", () => {
  it.each(values().map((v, i) => [i, v] as const))("keeps value %i exactly, compact or indented input", (_, value) => {
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 3)]) {
      const laid = lineOrientedJson(text);
      expect(laid).toBeDefined();
      expect(JSON.parse(laid as string)).toEqual(JSON.parse(text));
    }
  });

  it("puts each element of a big array on its own line, and keeps a top-level object's members on the first line", () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ id: i, name: `row ${i}`, pad: "p".repeat(20) }));
    const laid = lineOrientedJson(JSON.stringify({ ok: true, value: rows, stats: { ms: 3 } })) as string;
    const lines = laid.split("\n");
    expect(lines[0]).toBe('{"ok":true,"value":[');
    expect(lines.slice(1, 11).map((line) => JSON.parse(line.trim().replace(/,$/, "")))).toEqual(rows);
    expect(lines.at(-1)).toBe('],"stats":{"ms":3}}');
  });

  it("keeps short containers on one line and breaks a record only when it is very long", () => {
    expect(lineOrientedJson('{"a":[1,2,3],"b":{"c":1}}')).toBe('{"a":[1,2,3],"b":{"c":1}}');
    const long = { text: "t".repeat(3000), list: Array.from({ length: 40 }, (_, i) => `item ${i}`) };
    const laid = lineOrientedJson(JSON.stringify([long, { id: 1 }])) as string;
    expect(laid.split("\n")).toContain('      "item 7",');
    expect(laid.split("\n")).toContain('  {"id":1}');
  });

  it("lays a tree out one node a line: a node's own fields on the line it opens, its children below (issue 31)", () => {
    const leaf = (i: number) => ({ sku: `S${i}`, name: `Granite Mug ${i}`, price: i + 0.99, tags: ["home", "mug"] });
    const node = (name: string, depth: number): unknown =>
      depth === 0
        ? { name, kind: "shelf", products: Array.from({ length: 6 }, (_, i) => leaf(i)) }
        : { name, kind: "aisle", children: [0, 1, 2].map((k) => node(`${name}.${k}`, depth - 1)) };
    const tree = [node("a", 3), node("b", 3)];
    const laid = lineOrientedJson(JSON.stringify({ ok: true, value: tree })) as string;
    const lines = laid.split("\n");
    expect(lines.slice(0, 6)).toEqual([
      '{"ok":true,"value":[',
      '  {"name":"a","kind":"aisle","children":[',
      '    {"name":"a.0","kind":"aisle","children":[',
      '      {"name":"a.0.0","kind":"aisle","children":[',
      '        {"name":"a.0.0.0","kind":"shelf","products":[',
      `          ${JSON.stringify(leaf(0))},`,
    ]);
    // Every line that names a node holds that node's own fields; every product is one whole line.
    expect(lines.filter((l) => l.includes('"name":"a.1.2"'))).toEqual([
      '      {"name":"a.1.2","kind":"aisle","children":[',
    ]);
    expect(
      lines
        .filter((l) => l.includes("Granite Mug 4"))
        .every((l) => l.trim().replace(/,$/, "") === JSON.stringify(leaf(4))),
    ).toBe(true);
    expect(JSON.stringify(JSON.parse(laid))).toBe(JSON.stringify({ ok: true, value: tree }));
  });

  it("keeps member order when a record's small members come after its records", () => {
    const value = { items: Array.from({ length: 30 }, (_, i) => ({ id: i })), total: 30, note: "after" };
    const laid = lineOrientedJson(JSON.stringify([value, value])) as string;
    expect(Object.keys(JSON.parse(laid)[0])).toEqual(["items", "total", "note"]);
    expect(laid.split("\n")).toContain('  ],"total":30,"note":"after"},');
  });

  it.each([
    "",
    "   ",
    "1",
    '"text"',
    "null",
    "{",
    "[1,]",
    '{"a" 1}',
    '{"a":1,}',
    "[01]",
    "[1.]",
    "[-]",
    '["\u0001"]',
    '["\\x"]',
    '["\\u12"]',
    "[tru]",
    "{} {}",
    "[1] x",
    "{'a':1}",
    "[NaN]",
    "plain text [with] {brackets}",
  ])("leaves %j alone: not exactly one JSON object or array", (text) => {
    expect(lineOrientedJson(text)).toBeUndefined();
  });

  it("handles nesting deeper than any recursion would, and strings of tens of megabytes", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(lineOrientedJson(deep)).toBeDefined();
    const big = JSON.stringify({ ok: true, value: "q".repeat(20_000_000) });
    expect(lineOrientedJson(big)).toBe(big);
  });
});

describe("spill of a JSON reply", () => {
  const config = ConfigSchema.parse({});
  const output = { ...config.output, view_chars: 2000, head_chars: 600, tail_chars: 600 };

  it("saves the line-oriented copy and cuts the view from it, offsets and counts included", async () => {
    const store = new ArtifactStore(config.artifacts, output);
    try {
      const reply = JSON.stringify({ ok: true, value: Array.from({ length: 200 }, (_, i) => ({ id: i, v: "x" })) });
      const { text, saved } = await spillDetailed(reply, output, store);
      const copy = (await store.read(saved?.handle as string, { allowDisabled: true })).toString("utf8");
      expect(JSON.parse(copy)).toEqual(JSON.parse(reply));
      expect(copy.split("\n")[1]).toBe('  {"id":0,"v":"x"},');
      expect(text.startsWith(copy.slice(0, 600))).toBe(true);
      expect(text).toContain(`[... ${(copy.length - 1200).toLocaleString("en-US")} chars omitted ...]`);
      expect(text).toContain(`[Full output: ${copy.length.toLocaleString("en-US")} chars saved as ${saved?.handle}`);
      // Text that is not JSON spills as it is.
      const plain = `not json ${"z".repeat(3000)}`;
      const other = await spillDetailed(plain, output, store);
      expect((await store.read(other.saved?.handle as string, { allowDisabled: true })).toString("utf8")).toBe(plain);
    } finally {
      await store.close();
    }
  });
});
