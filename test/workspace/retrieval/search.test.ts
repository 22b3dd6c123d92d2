// search on a real workspace: every page sequence agrees with a naive scan (seeded random texts with multi-byte
// UTF-8, matches across scan-window edges, overlapping matches, pages cut by limit and by work), cursors refuse a
// changed query or snapshot, and the real 1 MiB windows hold over a version larger than 4 MiB.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { type SearchResult, search } from "../../../src/workspace/retrieval/search.js";
import { openWorkspace, type Workspace } from "../../../src/workspace/workspace.js";
import { caught as failure } from "../../helpers/caught.js";
import { expectedSnippet, int, naiveMatches, pick, random, randomNeedle, randomText } from "./oracle.js";

const root = mkdtempSync(join(tmpdir(), "cairn-search-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const quiet = createLogger("workspace", () => {});
const fresh = () => openWorkspace(join(root, `w${counter++}`), { logger: quiet });

type Args = Parameters<typeof search>[1];
type Options = Parameters<typeof search>[2];

/** Follows cursors to the end; checks each page's shape on the way. */
async function allPages(ws: Workspace, args: Args, options: Options) {
  const pages: SearchResult[] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 100_000; guard++) {
    const page = await search(ws, { ...args, ...(cursor === undefined ? {} : { cursor }) }, options);
    pages.push(page);
    expect(page.hits.length).toBeLessThanOrEqual(args.limit ?? 10);
    expect(page.complete).toBe(page.cursor === null);
    if (page.cursor === null) return pages;
    cursor = page.cursor;
  }
  throw new Error("search never completed");
}

describe("search against a naive scan", () => {
  it("finds exactly the oracle's matches, in order, over random texts, windows, limits and work", async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rand = random(seed);
      const ws = await fresh();
      try {
        const docs = Array.from({ length: int(rand, 1, 4) }, (_, i) => ({
          name: `doc/${String.fromCharCode(97 + i)}`,
          text: randomText(rand, 120),
        }));
        const saved: { artifact_id: string; name: string }[] = [];
        for (const doc of docs) saved.push(await ws.save({ name: doc.name, content: doc.text || " " }));
        const texts = docs.map((d) => d.text || " ");
        for (let round = 0; round < 4; round++) {
          const text = randomNeedle(rand, texts);
          const context = pick(rand, [0, 1, 2, 3, 5, 16]);
          const windowBytes = pick(rand, [1, 2, 3, 5, 8, 64]);
          const needleBytes = Buffer.byteLength(text);
          // Enough work for one window of one start position, so every page moves forward.
          const workBytes = 2 * context + needleBytes + 6 + int(rand, 0, 40);
          const chosen = rand() < 0.4 ? saved.filter(() => rand() < 0.7) : [];
          const refs = chosen.length > 0 ? chosen.map((s) => (rand() < 0.5 ? s.name : s.artifact_id)) : undefined;
          const scope = refs === undefined ? docs.map((d, i) => ({ ...d, text: texts[i] as string })) : [];
          for (const s of chosen) {
            const i = saved.indexOf(s);
            scope.push({ name: s.name, text: texts[i] as string });
          }
          const expected = scope.flatMap((doc) =>
            naiveMatches(doc.text, text).map((m) => {
              const snippet = expectedSnippet(doc.text, m, context);
              return {
                name: doc.name,
                start: m.start,
                end: m.end,
                snippet: snippet.snippet,
                snippet_start: snippet.start,
                snippet_end: snippet.end,
              };
            }),
          );
          const pages = await allPages(
            ws,
            { text, context_bytes: context, limit: int(rand, 1, 5), ...(refs === undefined ? {} : { refs }) },
            { windowBytes, workBytes },
          );
          const hits = pages.flatMap((p) =>
            p.hits.map(({ name, start, end, snippet, snippet_start, snippet_end }) => ({
              name,
              start,
              end,
              snippet,
              snippet_start,
              snippet_end,
            })),
          );
          const label = `seed ${seed} round ${round}: ${JSON.stringify(text)} ctx ${context} window ${windowBytes}`;
          expect(hits, label).toEqual(expected);
        }
      } finally {
        await ws.close();
      }
    }
  }, 120_000);
});

