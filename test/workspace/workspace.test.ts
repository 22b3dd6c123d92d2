// Behaviour of the Workspace API on a real SQLite catalog and real blob files in a temp dir.
// Crash and multi-process behaviour lives in processes.test.ts; hostile input in hostile-input.test.ts.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { caught as failure } from "../helpers/caught.js";

const root = mkdtempSync(join(tmpdir(), "cairn-ws-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
const quiet = createLogger("workspace", () => {});

async function fresh(options = {}): Promise<{ ws: Workspace; dir: string }> {
  const dir = join(root, `w${counter++}`);
  return { ws: await openWorkspace(dir, { logger: quiet, ...options }), dir };
}

function blobPath(dir: string, sha: string): string {
  return join(dir, "blobs", "sha256", sha.slice(0, 2), sha.slice(2));
}

describe("save and versions", () => {
  let ws: Workspace;
  beforeEach(async () => {
    ({ ws } = await fresh());
    return () => ws.close();
  });

  it("creates version 1 with a ws_ id and refuses an update without expected_version", async () => {
    const first = await ws.save({ name: "smoke/a", content: "hello smoke" });
    expect(first.artifact_id).toMatch(/^ws_[A-Za-z0-9_-]{32}$/);
    expect(first).toMatchObject({ name: "smoke/a", version: 1, kind: "note", media_type: "text/plain", bytes: 11 });
    expect(first.stale).toBe(false);
    expect(first.stale_inputs).toEqual([]);
    const conflict = await failure(ws.save({ name: "smoke/a", content: "again" }));
    expect(conflict.code).toBe("VERSION_CONFLICT");
    expect(conflict.message).toContain("version 1");
    expect(conflict.data).toMatchObject({ current_version: 1 });
    const second = await ws.save({ name: "smoke/a", content: "again", expected_version: 1 });
    expect(second.version).toBe(2);
  });

  it("refuses a stale expected_version and names the current version", async () => {
    await ws.save({ name: "n", content: "1" });
    await ws.save({ name: "n", content: "2", expected_version: 1 });
    const error = await failure(ws.save({ name: "n", content: "3", expected_version: 1 }));
    expect(error.code).toBe("VERSION_CONFLICT");
    expect(error.data).toMatchObject({ current_version: 2, expected_version: 1 });
  });

  it("never repeats a version number after a name is deleted and recreated", async () => {
    await ws.save({ name: "draft", content: "a" });
    await ws.save({ name: "draft", content: "b", expected_version: 1 });
    await ws.save({ name: "draft", content: "c", expected_version: 2 });
    await ws.delete({ ref: "draft", expected_version: 3 });
    const stale = await failure(ws.save({ name: "draft", content: "d", expected_version: 3 }));
    expect(stale.code).toBe("VERSION_CONFLICT");
    const recreated = await ws.save({ name: "draft", content: "d" });
    expect(recreated.version).toBe(4);
  });

  it("infers kind and media type from checkpoint, declared kind, file name and JSON content", async () => {
    expect((await ws.save({ name: "j", content: '{"a":1}' })).kind).toBe("json");
    expect(await ws.save({ name: "c", kind: "csv", content: "a,b\n1,2\n" })).toMatchObject({
      kind: "csv",
      media_type: "text/csv",
    });
    expect(await ws.save({ name: "p", content: "print(1)", filename: "x.py" })).toMatchObject({ kind: "code" });
    expect(await ws.save({ name: "m", content: "# T", media_type: "text/markdown" })).toMatchObject({
      kind: "document",
    });
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0]);
    expect(await ws.save({ name: "img", content: png })).toMatchObject({ kind: "file", media_type: "image/png" });
    expect(await ws.save({ name: "cp", checkpoint: { objective: "o" } })).toMatchObject({
      kind: "checkpoint",
      media_type: "application/json",
    });
  });

  it("stores identical content once", async () => {
    const a = await ws.save({ name: "x", content: "same bytes" });
    const b = await ws.save({ name: "y", content: "same bytes" });
    const full = (await ws.inspect({ refs: [a.artifact_id, b.artifact_id], full: true })) as {
      artifacts: { sha256: string }[];
    };
    expect(full.artifacts[0]?.sha256).toBe(full.artifacts[1]?.sha256);
  });

  it("refuses dependencies that do not exist, naming them", async () => {
    const error = await failure(ws.save({ name: "d", content: "x", dependencies: ["nope/missing"] }));
    expect(error.code).toBe("NOT_FOUND");
    expect(error.message).toContain("nope/missing");
    expect((await ws.find({ text: "d" })).results).toEqual([]);
  });
});

