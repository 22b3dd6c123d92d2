// search and retrieve through the built server and a real MCP client, over a real 1.8 MB text (TypeScript's
// lib.dom.d.ts) imported into the workspace: hits agree with a naive scan far past find's 64 KiB window, pages follow
// their cursor to the end, retrieve's reply stays within max_bytes, and the snippet and CLI surfaces answer the same.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";
import { naiveMatches } from "../workspace/retrieval/oracle.js";

const LIB_DOM = resolve(import.meta.dirname, "../../node_modules/typescript/lib/lib.dom.d.ts");
const text = readFileSync(LIB_DOM, "utf8");
const bytes = Buffer.from(text, "utf8");
const NOTE = "We draw on an htmlcanvaselement here.";

let c: Connected;
let id: string;
beforeAll(async () => {
  c = await connect(`[workspace]\nimport_roots = ["${dirname(LIB_DOM)}"]\n`);
  const imported = await c.call("import", { path: LIB_DOM, name: "ts/lib.dom" });
  expect(imported.isError).toBe(false);
  id = imported.json.artifact_id;
  await c.call("save", { name: "notes/canvas", content: NOTE });
}, 60_000);
afterAll(() => c.close());

describe("search over MCP", () => {
  it("lists search and retrieve in the agent profile", async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["search", "retrieve", "find", "inspect"]));
  });

  it("finds every match of a 1.8 MB document by following the cursor, as a naive scan does", async () => {
    expect(bytes.length).toBeGreaterThan(1_500_000);
    const needle = "HTMLCanvasElement";
    // Scope order is by name: notes/canvas before ts/lib.dom.
    const expected = [
      ...naiveMatches(NOTE, needle).map((m) => ({ name: "notes/canvas", ...m })),
      ...naiveMatches(text, needle).map((m) => ({ name: "ts/lib.dom", ...m })),
    ];
    expect(expected.at(-1)?.start).toBeGreaterThan(64 * 1024);
    const found: { name: string; start: number; end: number }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await c.call("search", {
        text: needle,
        limit: 20,
        context_bytes: 40,
        ...(cursor ? { cursor } : {}),
      });
      expect(page.isError, page.text).toBe(false);
      expect(Buffer.byteLength(JSON.stringify(page.json.hits))).toBeLessThanOrEqual(32 * 1024);
      for (const hit of page.json.hits) {
        // The snippet is the document's exact bytes at the byte range it names, and holds the match.
        const source = hit.name === "ts/lib.dom" ? bytes : Buffer.from(NOTE);
        expect(hit.snippet).toBe(source.subarray(hit.snippet_start, hit.snippet_end).toString("utf8"));
        expect(source.subarray(hit.start, hit.end).toString("latin1").toLowerCase()).toBe(needle.toLowerCase());
        found.push({ name: hit.name, start: hit.start, end: hit.end });
      }
      pages++;
      if (page.json.complete) break;
      cursor = page.json.cursor;
    }
    expect(pages).toBeGreaterThan(1);
    expect(found).toEqual(expected);
  });

  it("refuses a continuation after the versions searched changed, with STALE_CURSOR", async () => {
    const missing = await c.call("search", { text: "addEventListener", refs: ["ts/lib.dom", "notes/later"] });
    expect(missing.json.error.code).toBe("NOT_FOUND");
    await c.call("save", { name: "notes/later", content: "addEventListener in a note" });
    const page = await c.call("search", { text: "addEventListener", refs: ["notes/later", "ts/lib.dom"], limit: 1 });
    await c.call("save", { name: "notes/later", content: "changed", expected_version: 1 });
    const stale = await c.call("search", {
      text: "addEventListener",
      refs: ["notes/later", "ts/lib.dom"],
      cursor: page.json.cursor,
    });
    expect(stale.json.error.code).toBe("STALE_CURSOR");
  });
});

