// Chunk boundaries of the context index, as properties over real text (TypeScript's lib files) and seeded random text
// full of multi-byte UTF-8 and line endings: chunks cover the text exactly, hold whole code points, end after a blank
// line or a line whenever their room holds one, and a text cut window by window is cut as it is whole.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CHUNK_LIMITS, type ChunkRange, chunkRanges } from "../../../src/workspace/retrieval/context-chunks.js";
import { int, pick, random } from "./oracle.js";

const LIB = join(import.meta.dirname, "../../../node_modules/typescript/lib");
const REAL = ["lib.dom.d.ts", "lib.es5.d.ts", "lib.es2015.core.d.ts", "lib.webworker.d.ts"].map((f) =>
  readFileSync(join(LIB, f)),
);
const LF = 0x0a;
const CR = 0x0d;
const PIECES = ["word ", "é", "€", "𝄞", "\n", "\n\n", "\r\n", "\r\n\r\n", "x".repeat(30), "ß ", "  "];

function randomBytes(seed: number, pieces: number): Buffer {
  const rand = random(seed);
  let text = "";
  for (let i = int(rand, 0, pieces); i > 0; i--) text += pick(rand, PIECES);
  return Buffer.from(text, "utf8");
}

/** Where the chunk starting at `start` must end, restated from the rules: blank line, else line end, else boundary. */
function expectedEnd(bytes: Buffer, start: number, maxBytes: number): number {
  const limit = start + maxBytes;
  if (limit >= bytes.length) return bytes.length;
  const paragraphFrom = start + Math.min(CHUNK_LIMITS.paragraphBytes, maxBytes);
  const blankEnds: number[] = [];
  const lineEnds: number[] = [];
  for (let p = start + 1; p <= limit; p++) {
    if (bytes[p - 1] !== LF) continue;
    lineEnds.push(p);
    const lf = bytes[p - 2] === LF && p - 2 >= start;
    const crlf = bytes[p - 2] === CR && bytes[p - 3] === LF && p - 3 >= start;
    if (p >= paragraphFrom && (lf || crlf)) blankEnds.push(p);
  }
  if (blankEnds.length > 0) return blankEnds.at(-1) as number;
  if (lineEnds.length > 0) return lineEnds.at(-1) as number;
  let end = limit;
  while (((bytes[end] as number) & 0xc0) === 0x80) end--;
  return end;
}

function checkChunks(bytes: Buffer, ranges: ChunkRange[], maxBytes: number): void {
  let at = 0;
  for (const range of ranges) {
    expect(range.start).toBe(at);
    expect(range.end).toBeGreaterThan(range.start);
    expect(range.end - range.start).toBeLessThanOrEqual(maxBytes);
    expect(range.end).toBe(expectedEnd(bytes, range.start, maxBytes));
    // Whole code points: the bytes decode strictly and re-encode to themselves.
    const piece = bytes.subarray(range.start, range.end);
    expect(Buffer.from(new TextDecoder("utf-8", { fatal: true }).decode(piece), "utf8").equals(piece)).toBe(true);
    at = range.end;
  }
  expect(at).toBe(bytes.length);
}

/** Chunks a text in windows of random sizes, each continuing where the decided chunks ended, as the indexer does. */
function chunkInWindows(bytes: Buffer, maxBytes: number, seed: number): ChunkRange[] {
  const rand = random(seed);
  const ranges: ChunkRange[] = [];
  let from = 0;
  while (from < bytes.length) {
    const end = Math.min(bytes.length, from + maxBytes + 1 + int(rand, 0, 3 * maxBytes));
    const got = chunkRanges(bytes.subarray(from, end), from, end === bytes.length, maxBytes);
    expect(got.length).toBeGreaterThan(0);
    ranges.push(...got);
    from = got.at(-1)?.end as number;
  }
  return ranges;
}

describe("chunk boundaries", () => {
  it("cut real text into whole-line chunks of at most 2 KiB, cut alike whole and window by window", () => {
    for (const [i, bytes] of REAL.entries()) {
      const whole = chunkRanges(bytes, 0, true);
      checkChunks(bytes, whole, CHUNK_LIMITS.maxBytes);
      expect(whole.length).toBeGreaterThan(bytes.length / CHUNK_LIMITS.maxBytes);
      // Code comes in lines well under 2 KiB: every chunk but the last ends a line.
      expect(whole.slice(0, -1).every((r) => bytes[r.end - 1] === LF)).toBe(true);
      expect(chunkInWindows(bytes, CHUNK_LIMITS.maxBytes, i)).toEqual(whole);
    }
  });

  it("hold for random text with multi-byte characters, CRLF, blank lines and long lines, at any size", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const bytes = randomBytes(seed, 400);
      const maxBytes = pick(random(seed * 7), [4, 5, 7, 16, 33, 64, 600, 2048]);
      const whole = chunkRanges(bytes, 0, true, maxBytes);
      checkChunks(bytes, whole, maxBytes);
      expect(chunkInWindows(bytes, maxBytes, seed)).toEqual(whole);
    }
  });

  it("end a chunk after its last blank line past 512 bytes, else after its last line", () => {
    const paragraph = `${"p".repeat(599)}\n`;
    const text = Buffer.from(`${"a".repeat(99)}\n\n${paragraph}\n${paragraph}${"b".repeat(1500)}`);
    const [first, second] = chunkRanges(text, 0, true);
    expect(first).toEqual({ start: 0, end: 702 }); // after the blank line past 512, not the early one at 101
    expect(second).toEqual({ start: 702, end: 1302 }); // no blank line inside: after the last line
  });

  it("decides nothing a window cannot see to its end, and everything at the version's end", () => {
    const text = Buffer.from("x".repeat(5000));
    expect(chunkRanges(text.subarray(0, 2048), 0, false)).toEqual([]);
    expect(chunkRanges(text.subarray(0, 2049), 0, false)).toEqual([{ start: 0, end: 2048 }]);
    expect(chunkRanges(text.subarray(100, 1000), 100, true)).toEqual([{ start: 100, end: 1000 }]);
    expect(chunkRanges(new Uint8Array(0), 7, true)).toEqual([]);
  });
});
