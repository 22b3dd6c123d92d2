// context through the built server with the official MCP client over stdio, a real upstream server configured:
// TypeScript's lib files imported, the index reaching them all across calls, ranked chunks whose ranges are the
// files' exact bytes, a superseded version gone from the ranking, and the same answers from a snippet and the CLI.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const LIB = join(import.meta.dirname, "../../node_modules/typescript/lib");
const FILES = ["lib.es5.d.ts", "lib.dom.d.ts", "lib.webworker.d.ts", "lib.es2015.promise.d.ts"];

let c: Connected;
const sources = new Map<string, Buffer>();
beforeAll(async () => {
  c = await connect(
    `
[workspace]
import_roots = ["${LIB}"]

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`,
    [],
  );
  for (const file of FILES) {
    const imported = await c.call("import", { path: join(LIB, file), name: `ts/${file}` });
    expect(imported.isError, imported.text).toBe(false);
    sources.set(imported.json.artifact_id, readFileSync(join(LIB, file)));
  }
}, 60_000);
afterAll(() => c.close());

/** Calls context until the index covers every version, as a model told index_complete: false would. */
async function indexed(args: Record<string, unknown>) {
  for (let calls = 0; calls < 20; calls++) {
    const reply = await c.call("context", args);
    expect(reply.isError, reply.text).toBe(false);
    if (reply.json.index_complete) return reply;
    expect(reply.json.complete).toBe(false);
    expect(reply.json.pending.length).toBeGreaterThan(0);
  }
  throw new Error("the index never completed");
}

describe("context over MCP", () => {
  it("is a tool of the agent profile", async () => {
    const tools = (await c.client.listTools()).tools;
    const context = tools.find((t) => t.name === "context");
    expect(context?.description).toContain("BM25");
    expect(Object.keys((context?.inputSchema.properties ?? {}) as object)).toEqual([
      "query",
      "refs",
      "limit",
      "max_tokens",
    ]);
  });

  it("ranks chunks of 4 MB of lib files, each cited by id and the exact bytes of its range", async () => {
    const reply = await indexed({ query: "encodeURIComponent uri component", limit: 20 });
    expect(reply.json).toMatchObject({ index_complete: true, pending: [] });
    expect(Buffer.byteLength(reply.text)).toBeLessThanOrEqual(32 * 1024);
    const chunks = reply.json.chunks as { artifact_id: string; start: number; end: number; text: string }[];
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks[0]?.text).toContain("declare function encodeURIComponent(");
    for (const chunk of chunks) {
      const source = sources.get(chunk.artifact_id) as Buffer;
      expect(chunk.text).toBe(source.subarray(chunk.start, chunk.end).toString("utf8"));
    }
    const dom = await c.call("context", { query: "HTMLCanvasElement getContext", refs: ["ts/lib.dom.d.ts"], limit: 3 });
    expect(dom.json.chunks[0].text).toContain("HTMLCanvasElement.getContext()");
    expect(dom.json.chunks.every((x: { name: string }) => x.name === "ts/lib.dom.d.ts")).toBe(true);
  });

  it("ranks what a snippet saved from an upstream server, and drops the version it supersedes", async () => {
    const saved = await c.run(`
      const echoed = await everything.echo({ message: "the lighthouse keeper logs the tide" });
      return (await workspace.save({ name: "notes/echo", content: echoed })).artifact_id;
    `);
    expect(saved.json.ok, saved.text).toBe(true);
    const first = await indexed({ query: "lighthouse keeper" });
    expect(first.json.chunks).toEqual([
      expect.objectContaining({ artifact_id: saved.json.value, name: "notes/echo", start: 0 }),
    ]);
    expect(first.json.chunks[0].text).toContain("the lighthouse keeper logs the tide");
    await c.call("save", { name: "notes/echo", content: "now about puffins", expected_version: 1 });
    const after = await indexed({ query: "lighthouse keeper" });
    expect(after.json).toMatchObject({ chunks: [], complete: true, truncated: false });
    const stale = await c.call("context", { query: "lighthouse", refs: [saved.json.value] });
    expect(stale.json.error.code).toBe("INVALID_ARGUMENT");
    expect(stale.json.error.message).toContain('pass the name "notes/echo"');
  });

  it("says when chunks were left out, and refuses a query without a word", async () => {
    const few = await indexed({ query: "interface", limit: 2 });
    expect(few.json).toMatchObject({ truncated: true, complete: false });
    expect(few.json.chunks).toHaveLength(2);
    const none = await c.call("context", { query: "?!" });
    expect(none.json.error.code).toBe("INVALID_ARGUMENT");
  });

  it("answers workspace.context in a snippet and cairn context on the command line", async () => {
    const run = await c.run(`
      const r = await workspace.context({ query: "parseFloat", limit: 1 });
      return { name: r.chunks[0].name, start: r.chunks[0].start, found: r.chunks[0].text.includes("declare function parseFloat(") };
    `);
    expect(run.json.value).toMatchObject({ name: "ts/lib.es5.d.ts", found: true });
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, "--workspace", join(c.dir, "ws"), ...args], { encoding: "utf8" });
    const json = cli(["context", "parseFloat", "--limit", "1", "--json"]);
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).chunks[0]).toMatchObject({ name: "ts/lib.es5.d.ts", start: run.json.value.start });
    const human = cli(["context", "string number", "--refs", "ts/lib.es5.d.ts", "--limit", "1"]);
    expect(human.stdout).toMatch(/^== ts\/lib\.es5\.d\.ts v1 bytes \d+-\d+\n/);
    expect(human.stdout).toContain("[more chunks matched: raise --limit]");
  });

  it("keeps its best whole chunks within max_tokens, counted on the result the client receives", async () => {
    const full = await indexed({ query: "addEventListener HTMLElement", limit: 20 });
    for (const max of [120, 400, 1500]) {
      const result = await c.client.callTool({
        name: "context",
        arguments: { query: "addEventListener HTMLElement", limit: 20, max_tokens: max },
      });
      // What the host hands the model: the result without the resultType and _meta a 2026-07-28 result adds.
      const { resultType: _resultType, _meta: _envelope, ...received } = result as Record<string, unknown>;
      expect(countTokens(JSON.stringify(received))).toBeLessThanOrEqual(max);
      const reply = JSON.parse((result.content as { text: string }[])[0]?.text ?? "{}");
      expect(reply.chunks.length).toBeLessThan(full.json.chunks.length);
      expect(reply.truncated || reply.complete === false).toBe(true);
      // The chunks kept are the best ones, in order.
      expect(reply.chunks.map((ch: { start: number }) => ch.start)).toEqual(
        full.json.chunks.slice(0, reply.chunks.length).map((ch: { start: number }) => ch.start),
      );
    }
  });
});