describe("search", () => {
  it("folds ASCII letters only: E finds e, É does not find é", async () => {
    const ws = await fresh();
    try {
      await ws.save({ name: "fr/ecole", content: "L'école et l'ECOLE, Straße" });
      // "L'" is 2 bytes, "école" 6, " et l'" 6: ECOLE starts at byte 14, école at 2.
      expect((await search(ws, { text: "ecole" })).hits.map((h) => h.start)).toEqual([14]);
      expect((await search(ws, { text: "ÉCOLE" })).hits).toEqual([]);
      expect((await search(ws, { text: "éCOLE" })).hits.map((h) => h.start)).toEqual([2]);
      expect((await search(ws, { text: "STRAßE" })).hits).toHaveLength(1);
      expect((await search(ws, { text: "STRASSE" })).hits).toEqual([]);
    } finally {
      await ws.close();
    }
  });

  it("reaches text past find's 64 KiB window, across the real 1 MiB scan windows of a 5 MiB version", async () => {
    const ws = await fresh();
    try {
      const size = 5 * 1024 * 1024 + 7;
      const bytes = Buffer.alloc(size, "x");
      // A needle straddling each window edge, one just inside and one at the very end.
      const at = [1024 * 1024 - 3, 2 * 1024 * 1024 - 1, 3 * 1024 * 1024 + 5, size - 6];
      for (const p of at) bytes.write("NeEdLe", p, "latin1");
      const saved = await ws.save({ name: "big/doc", content: new Uint8Array(bytes), media_type: "text/plain" });
      const page = await search(ws, { text: "needle", refs: ["big/doc"], context_bytes: 4 });
      expect(page.complete).toBe(true);
      expect(page.hits.map((h) => [h.start, h.end, h.snippet])).toEqual(
        at.map((p) => [p, p + 6, `xxxxNeEdLe${"x".repeat(Math.min(4, size - p - 6))}`]),
      );
      expect(page.hits[0]).toMatchObject({ artifact_id: saved.artifact_id, version: 1, current: true, stale: false });
      expect(page.scanned_bytes).toBeGreaterThanOrEqual(size);
    } finally {
      await ws.close();
    }
  });

  it("stops at 16 MiB a call and continues by cursor, an empty page included", async () => {
    const ws = await fresh();
    try {
      const part = Buffer.alloc(9 * 1024 * 1024, "y");
      await ws.save({ name: "big/a", content: new Uint8Array(part), media_type: "text/plain" });
      part.write("zz", part.length - 2, "latin1");
      await ws.save({ name: "big/b", content: new Uint8Array(part), media_type: "text/plain" });
      const first = await search(ws, { text: "zz" });
      expect(first).toMatchObject({ hits: [], complete: false });
      expect(first.scanned_bytes).toBeLessThanOrEqual(16 * 1024 * 1024);
      const second = await search(ws, { text: "zz", cursor: first.cursor as string });
      expect(second.hits.map((h) => [h.name, h.start])).toEqual([["big/b", part.length - 2]]);
      expect(second.complete).toBe(true);
    } finally {
      await ws.close();
    }
  });

  it("keeps a page's hit objects within 32 KiB, trimming the context of a lone hit that would not fit", async () => {
    const ws = await fresh();
    try {
      // Control characters take 6 bytes each in JSON: 2 x 2048 of them around a match is ~24 KiB per hit.
      const noise = "\u0001".repeat(2048);
      await ws.save({
        name: "ctl/a",
        content: new Uint8Array(Buffer.from(`${noise}hit${noise}hit${noise}`)),
        media_type: "text/plain",
      });
      const page = await search(ws, { text: "hit", context_bytes: 2048, limit: 20 });
      expect(page.hits).toHaveLength(1);
      expect(Buffer.byteLength(JSON.stringify(page.hits))).toBeLessThanOrEqual(32 * 1024);
      const rest = await search(ws, { text: "hit", context_bytes: 2048, cursor: page.cursor as string });
      expect(rest.hits.map((h) => h.start)).toEqual([2048 * 2 + 3]);

      await ws.save({
        name: "ctl/b",
        content: new Uint8Array(Buffer.from(`${"\u0001".repeat(8000)}hit${"\u0001".repeat(8000)}`)),
        media_type: "text/plain",
      });
      const lone = await search(ws, { text: "hit", refs: ["ctl/b"], context_bytes: 2048 });
      const [hit] = lone.hits;
      expect(Buffer.byteLength(JSON.stringify(hit))).toBeLessThanOrEqual(32 * 1024);
      expect(hit?.snippet).toContain("hit");
    } finally {
      await ws.close();
    }
  });

  it("reports a version whose bytes are not UTF-8 and searches the others", async () => {
    const ws = await fresh();
    try {
      await ws.save({
        name: "bad/a",
        content: new Uint8Array([0x61, 0x62, 0xff, 0x61, 0x62]),
        media_type: "text/plain",
      });
      await ws.save({ name: "good/b", content: "ab ab" });
      const page = await search(ws, { text: "ab" });
      expect(page.hits.map((h) => [h.name, h.start])).toEqual([
        ["good/b", 0],
        ["good/b", 3],
      ]);
      expect(page.skipped).toEqual([expect.objectContaining({ name: "bad/a", offset: 0 })]);

      // A page reports at most 20 of them, then ends with a cursor.
      for (let i = 0; i < 20; i++) {
        await ws.save({ name: `bad/m${i}`, content: new Uint8Array([0x61, 0xc3]), media_type: "text/plain" });
      }
      const first = await search(ws, { text: "ab" });
      expect([first.hits.length, first.skipped?.length, first.complete]).toEqual([0, 20, false]);
      const second = await search(ws, { text: "ab", cursor: first.cursor as string });
      expect([second.hits.length, second.skipped?.map((x) => x.name), second.complete]).toEqual([2, ["bad/m9"], true]);
    } finally {
      await ws.close();
    }
  });

  it("refuses a cursor of another query (INVALID_ARGUMENT) or of changed versions (STALE_CURSOR)", async () => {
    const ws = await fresh();
    try {
      await ws.save({ name: "n/a", content: "aaaa" });
      await ws.save({ name: "n/b", content: "aaaa" });
      const page = await search(ws, { text: "aa", limit: 1 });
      const cursor = page.cursor as string;
      expect(cursor).toEqual(expect.any(String));
      // Limit and context may change between pages; text and refs may not.
      expect((await search(ws, { text: "aa", cursor, limit: 2, context_bytes: 0 })).hits.map((h) => h.start)).toEqual([
        1, 2,
      ]);
      // Case aside: AA and aa are one query.
      expect((await search(ws, { text: "AA", cursor })).hits).toHaveLength(5);
      const otherText = await failure(search(ws, { text: "aa ", cursor }));
      expect(otherText.code).toBe("INVALID_ARGUMENT");
      expect(otherText.message).toMatch(/another query.*omit cursor/);
      expect((await failure(search(ws, { text: "aa", refs: ["n/a"], cursor }))).code).toBe("INVALID_ARGUMENT");
      expect((await failure(search(ws, { text: "aa", cursor: "c1.garbage" }))).code).toBe("INVALID_ARGUMENT");
      const forged = cursor.replace(/\.\d+\.\d+$/, ".9.0");
      expect((await failure(search(ws, { text: "aa", cursor: forged }))).message).toMatch(/points past/);

      await ws.save({ name: "n/c", content: "unrelated" });
      const stale = await failure(search(ws, { text: "aa", cursor }));
      expect(stale.code).toBe("STALE_CURSOR");
      expect(stale.message).toMatch(/search again without cursor/);

      // Pinned ids keep a cursor valid while names move on.
      const a = await ws.inspect({ ref: "n/a", excerpt_bytes: 0 });
      const pinned = await search(ws, { text: "aa", refs: [a.artifact_id], limit: 1 });
      await ws.save({ name: "n/a", content: "bbbb", expected_version: 1 });
      const next = await search(ws, { text: "aa", refs: [a.artifact_id], cursor: pinned.cursor as string });
      expect(next.hits.map((h) => [h.start, h.current])).toEqual([
        [1, false],
        [2, false],
      ]);
      expect((await failure(search(ws, { text: "aa", refs: ["n/a"], cursor: pinned.cursor as string }))).code).toBe(
        "INVALID_ARGUMENT",
      );
    } finally {
      await ws.close();
    }
  });

  it("checks its arguments", async () => {
    const ws = await fresh();
    try {
      await ws.save({ name: "bin/x", content: new Uint8Array([0, 1, 2]), media_type: "application/octet-stream" });
      const cases: [unknown, string, RegExp][] = [
        [{ text: "" }, "INVALID_ARGUMENT", /not empty/],
        [{ text: "x".repeat(1001) }, "TOO_LARGE", /1000/],
        [{ text: "\ud800" }, "INVALID_ARGUMENT", /lone surrogate/],
        [{ text: "a", limit: 21 }, "INVALID_ARGUMENT", /limit must be an integer from 1 to 20/],
        [{ text: "a", context_bytes: 2049 }, "INVALID_ARGUMENT", /context_bytes/],
        [{ text: "a", refs: [] }, "INVALID_ARGUMENT", /1 to 16 refs/],
        [{ text: "a", refs: Array(17).fill("n") }, "INVALID_ARGUMENT", /1 to 16 refs/],
        [{ text: "a", refs: ["missing/x"] }, "NOT_FOUND", /missing\/x/],
        [{ text: "a", refs: ["bin/x"] }, "INVALID_ARGUMENT", /binary/],
      ];
      for (const [args, code, message] of cases) {
        const error = await failure(search(ws, args as Args));
        expect([error.code, error.message], JSON.stringify(args).slice(0, 60)).toEqual([
          code,
          expect.stringMatching(message),
        ]);
      }
      // Binary versions are simply not in the default scope.
      expect(await search(ws, { text: "a" })).toMatchObject({ hits: [], complete: true });
    } finally {
      await ws.close();
    }
  });
});

describe("search reads verified bytes", () => {
  it("fails with CORRUPT when a small version's bytes changed on disk, as inspect does", async () => {
    const dir = join(root, `w${counter++}`);
    const ws = await openWorkspace(dir, { logger: quiet });
    try {
      await ws.save({ name: "doc/x", content: "some text to find" });
      const meta = (await ws.inspect({ ref: "doc/x", full: true, excerpt_bytes: 0 })) as { sha256: string };
      const path = join(dir, "blobs", "sha256", meta.sha256.slice(0, 2), meta.sha256.slice(2));
      chmodSync(path, 0o600);
      writeFileSync(path, "SOME TEXT TO FIND");
      expect((await failure(search(ws, { text: "find" }))).code).toBe("CORRUPT");
    } finally {
      await ws.close();
    }
  });
});