describe("staleness", () => {
  it("marks a derived artifact stale, transitively, when an input is superseded", async () => {
    const { ws } = await fresh();
    const input = await ws.save({ name: "data", content: "1" });
    const derived = await ws.save({ name: "derived", content: "2", dependencies: [input.artifact_id] });
    const top = await ws.save({ name: "top", content: "3", dependencies: ["derived"] });
    expect(top.dependencies).toEqual([derived.artifact_id]);
    expect(top.stale).toBe(false);
    await ws.save({ name: "data", content: "1b", expected_version: 1 });
    const now = (await ws.inspect({ refs: ["derived", "top"], excerpt_bytes: 0 })) as {
      artifacts: { stale: boolean; stale_inputs: unknown[] }[];
    };
    const expected = [{ artifact_id: input.artifact_id, name: "data", version: 1, current_version: 2 }];
    expect(now.artifacts[0]).toMatchObject({ stale: true, stale_inputs: expected });
    expect(now.artifacts[1]).toMatchObject({ stale: true, stale_inputs: expected });
    await ws.close();
  });
});

describe("find", () => {
  it("ranks name matches above body matches and returns only current versions with a snippet", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "notes/other", content: "a long note that mentions pricing once among many other words" });
    await ws.save({ name: "pricing/plan", content: "tiers and discounts", summary: "pricing plan for 2026" });
    await ws.save({ name: "old", content: "pricing pricing pricing" });
    await ws.save({ name: "old", content: "nothing relevant", expected_version: 1 });
    const { results } = await ws.find({ text: "pricing" });
    expect(results.map((r) => r.name)).toEqual(["pricing/plan", "notes/other"]);
    expect(results[1]?.snippet).toContain("[pricing]");
    expect(results[0]).toMatchObject({ summary: "pricing plan for 2026", stale: false });
    await ws.close();
  });

  it("matches word prefixes, falls back to any word, and honours limit", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "a", content: "quarterly revenue report" });
    await ws.save({ name: "b", content: "revenue forecast" });
    await ws.save({ name: "c", content: "quarterly headcount" });
    expect((await ws.find({ text: "quart revenue" })).results.map((r) => r.name)).toEqual(["a"]);
    const any = await ws.find({ text: "headcount forecast" });
    expect(any.results.map((r) => r.name).sort()).toEqual(["b", "c"]);
    expect((await ws.find({ text: "revenue", limit: 1 })).results).toHaveLength(1);
    expect((await ws.find({ text: '"; DROP TABLE versions; --' })).results).toEqual([]);
    await ws.close();
  });

  it("lists the most recently saved when the text has no word to search", async () => {
    const { ws } = await fresh();
    expect(await ws.find({ text: "" })).toEqual({ results: [], note: expect.stringContaining("empty") });
    await ws.save({ name: "a", content: "first" });
    await ws.save({ name: "b", content: "second", summary: "the second" });
    for (const text of ["", "*", "  ", undefined]) {
      const found = await ws.find(text === undefined ? {} : { text });
      expect(found.results.map((r) => r.name)).toEqual(["b", "a"]);
      expect(found.results[0]).toMatchObject({ summary: "the second", snippet: "" });
      expect(found.note).toContain("most recently saved");
    }
    expect((await ws.find({ text: "*", limit: 1 })).results).toHaveLength(1);
    await ws.close();
  });

  it("indexes only the first indexBytes of text", async () => {
    const { ws } = await fresh({ indexBytes: 100 });
    await ws.save({ name: "long", content: `${"filler ".repeat(20)}needle` });
    expect((await ws.find({ text: "needle" })).results).toEqual([]);
    expect((await ws.find({ text: "filler" })).results).toHaveLength(1);
    await ws.close();
  });
});

