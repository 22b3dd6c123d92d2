// Saved snippets in process with the real app (QuickJS executor, SQLite workspace): the declaration checked at save
// time, execute_code {saved} and run_saved running the current or a pinned version with checked inputs, the caller's
// limits and role holding inside saved code, nesting bounded, and search_tools / describe_tools listing them.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { MAX_SAVED_DEPTH } from "../../src/codemode/saved-runtime.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import type { Session } from "../../src/session/session.js";
import { caught } from "../helpers/caught.js";

let dir: string;
let app: App;
let session: Session;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-saved-"));
  app = createApp(
    {
      config: ConfigSchema.parse({ sandbox: { timeout_ms: 4000, memory_mb: 32, max_tool_calls: 40 } }),
      configPath: null,
      workspaceDir: join(dir, "ws"),
    },
    { logger: createLogger("test", () => {}) },
  );
  session = app.newSession("saved-tests");
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: operation answers are free-form JSON in tests
type Json = any;

/** Calls an operation as its MCP tool would: the tool's own schema first, then the handler (role check included). */
async function call(name: string, args: Record<string, unknown>, as: Session = session): Promise<Json> {
  const operation = app.operations.find((o) => o.name === name);
  if (!operation) throw new Error(`no operation ${name}`);
  const parsed = operation.input.safeParse(args);
  if (!parsed.success) throw new Error(`schema: ${parsed.error.message}`);
  return operation.handler(parsed.data, { services: app.services, session: as, surface: "tool" });
}

async function run(input: Record<string, unknown>, as: Session = session): Promise<Json> {
  return JSON.parse((await app.runner.run(as, input)).text);
}

const ADD_SCHEMA = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" }, label: { type: "string", enum: ["sum", "total"] } },
  required: ["a", "b"],
  additionalProperties: false,
};

function saveSnippet(name: string, content: string, extra: Record<string, unknown> = {}) {
  return call("save", {
    name,
    kind: "code",
    content,
    description: `test snippet ${name}`,
    input_schema: { type: "object", properties: {} },
    ...extra,
  });
}

