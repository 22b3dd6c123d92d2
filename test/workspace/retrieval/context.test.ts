// context on a real workspace over TypeScript's lib files: citations are the source's exact bytes, ranking puts the
// declaration asked for first, indexing goes step by step after a save (pending, then complete) and in the
// background, superseded and deleted versions leave the index, and the reply fits its budget with whole chunks.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { createFsBlobStore } from "../../../src/workspace/blobs/fs-blob-store.js";
import { createSqliteCatalog } from "../../../src/workspace/catalog/sqlite-catalog.js";
import { type ContextResult, contextOf } from "../../../src/workspace/retrieval/context.js";
import { contextBudget } from "../../../src/workspace/retrieval/context-budget.js";
import { ChunkIndexer } from "../../../src/workspace/retrieval/context-index.js";
import { openWorkspace, type Workspace } from "../../../src/workspace/workspace.js";
import { caught as failure } from "../../helpers/caught.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

const LIB = join(import.meta.dirname, "../../../node_modules/typescript/lib");
const FILES = ["lib.es5.d.ts", "lib.dom.d.ts", "lib.es2015.collection.d.ts", "lib.es2017.string.d.ts"];
const root = mkdtempSync(join(tmpdir(), "cairn-context-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet = createLogger("workspace", () => {});
let counter = 0;
const fresh = (background = false) =>
  openWorkspace(join(root, `w${counter++}`), { logger: quiet, chunkInBackground: background });

/** Every chunk is the source's bytes at its range, decoded. */
function expectExact(reply: ContextResult, sources: Map<string, Buffer>): void {
  for (const chunk of reply.chunks) {
    const source = sources.get(chunk.artifact_id) as Buffer;
    expect(source, chunk.name).toBeDefined();
    expect(chunk.text).toBe(source.subarray(chunk.start, chunk.end).toString("utf8"));
    expect(Buffer.byteLength(chunk.text)).toBe(chunk.end - chunk.start);
  }
}

describe("context over TypeScript's lib files", () => {
  let ws: Workspace;
  const sources = new Map<string, Buffer>();
  const NOTE = "Grüße aus Köln: the €uro note 𝄞\r\nsecond line about the harbor\r\n\r\nthird paragraph, harbor again\n";
  beforeAll(async () => {
    ws = await fresh();
    for (const file of FILES) {
      const meta = await ws.import({ path: join(LIB, file), name: `ts/${file}` });
      sources.set(meta.artifact_id, readFileSync(join(LIB, file)));
    }
    const note = await ws.save({ name: "notes/koeln", content: NOTE });
    sources.set(note.artifact_id, Buffer.from(NOTE, "utf8"));
  }, 60_000);
  afterAll(() => ws.close());

  it("cites immutable ids, names, versions and byte ranges whose bytes are the chunk's text", async () => {
    const first = await ws.context({ query: "harbor Köln €uro" });
    expect(first.index_complete).toBe(true);
    expect(first.chunks[0]).toMatchObject({ name: "notes/koeln", version: 1, start: 0 });
    expectExact(first, sources);
    for (const query of ["interface Array length", "addEventListener listener options", "WeakMap", "string"]) {
      const reply = await ws.context({ query, limit: 20 });
      expect(reply.chunks.length).toBeGreaterThan(0);
      expect(reply.chunks.every((c) => c.artifact_id.startsWith("ws_"))).toBe(true);
      expectExact(reply, sources);
    }
  });

  it("ranks the declaration a query names first", async () => {
    const cases: [string, string][] = [
      ["encodeURIComponent", "declare function encodeURIComponent("],
      ["parseFloat", "declare function parseFloat("],
      ["WeakMap delete has", "interface WeakMap<K extends WeakKey, V>"],
      ["padStart padEnd string", "padEnd(maxLength: number"],
      ["getContext canvas 2d", "HTMLCanvasElement.getContext()"],
      ["JSON stringify replacer space", "interface JSON {"],
    ];
    for (const [query, expected] of cases) {
      const reply = await ws.context({ query, limit: 3 });
      expect(reply.chunks[0]?.text, query).toContain(expected);
    }
  });

  it("says when more chunks matched than it returns, and ranks within refs only", async () => {
    const few = await ws.context({ query: "interface", limit: 2 });
    expect(few).toMatchObject({ truncated: true, complete: false, index_complete: true, pending: [] });
    expect(few.chunks).toHaveLength(2);
    const scoped = await ws.context({ query: "interface", refs: ["ts/lib.es2017.string.d.ts"], limit: 20 });
    expect(new Set(scoped.chunks.map((c) => c.name))).toEqual(new Set(["ts/lib.es2017.string.d.ts"]));
    expect(scoped).toMatchObject({ truncated: false, complete: true });
    const none = await ws.context({ query: "zzyzx quuxplumbus" });
    expect(none).toMatchObject({ chunks: [], complete: true, truncated: false });
  });

  it("gives fewer whole chunks when the budget cannot hold them all, and refuses a budget too small for any", async () => {
    const roomy = await ws.context({ query: "addEventListener listener", limit: 10 });
    expect(roomy.chunks).toHaveLength(10);
    const limit = Buffer.byteLength(JSON.stringify({ ...roomy, chunks: roomy.chunks.slice(0, 3) })) + 10;
    const tight = await ws.context({ query: "addEventListener listener", limit: 10 }, { budget: contextBudget(limit) });
    expect(Buffer.byteLength(JSON.stringify(tight))).toBeLessThanOrEqual(limit);
    expect(tight.chunks).toEqual(roomy.chunks.slice(0, 3));
    expect(tight).toMatchObject({ truncated: true, complete: false });
    const error = await failure(ws.context({ query: "addEventListener" }, { budget: contextBudget(20) }));
    // An impossible budget is TOO_LARGE, like every reply budget (decision 0193).
    expect(error.code).toBe("TOO_LARGE");
  });

  it("refuses what it cannot rank, naming what to pass instead", async () => {
    const old = await ws.save({ name: "notes/moving", content: "first words" });
    await ws.save({ name: "notes/moving", content: "second words", expected_version: 1 });
    const superseded = await failure(ws.context({ query: "words", refs: [old.artifact_id] }));
    expect(superseded.code).toBe("INVALID_ARGUMENT");
    expect(superseded.message).toContain('pass the name "notes/moving"');
    await ws.save({ name: "data/bytes", content: new Uint8Array([0, 1, 2, 255]) });
    expect((await failure(ws.context({ query: "x", refs: ["data/bytes"] }))).message).toMatch(/binary/);
    expect((await failure(ws.context({ query: "x", refs: ["nope"] }))).code).toBe("NOT_FOUND");
    expect((await failure(ws.context({ query: " ... " }))).code).toBe("INVALID_ARGUMENT");
    expect((await failure(ws.context({ query: "x", limit: 21 }))).code).toBe("INVALID_ARGUMENT");
    expect((await failure(ws.context({ query: "x".repeat(1001) }))).code).toBe("TOO_LARGE");
  });
});

describe("incremental indexing", () => {
  const dom = readFileSync(join(LIB, "lib.dom.d.ts"));
  /** A word found only in the last 32 KiB of lib.dom.d.ts: it ranks once the index reaches the end. */
  const late = (() => {
    const head = dom.subarray(0, dom.length - 32 * 1024).toString("utf8");
    const words =
      dom
        .subarray(dom.length - 32 * 1024)
        .toString("utf8")
        .match(/[A-Za-z]{8,}/g) ?? [];
    const word = words.find((w) => !head.includes(w));
    if (word === undefined) throw new Error("lib.dom.d.ts has no word of its own near its end");
    return word;
  })();

  it("indexes a saved version step by step: pending first, complete at the end, the save never waiting", async () => {
    const ws = await fresh();
    const meta = await ws.import({ path: join(LIB, "lib.dom.d.ts"), name: "ts/dom" });
    const before = await ws.context({ query: late }, { indexBytes: 0 });
    expect(before).toMatchObject({ chunks: [], index_complete: false, complete: false });
    expect(before.pending).toEqual([
      { artifact_id: meta.artifact_id, name: "ts/dom", version: 1, indexed_bytes: 0, bytes: dom.length },
    ]);
    const seen: number[] = [];
    let reply = before;
    for (let calls = 0; !reply.index_complete; calls++) {
      expect(calls).toBeLessThan(20);
      reply = await ws.context({ query: late }, { indexBytes: 256 * 1024 });
      if (!reply.index_complete) {
        seen.push(reply.pending[0]?.indexed_bytes as number);
        expect(reply.chunks).toEqual([]);
      }
    }
    expect(seen.length).toBeGreaterThan(3);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(reply).toMatchObject({ index_complete: true, complete: true, pending: [] });
    expect(reply.chunks[0]?.text).toContain(late);
    expect(reply.chunks[0]?.start).toBeGreaterThan(dom.length - 40 * 1024);
    expectExact(reply, new Map([[meta.artifact_id, dom]]));
    await ws.close();
  });

  it("indexes in the background after a save", async () => {
    const ws = await fresh(true);
    await ws.save({ name: "notes/bg", content: "lighthouse keeper's log" });
    await ws.chunksIndexed();
    expect(await ws.context({ query: "lighthouse" }, { indexBytes: 0 })).toMatchObject({
      index_complete: true,
      chunks: [{ name: "notes/bg", text: "lighthouse keeper's log" }],
    });
    await ws.close();
  });

  it("drops a superseded or deleted version from the index", async () => {
    const dir = join(root, `w${counter++}`);
    const ws = await openWorkspace(dir, { logger: quiet, chunkInBackground: false });
    const v1 = await ws.save({ name: "notes/a", content: "zebra crossing\n".repeat(400) });
    expect((await ws.context({ query: "zebra" })).chunks[0]).toMatchObject({ artifact_id: v1.artifact_id });
    const v2 = await ws.save({ name: "notes/a", content: "giraffe", expected_version: 1 });
    expect(await ws.context({ query: "zebra" })).toMatchObject({ chunks: [], complete: true });
    expect((await ws.context({ query: "giraffe" })).chunks).toEqual([
      expect.objectContaining({ artifact_id: v2.artifact_id, version: 2 }),
    ]);
    await ws.save({ name: "notes/b", content: "okapi" });
    await ws.context({ query: "okapi" });
    await ws.delete({ ref: "notes/b", expected_version: 1 });
    expect(await ws.context({ query: "okapi" })).toMatchObject({ chunks: [], complete: true });
    await ws.close();
    const db = new Database(join(dir, "catalog.db"), { readonly: true });
    const left = db.prepare("SELECT DISTINCT version_id FROM chunks").pluck().all();
    expect(left).toEqual([v2.artifact_id]);
    db.close();
  });

  it("lists a version whose bytes stop being UTF-8 as skipped, with what was indexed before", async () => {
    const ws = await fresh();
    const good = Buffer.from("clean line of prose about otters\n".repeat(100));
    const bad = Buffer.concat([good, Buffer.from([0xff, 0xfe]), Buffer.from(" otters after the break\n")]);
    const meta = await ws.save({ name: "notes/broken", content: new Uint8Array(bad), media_type: "text/plain" });
    const reply = await ws.context({ query: "otters", limit: 20 });
    expect(reply).toMatchObject({ index_complete: true, complete: false, pending: [] });
    expect(reply.skipped).toEqual([
      {
        artifact_id: meta.artifact_id,
        name: "notes/broken",
        version: 1,
        // The first chunk ends after the last whole line within 2 KiB; the second holds the bad bytes.
        offset: Math.floor(2048 / 33) * 33,
        reason: expect.stringMatching(/not valid UTF-8/),
      },
    ]);
    expect(reply.chunks.map((c) => [c.start, c.end])).toEqual([[0, 2046]]);
    expectExact(reply, new Map([[meta.artifact_id, bad]]));
    await ws.close();
  });

  it("indexes a version only up to the index's size limit, and says so", async () => {
    const dir = join(root, `w${counter++}`);
    const ws = await openWorkspace(dir, { logger: quiet, chunkInBackground: false });
    const text = "harbor seal sighting\n".repeat(1000);
    const meta = await ws.save({ name: "notes/long", content: text });
    await ws.close();
    const catalog = await createSqliteCatalog(join(dir, "catalog.db"));
    const blobs = await createFsBlobStore(join(dir, "blobs"));
    const indexer = new ChunkIndexer(catalog, blobs, { background: false, versionBytes: 5000, log: quiet });
    const reply = await contextOf({ catalog, blobs, indexer }, { query: "seal", limit: 20 });
    expect(reply.skipped).toEqual([expect.objectContaining({ artifact_id: meta.artifact_id })]);
    const offset = reply.skipped?.[0]?.offset as number;
    expect(offset).toBeLessThanOrEqual(5000);
    expect(reply.skipped?.[0]?.reason).toContain("first 5000 bytes");
    expect(reply.chunks.at(-1)?.end).toBe(offset);
    await indexer.stop();
    await catalog.close();
  });
});

describe("a file changed on disk", () => {
  it("keeps indexing the others when one version's bytes cannot be read", async () => {
    const dir = join(root, `w${counter++}`);
    const ws = await openWorkspace(dir, { logger: quiet, chunkInBackground: false });
    const broken = await ws.save({ name: "notes/x", content: "puffin colony\n" });
    await ws.save({ name: "notes/y", content: "puffin burrow\n" });
    const [record] = await ws.snapshot([broken.artifact_id], { current: false }).then((s) => s.refs);
    const sha = record?.sha256 as string;
    const path = join(dir, "blobs", "sha256", sha.slice(0, 2), sha.slice(2));
    chmodSync(path, 0o600);
    writeFileSync(path, "tampered text\n"); // the same size: only the hash tells
    const reply = await ws.context({ query: "puffin" });
    expect(reply.chunks.map((c) => c.name)).toEqual(["notes/y"]);
    expect(reply.skipped).toEqual([
      expect.objectContaining({ name: "notes/x", offset: 0, reason: expect.stringMatching(/CORRUPT/) }),
    ]);
    await ws.close();
  });
});