describe("inspect", () => {
  it("returns an excerpt, next_offset and stale, compact by default and complete with full", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "smoke/a", content: "hello smoke", summary: "greeting", source: "test" });
    const page = await ws.inspect({ ref: "smoke/a", excerpt_bytes: 5 });
    expect(page).toMatchObject({ excerpt: "hello", offset: 0, next_offset: 5, stale: false });
    expect(page).not.toHaveProperty("summary");
    expect(page).not.toHaveProperty("sha256");
    const rest = await ws.inspect({ ref: "smoke/a", offset: 5 });
    expect(rest).toMatchObject({ excerpt: " smoke", next_offset: null });
    const full = await ws.inspect({ ref: "smoke/a", full: true, excerpt_bytes: 0 });
    expect(full).toMatchObject({ summary: "greeting", source: "test", current: true });
    expect(full).toHaveProperty("sha256");
    expect(full).not.toHaveProperty("excerpt");
    await ws.close();
  });

  it("pages multi-byte text on UTF-8 boundaries without losing or splitting a character", async () => {
    const { ws } = await fresh();
    const text = `${"aé€😀".repeat(50)}z`;
    await ws.save({ name: "utf8", content: text });
    for (const size of [1, 2, 3, 4, 5, 7]) {
      let offset: number | null = 0;
      let joined = "";
      let pages = 0;
      while (offset !== null) {
        const page = (await ws.inspect({ ref: "utf8", excerpt_bytes: size, offset })) as {
          excerpt: string;
          next_offset: number | null;
        };
        expect(page.excerpt).not.toContain("\ufffd");
        expect(page.excerpt.length).toBeGreaterThan(0);
        if (page.next_offset !== null) expect(page.next_offset).toBeGreaterThan(offset);
        joined += page.excerpt;
        offset = page.next_offset;
        pages++;
      }
      expect(joined).toBe(text);
      expect(pages).toBeGreaterThan(1);
    }
    // An offset inside a code point moves back to its start.
    const mid = (await ws.inspect({ ref: "utf8", offset: 2, excerpt_bytes: 3 })) as { excerpt: string; offset: number };
    expect(mid).toMatchObject({ excerpt: "é", offset: 1 });
    await ws.close();
  });

  it("gives no text excerpt for binary content and says so", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "bin", content: Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 0, 1, 2]) });
    const page = await ws.inspect({ ref: "bin" });
    expect(page).toMatchObject({ excerpt: null, next_offset: null, media_type: "application/zip" });
    expect((page as { note: string }).note).toContain("binary");
    await ws.close();
  });

  it("reads up to 16 refs and names every missing one", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "one", content: "1" });
    const error = await failure(ws.inspect({ refs: ["one", "two", "three"] }));
    expect(error.code).toBe("NOT_FOUND");
    expect(error.message).toContain("two");
    expect(error.message).toContain("three");
    const tooMany = await failure(ws.inspect({ refs: Array.from({ length: 17 }, () => "one") }));
    expect(tooMany.code).toBe("TOO_LARGE");
    await ws.close();
  });
});

