// Issue 27 through the built `cairn serve` (decision 0251): values cross every boundary exactly, from a real SDK
// upstream server, through save_result / load_result, workspace JSON artifacts and inputs; deep values answer their
// documented code at once, and the same server answers the next call.
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, ERAS } from "../helpers/mcp-client.js";

const fixture = resolve(import.meta.dirname, "../fixtures/servers/exact-values.mjs");

const SHAPES: [string, unknown][] = [
  ["a Buffer's JSON", { type: "Buffer", data: [1, 2] }],
  ["the old bytes tag", { __cairn_bytes__: 0 }],
  ["nested shapes", { a: [{ type: "Buffer", data: [] }, { b: { __cairn_bytes__: 0, x: 1 } }] }],
  ["shapes in an array", [{ type: "Buffer", data: [255] }, [{ __cairn_bytes__: 1 }]]],
];
/** What the snippet reports of a value: the value, and whether any part of it became bytes. */
const REPORT = `const report = (v) => {
  let bytes = false;
  const walk = (x) => { if (x instanceof Uint8Array) bytes = true; else if (x && typeof x === "object") Object.values(x).forEach(walk); };
  walk(v);
  return { v, bytes };
};`;

describe("cairn serve: exact values", () => {
  let cairn: Connected;
  beforeAll(async () => {
    cairn = await connect(`
[servers.exact]
command = "${process.execPath}"
args = ["${fixture}"]
`);
  });
  afterAll(() => cairn.close());

  it.each(SHAPES)("keeps %s JSON in an upstream reply's text and structuredContent", async (_name, shape) => {
    const r = await cairn.run(
      `${REPORT} const reply = await exact.reply({ json: ${JSON.stringify(JSON.stringify({ v: shape }))} });
       return [report(reply.structuredContent ?? reply), typeof reply]`,
    );
    expect(r.isError).toBe(false);
    const [report] = r.json.value;
    expect(report.bytes).toBe(false);
    expect(JSON.stringify(report.v)).toContain(JSON.stringify(shape));
  });

  it.each(SHAPES)("keeps %s JSON through save_result and load_result", async (_name, shape) => {
    const saved = await cairn.run(`return await save_result(${JSON.stringify(shape)})`);
    expect(saved.isError).toBe(false);
    const r = await cairn.run(`${REPORT} return report(await load_result(${JSON.stringify(saved.json.value)}))`);
    expect(r.json.value).toEqual({ v: shape, bytes: false });
  });

  it.each(SHAPES)("keeps %s JSON in a workspace JSON artifact read back", async (_name, shape) => {
    const name = `exact/${Math.random().toString(36).slice(2)}.json`;
    const r = await cairn.run(
      `${REPORT} await workspace.save({ name: ${JSON.stringify(name)}, content: ${JSON.stringify(JSON.stringify(shape))}, kind: "json" });
       return report(await workspace.read({ ref: ${JSON.stringify(name)}, as: "json" }))`,
    );
    expect(r.isError).toBe(false);
    expect(r.json.value).toEqual({ v: shape, bytes: false });
  });

  it.each(SHAPES)("keeps %s JSON in inputs", async (_name, shape) => {
    const r = await cairn.run(`${REPORT} return report(inputs.v)`, { v: shape });
    expect(r.json.value).toEqual({ v: shape, bytes: false });
  });

  it.each(ERAS)(
    'issue 27: keeps a "__proto__" key of inputs as a key, from a %s client',
    async (era) => {
      // A zod record rebuilt inputs by assignment: the key became the copy's prototype and left the inputs.
      const inputs = JSON.parse('{"__proto__":{"x":1},"a":{"__proto__":{"y":2}}}') as Record<string, unknown>;
      const client = await connect("", [], era);
      try {
        const r = await client.run(
          "return [Object.keys(inputs), JSON.stringify(inputs), String(inputs.x), String(Object.getPrototypeOf(inputs) === Object.prototype)]",
          inputs,
        );
        expect(r.json.value).toEqual([
          ["__proto__", "a"],
          '{"__proto__":{"x":1},"a":{"__proto__":{"y":2}}}',
          "undefined",
          "true",
        ]);
        // Not an object is still refused before anything runs.
        const refused = await client.call("execute_code", { code: "return 1", inputs: [1] });
        expect(refused.isError).toBe(true);
        expect(refused.text).toContain("inputs must be a JSON object");
      } finally {
        await client.close();
      }
    },
    60_000,
  );

  it("refuses bytes in save_result with NOT_JSON, instead of saving them as other JSON", async () => {
    const r = await cairn.run(
      "try { await save_result({ b: new Uint8Array(2) }) } catch (e) { return [e.name, e.code, e.message] }",
    );
    expect(r.json.value.slice(0, 2)).toEqual(["ResultStoreError", "NOT_JSON"]);
    expect(r.json.value[2]).toContain("argument 1.b of save_result is a Uint8Array");
  });

  it.each([
    [999, "ok"],
    [1000, "ok"],
    [1001, "NOT_JSON"],
    [10_000, "NOT_JSON"],
    [1_000_000, "NOT_JSON"],
  ])("answers an upstream reply %i levels deep with %s, and the server answers next", async (levels, code) => {
    const before = await cairn.run("return await exact.pid({})");
    // The snippet receives the reply's structuredContent, {deep: [...]}: one level over the arrays.
    const r = await cairn.run(
      `try { const v = await exact.deep({ levels: ${levels - 1} }); return "ok" } catch (e) { return e.code }`,
    );
    expect(r.isError).toBe(false);
    expect(r.json.value).toBe(code);
    const after = await cairn.run("return await exact.pid({})");
    expect(after.json.value).toBe(before.json.value);
  });

  it.each([
    [1000, "ok"],
    [1001, "NOT_JSON"],
    [10_000, "NOT_JSON"],
    [100_000, "NOT_JSON"],
  ])("answers a workspace JSON artifact %i levels deep with %s", async (levels, code) => {
    const name = `exact/deep-${levels}.json`;
    const saved = await cairn.call("save", { name, content: "[".repeat(levels) + "]".repeat(levels), kind: "json" });
    expect(saved.isError).toBe(false);
    const read = await cairn.run(
      `try { await workspace.read({ ref: ${JSON.stringify(name)}, as: "json" }); return "ok" } catch (e) { return e.code }`,
    );
    expect(read.json.value).toBe(code);
    expect((await cairn.run("return 40 + 2")).json.value).toBe(42);
  });

  it.each([
    [1000, "ok"],
    [1001, "NOT_JSON"],
    [10_000, "NOT_JSON"],
    [1_000_000, "NOT_JSON"],
  ])("answers an artifact of JSON %i levels deep loaded as JSON with %s", async (levels, code) => {
    const r = await cairn.run(
      `const h = await save_artifact("[".repeat(${levels}) + "]".repeat(${levels}), { media_type: "application/json" });
       try { await load_artifact(h, { as: "json" }); return "ok" } catch (e) { return e.code }`,
    );
    expect(r.json.value).toBe(code);
    expect((await cairn.run("return 40 + 2")).json.value).toBe(42);
  });

  it.each([
    [1000, false],
    [1001, true],
    // The test's own client cannot write much deeper: V8's JSON.stringify overflows its stack near 5,000 levels.
    [2000, true],
  ])("answers inputs %i levels deep with INVALID_ARGUMENT when past the limit", async (levels, refused) => {
    let v: unknown = 1;
    for (let i = 0; i < levels - 1; i++) v = [v];
    const r = await cairn.run("return 1", { v });
    if (refused) {
      expect(r.isError).toBe(true);
      expect(r.text).toContain("INVALID_ARGUMENT");
    } else expect(r.json.value).toBe(1);
    expect((await cairn.run("return 40 + 2")).json.value).toBe(42);
  });
});
