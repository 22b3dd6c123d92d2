// retrieve on a real workspace: spans merge overlapping and adjacent ranges of one version and never across versions,
// a tight max_bytes shortens or defers reads and is never exceeded, and following every cursor and next_offset under
// random budgets gives exactly the naive scan's hits and the versions' bytes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CairnError } from "../../../src/errors.js";
import { createLogger } from "../../../src/log.js";
import { type RetrieveResult, retrieve } from "../../../src/workspace/retrieval/retrieve.js";
import { openWorkspace } from "../../../src/workspace/workspace.js";
import { caught as failure } from "../../helpers/caught.js";
import {
  boundaries,
  bytesOf,
  expectedSnippet,
  int,
  naiveMatches,
  pick,
  random,
  randomNeedle,
  randomText,
} from "./oracle.js";

const root = mkdtempSync(join(tmpdir(), "cairn-retrieve-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const quiet = createLogger("workspace", () => {});
const fresh = () => openWorkspace(join(root, `w${counter++}`), { logger: quiet });

type Args = Parameters<typeof retrieve>[1];

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Checks what every reply promises: its size, spans that are the versions' bytes, merged and in bounds. */
function checkReply(reply: RetrieveResult, texts: Map<string, string>, maxBytes: number): void {
  expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(maxBytes);
  const lastEnd = new Map<number, number>();
  for (const span of reply.spans) {
    const artifact = reply.artifacts[span.artifact];
    const text = texts.get(artifact?.artifact_id as string) as string;
    expect(span.text).toBe(bytesOf(text, span.start, span.end));
    expect(span.start).toBeLessThan(span.end);
    // Merged: spans of one version neither overlap nor touch.
    const previous = lastEnd.get(span.artifact);
    if (previous !== undefined) expect(span.start).toBeGreaterThan(previous);
    lastEnd.set(span.artifact, span.end);
  }
  for (const read of reply.reads) {
    if (read.span === null) continue;
    const span = reply.spans[read.span];
    expect(span?.artifact).toBe(read.artifact);
    expect(read.offset).toBeGreaterThanOrEqual(span?.start as number);
    expect(read.end).toBeLessThanOrEqual(span?.end as number);
  }
}

describe("spans", () => {
  it("merges overlapping and adjacent ranges of one version, never across versions, hits included", async () => {
    const ws = await fresh();
    try {
      const a = await ws.save({ name: "doc/a", content: ALPHABET });
      const b = await ws.save({ name: "doc/b", content: ALPHABET });
      const reply = await retrieve(ws, {
        queries: [{ text: "XYZ0", refs: ["doc/a"], context_bytes: 2 }],
        reads: [
          { ref: "doc/a", offset: 0, bytes: 10 },
          { ref: "doc/a", offset: 5, bytes: 10 },
          { ref: "doc/a", offset: 15, bytes: 5 },
          { ref: "doc/a", offset: 26, bytes: 4 },
          { ref: b.artifact_id, offset: 0, bytes: 10 },
          { ref: "doc/b", offset: 36, bytes: 10 },
        ],
      });
      expect(reply.artifacts.map((x) => x.artifact_id)).toEqual([a.artifact_id, b.artifact_id]);
      // [0,10) [5,15) [15,20) merge; the hit's snippet [21,29) and the read [26,30) merge; doc/b stays apart.
      expect(reply.spans.map((s) => [s.artifact, s.start, s.end])).toEqual([
        [0, 0, 20],
        [0, 21, 30],
        [1, 0, 10],
      ]);
      expect(reply.spans[1]?.text).toBe("vwxyz0123");
      expect(reply.queries).toEqual([{ hits: [{ span: 1, start: 23, end: 27 }], complete: true, cursor: null }]);
      expect(reply.reads).toEqual([
        { artifact: 0, span: 0, offset: 0, end: 10, next_offset: 10 },
        { artifact: 0, span: 0, offset: 5, end: 15, next_offset: 15 },
        { artifact: 0, span: 0, offset: 15, end: 20, next_offset: 20 },
        { artifact: 0, span: 1, offset: 26, end: 30, next_offset: 30 },
        { artifact: 1, span: 2, offset: 0, end: 10, next_offset: 10 },
        { artifact: 1, span: null, offset: 36, end: 36, next_offset: null },
      ]);
      checkReply(reply, new Map([a, b].map((x) => [x.artifact_id, ALPHABET])), 32 * 1024);
    } finally {
      await ws.close();
    }
  });

  it("moves a read's start back to a code point boundary and ends it on one", async () => {
    const ws = await fresh();
    try {
      const text = "a€b𝄞c";
      const saved = await ws.save({ name: "u/x", content: text });
      const reply = await retrieve(ws, { reads: [{ ref: "u/x", offset: 2, bytes: 4 }] });
      // Offset 2 is inside € (bytes 1-3): the read starts at 1 and takes € and b (4 bytes).
      expect(reply.reads[0]).toMatchObject({ offset: 1, end: 5, next_offset: 5 });
      expect(reply.spans[0]?.text).toBe("€b");
      checkReply(reply, new Map([[saved.artifact_id, text]]), 32 * 1024);
    } finally {
      await ws.close();
    }
  });
});

describe("max_bytes", () => {
  it("shortens, then defers reads under a tight budget and never exceeds it", async () => {
    const ws = await fresh();
    try {
      const text = ALPHABET.repeat(20);
      const saved = await ws.save({ name: "doc/long", content: text });
      const texts = new Map([[saved.artifact_id, text]]);
      const reads = [0, 200, 400].map((offset) => ({ ref: "doc/long", offset, bytes: 150 }));
      const full = await retrieve(ws, { reads });
      const size = Buffer.byteLength(JSON.stringify(full));
      let sawPartial = false;
      let sawDeferred = false;
      for (let maxBytes = size; maxBytes > 0; maxBytes -= 7) {
        let reply: RetrieveResult;
        try {
          reply = await retrieve(ws, { reads, max_bytes: maxBytes });
        } catch (error) {
          expect((error as CairnError).code).toBe("TOO_LARGE");
          expect((error as CairnError).message).toMatch(/raise max_bytes/);
          break;
        }
        checkReply(reply, texts, maxBytes);
        for (const [i, read] of reply.reads.entries()) {
          if (read.deferred) {
            sawDeferred = true;
            expect(read).toEqual({
              artifact: 0,
              span: null,
              offset: reads[i]?.offset,
              end: reads[i]?.offset,
              next_offset: reads[i]?.offset,
              deferred: true,
            });
          } else if (read.end < (reads[i]?.offset as number) + 150) {
            sawPartial = true;
            expect(read.next_offset).toBe(read.end);
          }
        }
        expect(reply.reads.some((r) => r.span !== null)).toBe(true);
      }
      expect([sawPartial, sawDeferred]).toEqual([true, true]);
    } finally {
      await ws.close();
    }
  });

  it("fails with TOO_LARGE when not even the metadata fits", async () => {
    const ws = await fresh();
    try {
      await ws.save({ name: "doc/a", content: ALPHABET });
      const error = await failure(retrieve(ws, { reads: [{ ref: "doc/a", bytes: 5 }], max_bytes: 20 }));
      expect(error.code).toBe("TOO_LARGE");
      expect(error.message).toMatch(/max_bytes 20 cannot hold even this reply's metadata \(at least \d+ bytes\)/);
    } finally {
      await ws.close();
    }
  });
});

describe("retrieve followed to the end agrees with a naive scan", () => {
  it("gives every hit of every query and the bytes of every read, under random budgets and windows", async () => {
    for (let seed = 1; seed <= 30; seed++) {
      const rand = random(1000 + seed);
      const ws = await fresh();
      try {
        const docs = Array.from({ length: int(rand, 1, 3) }, (_, i) => ({
          name: `doc/${String.fromCharCode(97 + i)}`,
          text: randomText(rand, 150) || "x",
        }));
        const saved: { artifact_id: string; name: string }[] = [];
        for (const doc of docs) saved.push(await ws.save({ name: doc.name, content: doc.text }));
        const texts = new Map(saved.map((s, i) => [s.artifact_id, docs[i]?.text as string]));
        const queries = Array.from({ length: int(rand, 0, 3) }, () => ({
          text: randomNeedle(
            rand,
            docs.map((d) => d.text),
          ),
          context_bytes: pick(rand, [0, 1, 4, 12]),
          limit: int(rand, 1, 4),
        }));
        const reads = Array.from({ length: int(rand, queries.length === 0 ? 1 : 0, 4) }, () => {
          const i = int(rand, 0, docs.length - 1);
          const size = Buffer.byteLength(docs[i]?.text as string);
          return { ref: saved[i]?.artifact_id as string, offset: int(rand, 0, size + 2), bytes: int(rand, 1, 60) };
        });
        const windowBytes = pick(rand, [1, 3, 7, 50]);
        let maxBytes = int(rand, 400, 3000);

        const hits: { start: number; end: number; name: string }[][] = queries.map(() => []);
        const cursors: (string | null | undefined)[] = queries.map(() => undefined);
        const readFrom = reads.map((r) => r.offset);
        const readText = reads.map(() => "");
        const readStart: (number | undefined)[] = reads.map(() => undefined);
        const target = reads.map((r) => {
          const size = Buffer.byteLength(texts.get(r.ref) as string);
          return Math.min(size, r.offset + r.bytes);
        });
        for (let step = 0; step < 10_000; step++) {
          const openQueries = queries.flatMap((q, i) => (cursors[i] === null ? [] : [{ q, i }]));
          const openReads = reads.flatMap((r, i) =>
            (readFrom[i] as number) < (target[i] as number) || readStart[i] === undefined ? [{ r, i }] : [],
          );
          if (openQueries.length === 0 && openReads.length === 0) break;
          const args: Args = {
            queries: openQueries.map(({ q, i }) => ({ ...q, ...(cursors[i] ? { cursor: cursors[i] as string } : {}) })),
            reads: openReads.map(({ r, i }) => ({
              ref: r.ref,
              offset: readFrom[i] as number,
              bytes: Math.max(1, (target[i] as number) - (readFrom[i] as number)),
            })),
            max_bytes: maxBytes,
          };
          let reply: RetrieveResult;
          try {
            reply = await retrieve(ws, args, { windowBytes });
          } catch (error) {
            if (!(error instanceof CairnError) || error.code !== "TOO_LARGE") throw error;
            maxBytes = Math.min(32 * 1024, maxBytes * 2);
            continue;
          }
          checkReply(reply, texts, maxBytes);
          for (const [k, { i }] of openQueries.entries()) {
            const result = reply.queries[k];
            for (const hit of result?.hits ?? []) {
              const span = reply.spans[hit.span];
              const artifact = reply.artifacts[span?.artifact as number];
              const text = texts.get(artifact?.artifact_id as string) as string;
              // The span holds the hit's whole snippet.
              const snippet = expectedSnippet(text, hit, queries[i]?.context_bytes as number);
              expect(span?.start).toBeLessThanOrEqual(snippet.start);
              expect(span?.end).toBeGreaterThanOrEqual(snippet.end);
              hits[i]?.push({ name: artifact?.name as string, start: hit.start, end: hit.end });
            }
            cursors[i] = result?.cursor ?? null;
            expect(result?.complete).toBe(result?.cursor === null);
          }
          for (const [k, { i }] of openReads.entries()) {
            const read = reply.reads[k];
            if (read === undefined || read.deferred) continue;
            const text = texts.get(reads[i]?.ref as string) as string;
            if (readStart[i] === undefined) {
              readStart[i] = read.offset;
              expect(boundaries(text)).toContain(read.offset);
              expect(read.offset).toBeLessThanOrEqual(reads[i]?.offset as number);
            } else {
              expect(read.offset).toBe(readFrom[i]);
            }
            if (read.span !== null) {
              const span = reply.spans[read.span];
              readText[i] += bytesOf(text, read.offset, read.end);
              expect(span?.text).toContain(bytesOf(text, read.offset, read.end));
            }
            readFrom[i] = read.next_offset ?? (target[i] as number);
          }
        }
        for (const [i, query] of queries.entries()) {
          const expected = docs.flatMap((doc) =>
            naiveMatches(doc.text, query.text).map((m) => ({ name: doc.name, ...m })),
          );
          expect(hits[i], `seed ${seed} query ${i}: ${JSON.stringify(query)}`).toEqual(expected);
        }
        for (const [i, read] of reads.entries()) {
          const text = texts.get(read.ref) as string;
          expect(readText[i], `seed ${seed} read ${i}`).toBe(
            bytesOf(text, readStart[i] as number, Math.max(readStart[i] as number, readFrom[i] as number)),
          );
          expect(readFrom[i]).toBeGreaterThanOrEqual(target[i] as number);
        }
      } finally {
        await ws.close();
      }
    }
  }, 120_000);
});

describe("retrieve's checks", () => {
  it("refuses bad arguments, binary and non-UTF-8 reads, and stale cursors, naming the field", async () => {
    const ws = await fresh();
    try {
      await ws.save({ name: "doc/a", content: "aaaa" });
      await ws.save({ name: "bin/x", content: new Uint8Array([0, 1]), media_type: "application/octet-stream" });
      await ws.save({ name: "bad/u", content: new Uint8Array([0x61, 0xff, 0x61]), media_type: "text/plain" });
      const cases: [unknown, string, RegExp][] = [
        [{}, "INVALID_ARGUMENT", /queries, reads or both/],
        [{ queries: Array(9).fill({ text: "a" }) }, "INVALID_ARGUMENT", /queries must be an array of at most 8/],
        [{ reads: Array(17).fill({ ref: "doc/a", bytes: 1 }) }, "INVALID_ARGUMENT", /at most 16/],
        [
          { reads: [{ ref: "doc/a", bytes: 32769 }] },
          "INVALID_ARGUMENT",
          /reads\[0\]\.bytes must be an integer from 1 to 32768/,
        ],
        [{ reads: [{ ref: "doc/a" }] }, "INVALID_ARGUMENT", /reads\[0\]\.bytes is required/],
        [{ reads: [{ ref: "doc/a", bytes: 1 }], max_bytes: 40000 }, "INVALID_ARGUMENT", /max_bytes/],
        [{ queries: [{ text: "a" }, { text: "" }] }, "INVALID_ARGUMENT", /queries\[1\]\.text/],
        [
          { reads: [{ ref: "nope/x", bytes: 1 }], queries: [{ text: "a", refs: ["nope/y"] }] },
          "NOT_FOUND",
          /nope\/x, nope\/y/,
        ],
        [{ reads: [{ ref: "bin/x", bytes: 1 }] }, "INVALID_ARGUMENT", /reads\[0\]\.ref: bin\/x v1 is binary/],
        [{ reads: [{ ref: "bad/u", bytes: 3 }] }, "INVALID_ARGUMENT", /reads\[0\]: bytes .* not valid UTF-8/],
      ];
      for (const [args, code, message] of cases) {
        const error = await failure(retrieve(ws, args as Args));
        expect([error.code, error.message], JSON.stringify(args).slice(0, 80)).toEqual([
          code,
          expect.stringMatching(message),
        ]);
      }
      const page = await retrieve(ws, { queries: [{ text: "aa", limit: 1 }] });
      const cursor = page.queries[0]?.cursor as string;
      await ws.save({ name: "doc/b", content: "new" });
      const stale = await failure(retrieve(ws, { queries: [{ text: "b" }, { text: "aa", cursor }] }));
      expect([stale.code, stale.message]).toEqual([
        "STALE_CURSOR",
        expect.stringMatching(/^queries\[1\]\.cursor is stale/),
      ]);
    } finally {
      await ws.close();
    }
  });
});