describe("resume", () => {
  it("opens a checkpoint by name and previews every artifact it pins", async () => {
    const { ws } = await fresh();
    const patch = await ws.save({ name: "lookup/patch", content: "- return None\n+ return []\n", filename: "p.diff" });
    await ws.save({
      name: "lookup/handoff",
      kind: "checkpoint",
      checkpoint: { objective: "Fix the empty lookup", verified: "two checks pass", next_step: "send for review" },
      dependencies: [patch.artifact_id],
    });
    const resumed = await ws.resume({ text: "lookup/handoff" });
    if (!("checkpoint" in resumed)) throw new Error("expected a checkpoint");
    expect(resumed.checkpoint).toMatchObject({
      objective: "Fix the empty lookup",
      verified: "two checks pass",
      next_step: "send for review",
      dependencies: [patch.artifact_id],
      stale: false,
    });
    expect(resumed.artifacts[0]).toMatchObject({ name: "lookup/patch", excerpt: "- return None\n+ return []\n" });
    const byId = await ws.resume({ text: resumed.checkpoint.artifact_id });
    expect("checkpoint" in byId).toBe(true);
    expect(await ws.read("lookup/handoff", { as: "json" })).toMatchObject({ objective: "Fix the empty lookup" });
    await ws.close();
  });

  it("opens the single checkpoint under a namespace, else lists candidates", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "alpha/handoff", checkpoint: { objective: "alpha work" } });
    await ws.save({ name: "beta/one", checkpoint: { objective: "beta first" } });
    await ws.save({ name: "beta/two", checkpoint: { objective: "beta second" } });
    await ws.save({ name: "alpha/note", content: "not a checkpoint" });
    const alpha = await ws.resume({ text: "alpha" });
    expect("checkpoint" in alpha && alpha.checkpoint.name).toBe("alpha/handoff");
    const beta = await ws.resume({ text: "beta" });
    if (!("candidates" in beta)) throw new Error("expected candidates");
    expect(beta.candidates.map((c) => c.name).sort()).toEqual(["beta/one", "beta/two"]);
    expect(beta.candidates.find((c) => c.name === "beta/one")?.objective).toBe("beta first");
    const none = await ws.resume({ text: "gamma" });
    expect(none).toMatchObject({ candidates: [] });
    const notCheckpoint = await ws.resume({ text: "alpha/note" });
    expect((notCheckpoint as { note: string }).note).toContain('"alpha/note" is a note, not a checkpoint');
    await ws.close();
  });

  it("opens the most recent checkpoint without text, and the only match of a search", async () => {
    const { ws } = await fresh();
    expect(await ws.resume({})).toMatchObject({ candidates: [], message: expect.stringContaining("No checkpoint") });
    await ws.save({ name: "old/handoff", checkpoint: { objective: "migrate the billing tables" } });
    const only = await ws.resume();
    expect(only).toMatchObject({ checkpoint: { name: "old/handoff" } });
    expect("note" in only).toBe(false);
    await ws.save({ name: "new/handoff", checkpoint: { objective: "write the release notes" } });
    await ws.save({ name: "new/notes", content: "a newer note, not a checkpoint" });
    const latest = await ws.resume({ text: "  " });
    expect(latest).toMatchObject({ checkpoint: { name: "new/handoff" }, note: expect.stringContaining("of 2") });
    const searched = await ws.resume({ text: "billing" });
    expect(searched).toMatchObject({ checkpoint: { name: "old/handoff" }, note: expect.stringContaining("only") });
    await ws.close();
  });
});

describe("list", () => {
  it("pages current versions newest first and counts namespaces and kinds on the first page", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "proj/a", content: "one", summary: "first note" });
    await ws.save({ name: "proj/data/t", content: "id,v\n1,2\n", kind: "csv" });
    await ws.save({ name: "proj/handoff", checkpoint: { objective: "ship" } });
    await ws.save({ name: "other/b", content: "two" });
    await ws.save({ name: "proj/a", content: "one again", expected_version: 1 });
    const first = await ws.list({ limit: 2 });
    expect(first).toMatchObject({
      artifacts: [
        { name: "proj/a", version: 2, kind: "note", media_type: "text/plain", summary: null, stale: false },
        { name: "other/b", version: 1 },
      ],
      total: 4,
      namespaces: [
        { namespace: "proj", count: 3 },
        { namespace: "other", count: 1 },
      ],
      kinds: { note: 2, csv: 1, checkpoint: 1 },
    });
    expect(first.more_namespaces).toBeUndefined();
    const second = await ws.list({ limit: 2, cursor: first.next_cursor as string });
    expect(second.artifacts.map((a) => a.name)).toEqual(["proj/handoff", "proj/data/t"]);
    expect(second.artifacts[0]?.objective).toBe("ship");
    expect(second.total).toBeUndefined();
    expect(second.next_cursor).toBeNull();
    const under = await ws.list({ namespace: "proj/", kind: "csv" });
    expect(under).toMatchObject({
      artifacts: [{ name: "proj/data/t" }],
      total: 1,
      namespaces: [{ namespace: "proj/data" }],
    });
    expect((await ws.list({ namespace: "" })).total).toBe(4);
    await ws.close();
  });

  it("cuts the namespaces it names and counts the rest", async () => {
    const { ws } = await fresh();
    for (let i = 0; i < 53; i++) await ws.save({ name: `n${i}/x`, content: "x" });
    const page = await ws.list({ limit: 1 });
    expect(page.namespaces).toHaveLength(50);
    expect(page.namespaces?.[0]).toEqual({ namespace: "n52", count: 1 });
    expect(page.more_namespaces).toBe(3);
    await ws.close();
  });
});

