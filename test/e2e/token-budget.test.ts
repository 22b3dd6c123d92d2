// max_tokens through the built server with the official MCP client over stdio, a real upstream server configured:
// every budgeted reply of find, inspect, resume, retrieve and sync is re-counted as the client receives it (the text,
// wrapped as the CallToolResult the server sent, which the test also reads off the wire) with the configured encoding,
// for families of budgets from below the least reply up to generous, on lib.dom.d.ts (1.8 MB) and on many small
// artifacts made from the upstream server's replies, under o200k_base and cl100k_base. What a budget leaves out is
// listed; an impossible budget is TOO_LARGE naming the least that works, and that least works. Then the CLI.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyChanges } from "../helpers/line-edits.js";
import { connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const DOM = join(import.meta.dirname, "../../node_modules/typescript/lib/lib.dom.d.ts");
const ES5 = join(import.meta.dirname, "../../node_modules/typescript/lib/lib.es5.d.ts");
const PLAIN = { disallowedSpecial: new Set<string>() };

const ENCODINGS = {
  o200k_base: (text: string) => o200k(text, PLAIN),
  cl100k_base: (text: string) => cl100k(text, PLAIN),
} as const;
type Encoding = keyof typeof ENCODINGS;

const BUDGETS = [1, 10, 40, 80, 120, 160, 240, 400, 640, 1000, 1600, 2500, 4000, 6400, 10_000, 131_072];

interface Budgeted {
  isError: boolean;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  json: any;
  /** Tokens of the CallToolResult JSON, as the client received it. */
  tokens: number;
}

/** A connected server whose replies are also read off the wire, as the JSON of each result. */
async function server(encoding: Encoding, toml = "") {
  const c = await connect(
    `[output]\ntokenizer = "${encoding}"\n${toml}\n[workspace]\nimport_roots = ["${dirname(DOM)}"]\n[servers.everything]\ncommand = "${process.execPath}"\nargs = ["${everything}", "stdio"]\n`,
    ["--profile", "full"],
  );
  let wire = "";
  const onmessage = c.transport.onmessage;
  c.transport.onmessage = (message) => {
    if ("result" in message) {
      // The 2026-07-28 encoding adds resultType and _meta (serverInfo) to every result: protocol, not what a host
      // hands the model. The rest is compared whole.
      const { resultType: _resultType, _meta: _envelope, ...result } = message.result as Record<string, unknown>;
      wire = JSON.stringify(result);
    }
    onmessage?.(message);
  };
  const count = ENCODINGS[encoding];
  const call = async (tool: string, args: Record<string, unknown>): Promise<Budgeted> => {
    const reply = await c.call(tool, args);
    // What the client received, wrapped as the CallToolResult: the same JSON the server sent.
    const result = JSON.stringify({ content: [{ type: "text", text: reply.text }] });
    if (!reply.isError) expect(wire).toBe(result);
    return { ...reply, tokens: count(result) };
  };
  return { c, call, count };
}

type Server = Awaited<ReturnType<typeof server>>;

/**
 * Calls `tool` under every budget of the family: each success is within its budget, each failure is TOO_LARGE naming
 * a least budget above it that works; once a budget works every larger one does. Returns the successes.
 */
async function family(s: Server, tool: string, args: Record<string, unknown>): Promise<Map<number, Budgeted>> {
  const ok = new Map<number, Budgeted>();
  for (const max_tokens of BUDGETS) {
    const reply = await s.call(tool, { ...args, max_tokens });
    if (reply.isError) {
      expect(ok.size, `${tool} failed at ${max_tokens} after succeeding at a smaller budget`).toBe(0);
      expect(reply.json.error.code, reply.text).toBe("TOO_LARGE");
      expect(reply.json.error.message).toContain("raise max_tokens");
      const { needed } = reply.json.error.data;
      expect(needed).toBeGreaterThan(max_tokens);
      const least = await s.call(tool, { ...args, max_tokens: needed });
      expect(least.isError, least.text).toBe(false);
      expect(least.tokens).toBeLessThanOrEqual(needed);
      continue;
    }
    expect(reply.tokens, `${tool} at ${max_tokens}`).toBeLessThanOrEqual(max_tokens);
    ok.set(max_tokens, reply);
  }
  expect(ok.has(131_072)).toBe(true);
  return ok;
}

describe.each(["o200k_base", "cl100k_base"] as const)("max_tokens over MCP, %s", (encoding) => {
  let s: Server;
  let notes: string[];
  beforeAll(async () => {
    s = await server(encoding);
    const imported = await s.call("import", { path: DOM, name: "docs/dom" });
    expect(imported.isError, imported.text).toBe(false);
    // Many small artifacts, each from an upstream server's reply.
    const made = await s.c.run(`
      const ids = [];
      for (let i = 0; i < 40; i++) {
        const echoed = await call_tool("everything.echo", { message: "budget note " + i + " " + "detail ".repeat(20 + 3 * i) });
        const text = typeof echoed === "string" ? echoed : JSON.stringify(echoed);
        ids.push((await workspace.save({ name: "notes/n" + i, content: text, summary: "note " + i })).artifact_id);
      }
      await workspace.save({
        name: "handoff/cp",
        checkpoint: { objective: "finish the budget work", verified: "counts re-checked", next_step: "publish" },
        dependencies: ids.slice(0, 16),
      });
      return ids;
    `);
    expect(made.json.ok, made.text).toBe(true);
    notes = made.json.value;
  });
  afterAll(() => s.c.close());

  it("find keeps the best results that fit and counts the rest", async () => {
    const all = await s.call("find", { text: "budget note", limit: 100 });
    const total = all.json.results.length;
    expect(total).toBeGreaterThanOrEqual(40);
    const fits = await family(s, "find", { text: "budget note", limit: 100 });
    for (const reply of fits.values()) {
      const kept = reply.json.results.length;
      expect(reply.json.results).toEqual(all.json.results.slice(0, kept));
      if (kept < total) expect(reply.json.omitted).toEqual({ results: total - kept, next_step: expect.any(String) });
      else expect(reply.json.omitted).toBeUndefined();
    }
    expect([...fits.values()].some((r) => r.json.omitted !== undefined && r.json.results.length > 0)).toBe(true);
  });

  it("inspect shortens a page of lib.dom.d.ts and many artifacts' pages, counting the bytes left out", async () => {
    const dom = readFileSync(DOM);
    const one = { ref: "docs/dom", offset: 1_000_000, excerpt_bytes: 8192 };
    const whole = (await s.call("inspect", one)).json;
    for (const reply of (await family(s, "inspect", one)).values()) {
      const page = reply.json;
      const end = page.next_offset;
      expect(page.excerpt).toBe(dom.subarray(page.offset, end).toString("utf8"));
      expect(page.omitted?.excerpt_bytes ?? 0).toBe(whole.next_offset - end);
    }
    const many = { refs: notes.slice(0, 16), excerpt_bytes: 2048 };
    const wholeMany = (await s.call("inspect", many)).json;
    const full = wholeMany.artifacts.reduce(
      (sum: number, a: { excerpt: string }) => sum + Buffer.byteLength(a.excerpt),
      0,
    );
    for (const reply of (await family(s, "inspect", many)).values()) {
      const sent = reply.json.artifacts.reduce(
        (sum: number, a: { excerpt: string }) => sum + Buffer.byteLength(a.excerpt),
        0,
      );
      expect(reply.json.artifacts).toHaveLength(16);
      expect(reply.json.omitted?.excerpt_bytes ?? 0).toBe(full - sent);
    }
  });

  it("resume leaves previews, then artifacts, out and lists them", async () => {
    const whole = (await s.call("resume", { text: "handoff/cp" })).json;
    const shapes = new Set<string>();
    for (const reply of (await family(s, "resume", { text: "handoff/cp" })).values()) {
      const r = reply.json;
      expect(r.checkpoint).toEqual(whole.checkpoint);
      const previews = r.artifacts.filter((a: { excerpt?: string }) => a.excerpt !== undefined).length;
      if (r.omitted === undefined) {
        expect(r).toEqual(whole);
        shapes.add("whole");
      } else {
        expect(r.omitted.previews).toBe(16 - previews);
        expect(r.omitted.artifacts ?? 0).toBe(16 - r.artifacts.length);
        shapes.add(r.artifacts.length < 16 ? "artifacts" : "previews");
      }
    }
    expect(shapes).toContain("whole");
    expect(shapes).toContain("previews");
  });

  it("retrieve shortens or defers reads and keeps fewer hits, never past the budget", async () => {
    const args = {
      queries: [
        { text: "addEventListener", context_bytes: 256, limit: 20 },
        { text: "budget note", limit: 20 },
      ],
      reads: [
        { ref: "docs/dom", offset: 100_000, bytes: 16_384 },
        { ref: notes[3], bytes: 500 },
      ],
    };
    const fits = await family(s, "retrieve", args);
    const dom = readFileSync(DOM);
    let shortened = 0;
    for (const reply of fits.values()) {
      const r = reply.json;
      const read = r.reads[0];
      if (read.deferred) {
        expect(read).toMatchObject({ span: null, offset: 100_000, next_offset: 100_000 });
        continue;
      }
      const span = r.spans[read.span];
      expect(dom.subarray(span.start, span.end).toString("utf8")).toBe(span.text);
      if (read.end < 100_000 + 16_384) shortened++;
      expect(read.next_offset).toBe(read.end);
    }
    expect(shortened).toBeGreaterThan(0);
  });

  it("sync pages lib.dom.d.ts and sends a delta within the budget; pages rebuild the text", async () => {
    for (const reply of (await family(s, "sync", { ref: "docs/dom" })).values()) {
      expect(reply.json).toMatchObject({ mode: "full", offset: 0 });
      expect(reply.json.next_offset).toBe(Buffer.byteLength(reply.json.excerpt));
    }
    const es5 = readFileSync(ES5, "utf8").slice(0, 60_000);
    const v1 = (await s.call("save", { name: "docs/es5", content: es5 })).json;
    let page = (await s.call("sync", { ref: "docs/es5", max_tokens: 2000 })).json;
    let text = "";
    for (let pages = 0; ; pages++) {
      text += page.excerpt;
      if (page.next_offset === null) break;
      const next = await s.call("sync", { ref: page.artifact_id, offset: page.next_offset, max_tokens: 2000 });
      expect(next.tokens).toBeLessThanOrEqual(2000);
      page = next.json;
      expect(pages).toBeLessThan(100);
    }
    expect(text).toBe(es5);
    const edited = es5.replace("interface Array<T>", "interface Array<T> /* edited */");
    await s.call("save", { name: "docs/es5", content: edited, expected_version: 1 });
    const delta = await s.call("sync", { ref: "docs/es5", base: v1.artifact_id, max_tokens: 400 });
    expect(delta.tokens).toBeLessThanOrEqual(400);
    expect(delta.json.mode).toBe("delta");
    expect(applyChanges(es5, delta.json.changes)).toBe(edited);
  });

  it("counts a snippet's value as its compact JSON", async () => {
    const r = await s.c.run(`
      const all = await workspace.find({ text: "budget note", limit: 100 });
      const reply = await workspace.find({ text: "budget note", limit: 100, max_tokens: 500 });
      return { json: JSON.stringify(reply), kept: reply.results.length, omitted: reply.omitted, all: all.results.length };
    `);
    expect(r.json.ok, r.text).toBe(true);
    expect(s.count(r.json.value.json)).toBeLessThanOrEqual(500);
    expect(r.json.value.kept + r.json.value.omitted.results).toBe(r.json.value.all);
  });

  it("refuses a max_tokens out of range", async () => {
    for (const max_tokens of [0, 131_073, 1.5]) {
      const reply = await s.call("find", { text: "x", max_tokens });
      expect(reply.isError).toBe(true);
      expect(reply.json.error.code).toBe("INVALID_ARGUMENT");
      expect(reply.text).toContain("max_tokens");
    }
  });
});

describe("max_tokens and the spill threshold", () => {
  let s: Server;
  beforeAll(async () => {
    s = await server("o200k_base", "view_chars = 3000\nhead_chars = 1000\ntail_chars = 1000");
    await s.call("import", { path: DOM, name: "docs/dom" });
  });
  afterAll(() => s.c.close());

  it("keeps a budgeted reply within view_chars, so it is sent whole rather than spilled", async () => {
    const reply = await s.call("inspect", { ref: "docs/dom", excerpt_bytes: 8192, max_tokens: 131_072 });
    expect(reply.isError).toBe(false);
    expect(reply.text.length).toBeLessThanOrEqual(3000);
    expect(reply.json.omitted.excerpt_bytes).toBeGreaterThan(0);
    const unbudgeted = await s.call("inspect", { ref: "docs/dom", excerpt_bytes: 8192 });
    expect(unbudgeted.text).toContain("[Full output:");
  });
});

describe("cairn --max-tokens", () => {
  let dir: string;
  let s: Server;
  beforeAll(async () => {
    s = await server("o200k_base");
    dir = s.c.dir;
    await s.call("import", { path: DOM, name: "docs/dom" });
    for (let i = 0; i < 12; i++) await s.call("save", { name: `notes/n${i}`, content: `budget note ${i}` });
    writeFileSync(join(dir, "cl100k.toml"), '[output]\ntokenizer = "cl100k_base"\n');
  });
  afterAll(() => s.c.close());

  const run = (args: string[]) =>
    spawnSync(process.execPath, [MAIN, ...args, "--workspace", join(dir, "ws")], { encoding: "utf8" });

  it("counts the printed JSON and its final newline, or the printed summary", () => {
    for (const [config, count, budgets] of [
      [[], ENCODINGS.o200k_base, [400, 3000]],
      [["--config", join(dir, "cl100k.toml")], ENCODINGS.cl100k_base, [1000]],
    ] as const) {
      for (const budget of budgets) {
        for (const command of [
          ["inspect", "docs/dom", "--excerpt-bytes", "8192"],
          ["sync", "docs/dom"],
          ["find", "budget note", "--limit", "100"],
          ["retrieve", "--reads", JSON.stringify({ ref: "docs/dom", offset: 5000, bytes: 20_000 })],
        ]) {
          for (const json of [["--json"], []]) {
            const out = run([...command, ...config, "--max-tokens", String(budget), ...json]);
            expect(out.status, `${command.join(" ")} ${budget}: ${out.stdout}${out.stderr}`).toBe(0);
            expect(out.stdout.endsWith("\n")).toBe(true);
            expect(count(out.stdout), `${command.join(" ")} ${budget} ${json}`).toBeLessThanOrEqual(budget);
          }
        }
      }
    }
    // Dozens of CLI processes one after another: a minute each on a loaded machine is not a failure of the budgets.
  }, 240_000);

  it("lists what it left out, and fails an impossible budget with the least that works", () => {
    const human = run(["find", "budget note", "--limit", "100", "--max-tokens", "120"]);
    expect(human.stdout).toMatch(/\[omitted to fit --max-tokens: \d+ results; raise max_tokens to see them\]\n$/);
    const bad = run(["inspect", "docs/dom", "--full", "--max-tokens", "30", "--json"]);
    expect(bad.status).toBe(1);
    const error = JSON.parse(bad.stdout).error;
    expect(error).toMatchObject({ code: "TOO_LARGE", data: { max_tokens: 30 } });
    const least = run(["inspect", "docs/dom", "--full", "--max-tokens", String(error.data.needed), "--json"]);
    expect(least.status).toBe(0);
    expect(ENCODINGS.o200k_base(least.stdout)).toBeLessThanOrEqual(error.data.needed);
  });
});