describe("retrieve over MCP", () => {
  it("answers queries and overlapping reads in one reply within max_bytes, text sent once", async () => {
    const maxBytes = 6000;
    const reply = await c.call("retrieve", {
      queries: [
        { text: "interface CanvasRenderingContext2D extends", refs: ["ts/lib.dom"], context_bytes: 64 },
        { text: "HTMLCanvasElement", refs: [id], limit: 3, context_bytes: 16 },
      ],
      reads: [
        { ref: "ts/lib.dom", offset: 1_000_000, bytes: 1000 },
        { ref: id, offset: 1_000_500, bytes: 1000 },
      ],
      max_bytes: maxBytes,
    });
    expect(reply.isError, reply.text).toBe(false);
    expect(Buffer.byteLength(reply.text)).toBeLessThanOrEqual(maxBytes);
    const r = reply.json;
    expect(r.artifacts.map((a: { artifact_id: string }) => a.artifact_id)).toEqual([id]);
    for (const span of r.spans) {
      expect(span.text).toBe(bytes.subarray(span.start, span.end).toString("utf8"));
    }
    const [interfaceHit] = r.queries[0].hits;
    expect(interfaceHit.start).toBe(naiveMatches(text, "interface CanvasRenderingContext2D extends")[0]?.start);
    expect(r.queries[0].complete).toBe(true);
    expect(r.queries[1].hits.map((h: { start: number }) => h.start)).toEqual(
      naiveMatches(text, "HTMLCanvasElement")
        .slice(0, 3)
        .map((m) => m.start),
    );
    expect(r.queries[1].cursor).toEqual(expect.any(String));
    // The two reads overlap: one span holds both when both fit; under this budget the second may be cut or deferred.
    const [first, second] = r.reads;
    expect(first.span).not.toBeNull();
    if (second.deferred) expect(second).toMatchObject({ span: null, offset: 1_000_500, next_offset: 1_000_500 });
    else expect(second.span).toBe(first.span);

    // A roomier budget holds everything; overlapping reads share one span.
    const roomy = await c.call("retrieve", {
      reads: [
        { ref: "ts/lib.dom", offset: 1_000_000, bytes: 1000 },
        { ref: id, offset: 1_000_500, bytes: 1000 },
      ],
    });
    expect(roomy.json.spans).toHaveLength(1);
    expect(roomy.json.spans[0]).toMatchObject({ start: 1_000_000, end: 1_001_500 });
    expect(roomy.json.reads.map((x: { span: number }) => x.span)).toEqual([0, 0]);
  });

  it("fails loudly when max_bytes leaves no room, and names a bad query field", async () => {
    const tiny = await c.call("retrieve", { reads: [{ ref: "ts/lib.dom", bytes: 100 }], max_bytes: 50 });
    expect(tiny.json.error.code).toBe("TOO_LARGE");
    const bad = await c.call("retrieve", { queries: [{ text: "x", limt: 3 }] });
    expect(bad.json.error.code).toBe("INVALID_ARGUMENT");
    expect(bad.json.error.message).toMatch(/limt/);
  });
});

describe("the other surfaces", () => {
  it("answers workspace.search and workspace.retrieve in a snippet", async () => {
    const run = await c.run(`
      const s = await workspace.search({ text: "HTMLCanvasElement", refs: ["ts/lib.dom"], limit: 3, context_bytes: 0 });
      const r = await workspace.retrieve({ reads: [{ ref: s.hits[0].artifact_id, offset: s.hits[0].start, bytes: 17 }] });
      return { starts: s.hits.map((h) => h.start), text: r.spans[0].text };
    `);
    expect(run.json.ok, run.text).toBe(true);
    expect(run.json.value).toEqual({
      starts: naiveMatches(text, "HTMLCanvasElement")
        .slice(0, 3)
        .map((m) => m.start),
      text: "HTMLCanvasElement",
    });
  });

  it("answers cairn search --json and cairn retrieve --json on the command line", () => {
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, "--workspace", join(c.dir, "ws"), ...args], { encoding: "utf8" });
    const search = cli(["search", "HTMLCanvasElement", "--refs", "ts/lib.dom", "--limit", "2", "--json"]);
    expect(search.status, search.stderr).toBe(0);
    expect(JSON.parse(search.stdout).hits.map((h: { start: number }) => h.start)).toEqual(
      naiveMatches(text, "HTMLCanvasElement")
        .slice(0, 2)
        .map((m) => m.start),
    );
    const human = cli(["search", "htmlcanvaselement", "--refs", "notes/canvas"]);
    expect(human.stdout).toContain("notes/canvas v1 bytes 14-31: We draw on an htmlcanvaselement here.");
    const retrieve = cli(["retrieve", "--reads", '{"ref":"notes/canvas","offset":3,"bytes":4}', "--json"]);
    expect(retrieve.status, retrieve.stderr).toBe(0);
    expect(JSON.parse(retrieve.stdout).spans[0].text).toBe("draw");
  });
});