describe("read, import and export", () => {
  it("reads whole content as text, JSON or bytes", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "j", content: '{"n":[1,2]}' });
    expect(await ws.read("j")).toBe('{"n":[1,2]}');
    expect(await ws.read("j", { as: "json" })).toEqual({ n: [1, 2] });
    expect(Buffer.from(await ws.read("j", { as: "bytes" })).toString()).toBe('{"n":[1,2]}');
    await ws.close();
  });

  it("imports files in their native format with media type and kind from extension or magic bytes", async () => {
    const { ws } = await fresh();
    const data = join(process.cwd(), "node_modules", "vega-datasets", "data");
    const csv = await ws.import({ path: join(data, "airports.csv"), name: "geo/airports", summary: "airports" });
    expect(csv).toMatchObject({
      kind: "csv",
      media_type: "text/csv",
      bytes: statSync(join(data, "airports.csv")).size,
    });
    const progress: number[] = [];
    const parquet = await ws.import(
      { path: join(data, "flights-3m.parquet"), name: "flights" },
      { onProgress: (copied, total) => progress.push(copied / total) },
    );
    expect(parquet).toMatchObject({ kind: "parquet", media_type: "application/vnd.apache.parquet" });
    expect(progress.at(-1)).toBe(1);
    const noExtension = join(root, "image-without-extension");
    writeFileSync(noExtension, readFileSync(join(data, "7zip.png")));
    expect(await ws.import({ path: noExtension, name: "img" })).toMatchObject({
      kind: "file",
      media_type: "image/png",
    });
    const full = await ws.inspect({ ref: "geo/airports", full: true, excerpt_bytes: 20 });
    expect(full).toMatchObject({ filename: "airports.csv", source: join(data, "airports.csv"), summary: "airports" });
    expect((await ws.find({ text: "airports" })).results[0]?.name).toBe("geo/airports");
    await ws.close();
  });

  it("fails an import of a relative, missing or directory path with IMPORT_FAILED and the reason", async () => {
    const { ws } = await fresh();
    const relative = await failure(ws.import({ path: "data.csv", name: "x" }));
    expect(relative.code).toBe("IMPORT_FAILED");
    expect(relative.message).toContain("relative");
    const missing = await failure(ws.import({ path: join(root, "does-not-exist.csv"), name: "x" }));
    expect(missing.code).toBe("IMPORT_FAILED");
    expect(missing.message).toContain("no such file: check the path");
    const fifo = join(root, "a-fifo");
    execFileSync("mkfifo", [fifo]);
    const pipe = await failure(ws.import({ path: fifo, name: "x" }));
    expect(pipe.code).toBe("IMPORT_FAILED");
    expect(pipe.message).toContain("not a regular file");
    const directory = await failure(ws.import({ path: root, name: "x" }));
    expect(directory.code).toBe("IMPORT_FAILED");
    expect(directory.message).toContain("directory");
    expect((await ws.find({ text: "x" })).results).toEqual([]);
    await ws.close();
  });

  it("exports the exact bytes and refuses to replace a directory (issue 11)", async () => {
    const { ws } = await fresh();
    const bytes = Uint8Array.from({ length: 3000 }, (_, i) => i % 251);
    await ws.save({ name: "blob", content: bytes });
    const target = join(root, "exported.bin");
    const result = await ws.export("blob", target);
    expect(result).toMatchObject({ name: "blob", version: 1, bytes: 3000, path: target });
    expect(Buffer.compare(readFileSync(target), Buffer.from(bytes))).toBe(0);
    const dirTarget = join(root, "a-directory");
    mkdirSync(dirTarget, { recursive: true });
    expect((await failure(ws.export("blob", dirTarget))).code).toBe("ALREADY_EXISTS");
    await ws.close();
  });
});