describe("saving a snippet", () => {
  it("stores the declaration with the version, shown by inspect", async () => {
    const saved = await saveSnippet("calc/add", "return inputs.a + inputs.b", {
      description: "Adds two numbers a and b",
      input_schema: ADD_SCHEMA,
    });
    expect(saved).toMatchObject({ name: "calc/add", version: 1, kind: "code" });
    const inspected = await call("inspect", { ref: "calc/add", full: true });
    expect(inspected.snippet).toEqual({ description: "Adds two numbers a and b", input_schema: ADD_SCHEMA });
    expect(inspected.excerpt).toBe("return inputs.a + inputs.b");
  });

  it("refuses code that does not transpile, naming its line, and writes nothing", async () => {
    const error = await caught(saveSnippet("broken/syntax", "const a = 1;\nconst b = ;\nreturn a"));
    expect(error.code).toBe("SYNTAX");
    expect(error.message).toMatch(/^the snippet is not saved: syntax error at line 2/);
    await expect(call("inspect", { ref: "broken/syntax" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("refuses an input schema that is not a usable JSON Schema, listing every problem", async () => {
    const error = await caught(
      saveSnippet("broken/schema", "return 1", {
        input_schema: { type: "object", properties: { a: { type: "strin" } }, required: "a" },
      }),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toMatch(/^input_schema is not a usable JSON Schema: /);
    expect((error.data?.problems as string[] | undefined)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(error.message).toContain("/properties/a/type");
    expect(error.message).toContain("/required");
  });

  it("refuses a schema whose root is not an object, one pointing outside itself, and one nested too deep", async () => {
    const notObject = await caught(saveSnippet("broken/root", "return 1", { input_schema: { type: "array" } }));
    expect(notObject.message).toContain('"type": "object"');
    const external = await caught(
      saveSnippet("broken/ref", "return 1", {
        input_schema: { type: "object", properties: { a: { $ref: "https://example.com/a.json" } } },
      }),
    );
    expect(external.message).toContain("points outside the schema");
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 40; i++) deep = { type: "object", properties: { x: deep } };
    const nested = await caught(saveSnippet("broken/deep", "return 1", { input_schema: deep }));
    expect(nested.message).toContain("nests deeper than 32 levels");
  });

  it("bounds the schema's size and the description's length", async () => {
    const properties = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [`field_${i}`, { type: "string" }]));
    const big = await caught(saveSnippet("broken/big", "return 1", { input_schema: { type: "object", properties } }));
    expect(big.code).toBe("TOO_LARGE");
    expect(big.message).toMatch(/input_schema is \d+ bytes of JSON, over the 16384-byte limit/);
    const long = await caught(saveSnippet("broken/long", "return 1", { description: "x".repeat(2001) }));
    expect(long.code).toBe("TOO_LARGE");
    expect(long.message).toMatch(/^description is 2001 characters, more than 2000/);
  });

  it("needs both description and input_schema, kind code and text content", async () => {
    const noSchema = await caught(call("save", { name: "broken/half", kind: "code", content: "1", description: "d" }));
    expect(noSchema.message).toContain("needs input_schema");
    const note = await caught(saveSnippet("broken/note", "1", { kind: "note" }));
    expect(note.message).toContain('kind "code", not "note"');
  });

  it("has no field through which a snippet could carry limits of its own", async () => {
    const operation = app.operations.find((o) => o.name === "save");
    for (const field of ["timeout_ms", "memory_mb", "max_tool_calls", "grants"]) {
      const parsed = operation?.input.safeParse({
        name: "broken/limits",
        kind: "code",
        content: "1",
        description: "d",
        input_schema: { type: "object" },
        [field]: 1_000_000,
      });
      expect(parsed?.success, field).toBe(false);
    }
  });
});

describe("execute_code {saved}", () => {
  it("runs the current version with its inputs and says which version ran", async () => {
    const reply = await run({ saved: "calc/add", inputs: { a: 2, b: 3 } });
    const [record] = await (await app.workspace()).lookup(["calc/add"]);
    expect(reply).toMatchObject({
      ok: true,
      value: 5,
      saved: { name: "calc/add", artifact_id: record?.artifact_id, version: 1 },
    });
  });

  it("runs version 2 once saved, and version 1 when pinned by its ws_ id", async () => {
    const v1 = await call("inspect", { ref: "calc/mul" }).catch(() => undefined);
    expect(v1).toBeUndefined();
    const first = await saveSnippet("calc/mul", "return inputs.a * inputs.b", { input_schema: ADD_SCHEMA });
    const second = await saveSnippet("calc/mul", "return inputs.a * inputs.b * 10", {
      input_schema: ADD_SCHEMA,
      expected_version: 1,
    });
    expect(second.version).toBe(2);
    expect(await run({ saved: "calc/mul", inputs: { a: 2, b: 3 } })).toMatchObject({
      value: 60,
      saved: { version: 2, artifact_id: second.artifact_id },
    });
    expect(await run({ saved: first.artifact_id, inputs: { a: 2, b: 3 } })).toMatchObject({
      value: 6,
      saved: { version: 1, artifact_id: first.artifact_id },
    });
    expect(await run({ saved: "saved:calc/mul", inputs: { a: 1, b: 1 } })).toMatchObject({ value: 10 });
  });

  it("refuses code and saved together, and neither", async () => {
    const both = await caught(app.runner.run(session, { code: "1", saved: "calc/add" }));
    expect(both.code).toBe("INVALID_ARGUMENT");
    expect(both.message).toMatch(/^pass code or saved, not both/);
    const neither = await caught(app.runner.run(session, { inputs: {} }));
    expect(neither.message).toMatch(/^pass code \(a snippet\) or saved/);
  });

  it("refuses inputs that do not match the schema, listing every problem, before anything runs", async () => {
    const error = await caught(
      app.runner.run(session, { saved: "calc/add", inputs: { a: "two", label: "avg", extra: true } }),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
    const problems = error.data?.problems as string[];
    expect(problems).toEqual(
      expect.arrayContaining([
        '(root): missing required property "b"',
        '(root): unknown property "extra"',
        "/a: must be number (got string)",
        '/label: must be one of "sum", "total" (got "avg")',
      ]),
    );
    expect(error.message).toContain('describe_tools(["saved:calc/add"])');
  });

  it("answers NOT_FOUND for a name that holds nothing and refuses code saved without a declaration", async () => {
    expect((await caught(app.runner.run(session, { saved: "calc/none" }))).code).toBe("NOT_FOUND");
    await call("save", { name: "plain/code", kind: "code", content: "return 1" });
    const plain = await caught(app.runner.run(session, { saved: "plain/code" }));
    expect(plain.code).toBe("INVALID_ARGUMENT");
    expect(plain.message).toContain("not a saved snippet");
  });
});

describe("run_saved inside a snippet", () => {
  it("runs a saved snippet with its own inputs, leaves the caller's alone, and lists the versions that ran", async () => {
    const reply = await run({
      code: "const sum = await run_saved('calc/add', {a: inputs.x, b: 1});\nconst product = await run_saved('calc/mul', {a: 2, b: 2});\nreturn {sum, product, mine: inputs}",
      inputs: { x: 41 },
    });
    expect(reply).toMatchObject({ ok: true, value: { sum: 42, product: 40, mine: { x: 41 } } });
    expect(reply.run_saved.map((r: Json) => [r.name, r.version])).toEqual([
      ["calc/add", 1],
      ["calc/mul", 2],
    ]);
    expect(reply.stats.tool_calls).toBe(2);
  });

  it("lets a snippet catch a saved snippet's refusal of bad inputs", async () => {
    const reply = await run({
      code: "try { await run_saved('calc/add', {a: 1}) } catch (e) { return [e.name, e.code, e.message] }",
    });
    expect(reply.value[1]).toBe("INVALID_ARGUMENT");
    expect(reply.value[2]).toContain('missing required property "b"');
  });

  it("names the saved snippet, its version and its line when its code throws", async () => {
    await saveSnippet("broken/throws", "const x = inputs.x;\n\nreturn x.y.z;");
    const reply = await run({ code: "return await run_saved('broken/throws', {})" });
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatchObject({ name: "TypeError", code: "RUNTIME" });
    expect(reply.error.message).toMatch(/^saved snippet "broken\/throws" v1, line 3: /);
    expect(reply.error.line).toBeUndefined();
  });

  it("nests saved snippets, and several at once are one level, not several", async () => {
    await saveSnippet(
      "calc/sum3",
      "const parts = await Promise.all([1, 2, 3].map((n) => run_saved('calc/add', {a: n, b: 0})));\nreturn parts.reduce((s, n) => s + n, 0)",
    );
    await saveSnippet("calc/outer", "return (await run_saved('calc/sum3', {})) * 2");
    const reply = await run({ code: "return await run_saved('calc/outer', {})" });
    expect(reply).toMatchObject({ ok: true, value: 12 });
    expect(reply.run_saved.map((r: Json) => r.name).sort()).toEqual(["calc/add", "calc/outer", "calc/sum3"]);
  });

  it(`stops recursion at ${MAX_SAVED_DEPTH} levels with TOO_MANY_CALLS that says why`, async () => {
    await saveSnippet("loop/self", "return 1 + (await run_saved('loop/self', {}))");
    const reply = await run({ saved: "loop/self" });
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe("TOO_MANY_CALLS");
    expect(reply.error.message).toContain(`nest saved snippets ${MAX_SAVED_DEPTH + 1} deep, past the limit of 8`);
    expect(reply.error.message).toContain("needs a base case");
    // Named once, not once a level.
    expect(reply.error.message.match(/saved snippet "loop\/self"/g)).toHaveLength(1);
    const bounded = await run({
      code: "let depth = 0; try { await run_saved('loop/self', {}) } catch (e) { return e.data }",
    });
    expect(bounded.value).toEqual({ depth: MAX_SAVED_DEPTH + 1, max: MAX_SAVED_DEPTH });
  });

  it("refuses call_tool with a saved snippet's name, pointing to run_saved", async () => {
    const reply = await run({ code: "return await call_tool('saved:calc/add', {a: 1, b: 2})" });
    expect(reply.error.code).toBe("INVALID_ARGUMENT");
    expect(reply.error.message).toContain('run_saved("calc/add", inputs)');
  });
});

describe("a saved snippet has the caller's limits and grants", () => {
  it("is stopped at the caller's deadline when it loops forever", async () => {
    await saveSnippet("bomb/loop", "while (true) {}");
    const direct = await run({ saved: "bomb/loop", timeout_ms: 500 });
    expect(direct.error.code).toBe("TIMEOUT");
    expect(direct.error.message).toContain("500 ms deadline");
    const nested = await run({ code: "await run_saved('bomb/loop', {}); return 'never'", timeout_ms: 700 });
    expect(nested.error.code).toBe("TIMEOUT");
    expect(nested.error.message).toContain("700 ms deadline");
  });

  it("hits the caller's memory limit when it allocates", async () => {
    await saveSnippet("bomb/memory", "const keep = []; for (;;) keep.push('x'.repeat(1 << 20) + keep.length);");
    const reply = await run({ code: "try { await run_saved('bomb/memory', {}) } catch (e) { return 'caught' }" });
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe("MEMORY_LIMIT");
  });

  it("spends the caller's host-call budget", async () => {
    await saveSnippet("bomb/calls", "for (let i = 0; i < 1000; i++) await save_result(i); return 'done'");
    const reply = await run({
      code: "for (let i = 0; i < 5; i++) await save_result(i);\nreturn await run_saved('bomb/calls', {})",
    });
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe("TOO_MANY_CALLS");
    // 40 calls made between them, the 41st refused.
    expect(reply.stats.tool_calls).toBe(41);
  });

  it("has the caller's role: a reader's run of a snippet that writes is refused as the reader's own call", async () => {
    await saveSnippet("writes/note", "return await workspace.save({name: 'written/by-snippet', content: 'x'})");
    const reader = app.newSession("reader", { name: "viewer", role: "reader" });
    const reply = await run({ saved: "writes/note" }, reader);
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe("NOT_ALLOWED");
    expect(reply.error.message).toContain("identity viewer is a reader");
    const nested = await run({ code: "return await run_saved('writes/note', {})" }, reader);
    expect(nested.error.code).toBe("NOT_ALLOWED");
    expect(nested.error.message).toMatch(/^saved snippet "writes\/note" v1.*: save needs the writer role/);
    expect((await run({ saved: "writes/note" })).ok).toBe(true);
  });
});

describe("search_tools and describe_tools", () => {
  it("find saved snippets by their description, ranked by the same search as every capability", async () => {
    const found = await call("search_tools", { query: "adds two numbers" });
    expect(found.results[0]).toEqual({ name: "saved:calc/add", description: "Adds two numbers a and b" });
  });

  it("describe a saved snippet as a run_saved declaration with its inputs' type and an example", async () => {
    const described = await call("describe_tools", { names: ["saved:calc/add"] });
    const [tool] = described.tools;
    expect(tool.name).toBe("saved:calc/add");
    expect(tool.declaration).toContain("interface CalcAddInputs {");
    expect(tool.declaration).toContain('  label?: ("sum" | "total")');
    expect(tool.declaration).toContain(
      'declare function run_saved(name: "calc/add", inputs: CalcAddInputs): Promise<unknown>;',
    );
    expect(tool.declaration).toContain("Adds two numbers a and b");
    expect(tool.declaration).toMatch(/Saved snippet v1 \(ws_[A-Za-z0-9_-]+\)/);
    expect(tool.example).toBe('await run_saved("calc/add", { a: 0, b: 0 })');
  });

  it("follow a new version's declaration, and drop a deleted name", async () => {
    await saveSnippet("geo/distance", "return 0", { description: "Great circle distance between airports" });
    expect((await call("search_tools", { query: "great circle distance" })).results[0].name).toBe("saved:geo/distance");
    await saveSnippet("geo/distance", "return 1", {
      description: "Haversine kilometres between coordinates",
      expected_version: 1,
    });
    const renamed = await call("search_tools", { query: "haversine kilometres" });
    expect(renamed.results[0]).toEqual({
      name: "saved:geo/distance",
      description: "Haversine kilometres between coordinates",
    });
    const described = await call("describe_tools", { names: ["saved:geo/distance"] });
    expect(described.tools[0].declaration).toContain("Saved snippet v2");
    await call("delete", { ref: "geo/distance", expected_version: 2 });
    const gone = await call("search_tools", { query: "haversine kilometres great circle distance", limit: 50 });
    expect(gone.results.map((r: Json) => r.name)).not.toContain("saved:geo/distance");
    await expect(call("describe_tools", { names: ["saved:geo/distance"] })).rejects.toMatchObject({
      code: "TOOL_NOT_FOUND",
    });
    expect((await caught(app.runner.run(session, { saved: "geo/distance" }))).code).toBe("NOT_FOUND");
  });
});