describe("damaged blobs", () => {
  it("reports a blob whose bytes changed on disk as CORRUPT and never serves it", async () => {
    const { ws, dir } = await fresh();
    const saved = await ws.save({ name: "doc", content: "original text" });
    const { sha256 } = (await ws.inspect({ ref: "doc", full: true, excerpt_bytes: 0 })) as { sha256: string };
    writeFileSync(blobPath(dir, sha256), "tampered text");
    expect((await failure(ws.read("doc"))).code).toBe("CORRUPT");
    expect((await failure(ws.inspect({ ref: "doc" }))).code).toBe("CORRUPT");
    const target = join(root, "corrupt-export.txt");
    expect((await failure(ws.export(saved.artifact_id, target))).code).toBe("CORRUPT");
    expect(() => statSync(target)).toThrow();
    writeFileSync(blobPath(dir, sha256), "short");
    expect((await failure(ws.inspect({ ref: "doc" }))).code).toBe("CORRUPT");
    await ws.close();
  });

  it("reports a missing blob as NOT_FOUND", async () => {
    const { ws, dir } = await fresh();
    await ws.save({ name: "gone", content: "soon missing" });
    const { sha256 } = (await ws.inspect({ ref: "gone", full: true, excerpt_bytes: 0 })) as { sha256: string };
    rmSync(blobPath(dir, sha256));
    expect((await failure(ws.read("gone"))).code).toBe("NOT_FOUND");
    expect((await failure(ws.inspect({ ref: "gone" }))).code).toBe("NOT_FOUND");
    await ws.close();
  });
});

describe("delete and prune", () => {
  it("deletes a superseded version by id, refuses the current one, and removes its blob", async () => {
    const { ws, dir } = await fresh();
    const v1 = await ws.save({ name: "n", content: "first" });
    const v2 = await ws.save({ name: "n", content: "second", expected_version: 1 });
    const current = await failure(ws.delete({ ref: v2.artifact_id }));
    expect(current.code).toBe("INVALID_ARGUMENT");
    expect(current.message).toContain('delete the name "n" with expected_version 2');
    const { sha256 } = (await ws.inspect({ ref: v1.artifact_id, full: true, excerpt_bytes: 0 })) as { sha256: string };
    const result = await ws.delete({ ref: v1.artifact_id });
    expect(result).toMatchObject({ deleted: [{ artifact_id: v1.artifact_id, version: 1 }], blobs_removed: 1 });
    expect(() => statSync(blobPath(dir, sha256))).toThrow();
    expect((await failure(ws.inspect({ ref: v1.artifact_id }))).code).toBe("NOT_FOUND");
    await ws.close();
  });

  it("deletes a name only with its current expected_version", async () => {
    const { ws } = await fresh();
    await ws.save({ name: "n", content: "1" });
    await ws.save({ name: "n", content: "2", expected_version: 1 });
    expect((await failure(ws.delete({ ref: "n" }))).code).toBe("VERSION_CONFLICT");
    expect((await failure(ws.delete({ ref: "n", expected_version: 1 }))).code).toBe("VERSION_CONFLICT");
    const result = await ws.delete({ ref: "n", expected_version: 2 });
    expect(result.deleted.map((d) => d.version)).toEqual([1, 2]);
    expect((await failure(ws.inspect({ ref: "n" }))).code).toBe("NOT_FOUND");
    await ws.close();
  });

  it("refuses to delete a pinned version and names the blockers", async () => {
    const { ws } = await fresh();
    const input = await ws.save({ name: "input", content: "1" });
    const result = await ws.save({ name: "result", content: "r", dependencies: [input.artifact_id] });
    await ws.save({ name: "input", content: "2", expected_version: 1 });
    const byId = await failure(ws.delete({ ref: input.artifact_id }));
    expect(byId.code).toBe("PINNED");
    expect(byId.message).toContain("result v1");
    expect(byId.data).toMatchObject({ blockers: [{ artifact_id: result.artifact_id, pinned: input.artifact_id }] });
    const byName = await failure(ws.delete({ ref: "input", expected_version: 2 }));
    expect(byName.code).toBe("PINNED");
    await ws.delete({ ref: "result", expected_version: 1 });
    expect((await ws.delete({ ref: "input", expected_version: 2 })).deleted).toHaveLength(2);
    await ws.close();
  });

  it("prunes a chain of superseded versions pinned by each other to a fixed point", async () => {
    const { ws } = await fresh();
    // a1 <- b1 <- c1 are superseded; each is only pinned by the next superseded one.
    const a1 = await ws.save({ name: "a", content: "a1" });
    const b1 = await ws.save({ name: "b", content: "b1", dependencies: [a1.artifact_id] });
    const c1 = await ws.save({ name: "c", content: "c1", dependencies: [b1.artifact_id] });
    await ws.save({ name: "a", content: "a2", expected_version: 1 });
    await ws.save({ name: "b", content: "b2", expected_version: 1 });
    await ws.save({ name: "c", content: "c2", expected_version: 1 });
    // A current artifact that pins a superseded version keeps it.
    const kept = await ws.save({ name: "keeper", content: "k" });
    const d1 = await ws.save({ name: "d", content: "d1" });
    await ws.save({ name: "keeper", content: "k2", expected_version: 1, dependencies: [d1.artifact_id] });
    await ws.save({ name: "d", content: "d2", expected_version: 1 });

    const dry = await ws.prune({ dry_run: true });
    const expected = [a1.artifact_id, b1.artifact_id, c1.artifact_id, kept.artifact_id].sort();
    expect(dry.removed.map((r) => r.artifact_id).sort()).toEqual(expected);
    expect(dry.dry_run).toBe(true);
    expect((await ws.inspect({ ref: a1.artifact_id, excerpt_bytes: 0 })).version).toBe(1);

    const done = await ws.prune({});
    expect(done.removed.map((r) => r.artifact_id).sort()).toEqual(expected);
    expect(done.blobs_removed).toBe(4);
    expect((await ws.inspect({ ref: d1.artifact_id, excerpt_bytes: 0 })).version).toBe(1);
    expect((await ws.prune({})).removed).toEqual([]);
    await ws.close();
  });

  it("keeps the newest keep versions of each name", async () => {
    const { ws } = await fresh();
    for (let v = 1; v <= 5; v++) {
      await ws.save({ name: "n", content: `v${v}`, ...(v > 1 ? { expected_version: v - 1 } : {}) });
    }
    const result = await ws.prune({ keep: 2 });
    expect(result.removed.map((r) => r.version)).toEqual([1, 2, 3]);
    await ws.close();
  });

  it("records a blob it cannot remove as cleanup_pending and removes it on the next prune", async () => {
    const { ws, dir } = await fresh();
    const v1 = await ws.save({ name: "n", content: "stuck blob" });
    await ws.save({ name: "n", content: "next", expected_version: 1 });
    const { sha256 } = (await ws.inspect({ ref: v1.artifact_id, full: true, excerpt_bytes: 0 })) as {
      sha256: string;
    };
    // A non-empty directory where the blob file was: unlink fails even for root.
    const path = blobPath(dir, sha256);
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, "x"), "x");
    const deleted = await ws.delete({ ref: v1.artifact_id });
    expect(deleted.deleted).toHaveLength(1);
    expect(deleted.cleanup_pending).toEqual([sha256]);
    rmSync(path, { recursive: true });
    writeFileSync(path, "stuck blob");
    const pruned = await ws.prune({});
    expect(pruned.cleanup_pending).toEqual([]);
    expect(pruned.blobs_removed).toBe(1);
    expect(() => statSync(path)).toThrow();
    await ws.close();
  });

  it("removes orphan blobs and abandoned temp files on prune", async () => {
    const { ws, dir } = await fresh();
    await ws.save({ name: "kept", content: "kept" });
    const orphan = "ab".padEnd(64, "c");
    mkdirSync(join(dir, "blobs", "sha256", "ab"), { recursive: true });
    writeFileSync(blobPath(dir, orphan), "orphan");
    // pid 2^22+1 is above Linux's pid_max default, so no process holds it.
    writeFileSync(join(dir, "blobs", "tmp", "4194305-deadbeef.tmp"), "partial");
    const result = await ws.prune({});
    expect(result.blobs_removed).toBe(1);
    expect(result.temp_files_removed).toBe(1);
    expect(await ws.read("kept")).toBe("kept");
    await ws.close();
  });
});

describe("openWorkspace", () => {
  it("creates a missing directory with mode 0700", async () => {
    const { ws, dir } = await fresh();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    await ws.close();
  });

  it("keeps versions across close and reopen", async () => {
    const { ws, dir } = await fresh();
    await ws.save({ name: "durable", content: "still here" });
    await ws.close();
    const again = await openWorkspace(dir);
    expect(await again.read("durable")).toBe("still here");
    await again.close();
  });
});
