// Exact line edits between two UTF-8 texts: Myers' O(ND) comparison (linear-space bisection) over interned lines,
// between the anchors of unique lines (patience diff) when the texts are long. Bounded by a work budget: past it,
// what is left is replaced whole, so the edits stay exact but may not be minimal; the caller judges their size.

import { decodeUtf8 } from "../utf8.js";

/**
 * One edit of the base's lines, in `Array.prototype.splice`'s order: from line `at` (0-based), `deleteCount` lines are
 * replaced by `insert`, whole lines with their endings (`""` for a pure deletion). Edits come ascending by `at` and
 * apply in reverse order, each to the base's line numbers. A line ends after each `\n` (so `\r\n` ends with it); a
 * lone `\r` is part of its line, and a last line without `\n` is a line.
 */
export type LineEdit = [at: number, deleteCount: number, insert: string];

interface LineDiffOptions {
  /** Units of comparison work (steps along diagonals and line comparisons) before the rest is replaced whole. */
  work?: number;
}

/** About half a second of comparisons at worst; far more than any delta that fits a reply needs. */
const DEFAULT_WORK = 1 << 24;
/** The furthest one bisection searches (edit distance / 2); the work budget usually ends a search long before. */
const MAX_D = 1 << 14;
/** Past this many lines in both middles together, unique lines anchor the comparison first (patience diff). */
const ANCHOR_LINES = 256;
const LF = 0x0a;

/** A region to replace: base lines [aStart, aEnd) by current lines [bStart, bEnd), relative to the compared middle. */
interface Hunk {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

/** Line edits turning `base` into `current` (both UTF-8 bytes), ascending by `at`; `[]` when they are equal. */
export function diffLines(base: Uint8Array, current: Uint8Array, options: LineDiffOptions = {}): LineEdit[] {
  const aBounds = lineBounds(base);
  const bBounds = lineBounds(current);
  const aLines = aBounds.length - 1;
  const bLines = bBounds.length - 1;
  let prefix = 0;
  while (prefix < aLines && prefix < bLines && sameLine(base, aBounds, prefix, current, bBounds, prefix)) prefix++;
  let suffix = 0;
  while (
    suffix < aLines - prefix &&
    suffix < bLines - prefix &&
    sameLine(base, aBounds, aLines - 1 - suffix, current, bBounds, bLines - 1 - suffix)
  ) {
    suffix++;
  }
  const { a, b, ids } = internLines(base, aBounds, prefix, aLines - suffix, current, bBounds, prefix, bLines - suffix);
  const ranges = a.length + b.length > ANCHOR_LINES ? anchoredRanges(a, b, ids) : [0, a.length, 0, b.length];
  const hunks = compare(a, b, ranges, { left: options.work ?? DEFAULT_WORK });
  return hunks.map((h) => [
    prefix + h.aStart,
    h.aEnd - h.aStart,
    decodeUtf8(current.subarray(bBounds[prefix + h.bStart], bBounds[prefix + h.bEnd])),
  ]);
}

/** Where each line starts, then the end: line i is [bounds[i], bounds[i + 1]). No lines for empty text. */
function lineBounds(bytes: Uint8Array): Uint32Array {
  let breaks = 0;
  for (let i = bytes.indexOf(LF); i !== -1; i = bytes.indexOf(LF, i + 1)) breaks++;
  const tail = bytes.length > 0 && bytes[bytes.length - 1] !== LF ? 1 : 0;
  const bounds = new Uint32Array(breaks + tail + 1);
  let n = 1;
  for (let i = bytes.indexOf(LF); i !== -1; i = bytes.indexOf(LF, i + 1)) bounds[n++] = i + 1;
  if (tail === 1) bounds[n] = bytes.length;
  return bounds;
}

function sameLine(a: Uint8Array, aBounds: Uint32Array, i: number, b: Uint8Array, bBounds: Uint32Array, j: number) {
  const aStart = aBounds[i] as number;
  const bStart = bBounds[j] as number;
  const length = (aBounds[i + 1] as number) - aStart;
  if ((bBounds[j + 1] as number) - bStart !== length) return false;
  for (let k = 0; k < length; k++) if (a[aStart + k] !== b[bStart + k]) return false;
  return true;
}

/**
 * Numbers the lines of both middles so equal lines get equal ids, without making a string per line: an open-addressed
 * table of FNV-1a hashes, each slot naming the first line seen with that content.
 */
function internLines(
  a: Uint8Array,
  aBounds: Uint32Array,
  aFrom: number,
  aTo: number,
  b: Uint8Array,
  bBounds: Uint32Array,
  bFrom: number,
  bTo: number,
): { a: Int32Array; b: Int32Array; ids: number } {
  const total = aTo - aFrom + (bTo - bFrom);
  let size = 16;
  while (size < total * 2) size *= 2;
  const slots = new Int32Array(size).fill(-1);
  // The first line of each id: which text (0 a, 1 b) and its index there.
  const firstText = new Uint8Array(total);
  const firstLine = new Uint32Array(total);
  let ids = 0;
  const number = (text: Uint8Array, bounds: Uint32Array, from: number, to: number, which: number) => {
    const out = new Int32Array(to - from);
    for (let line = from; line < to; line++) {
      const start = bounds[line] as number;
      const end = bounds[line + 1] as number;
      let hash = 0x811c9dc5;
      for (let k = start; k < end; k++) hash = Math.imul(hash ^ (text[k] as number), 0x01000193);
      let slot = hash & (size - 1);
      for (;;) {
        const id = slots[slot] as number;
        if (id === -1) {
          slots[slot] = ids;
          firstText[ids] = which;
          firstLine[ids] = line;
          out[line - from] = ids++;
          break;
        }
        const other = firstText[id] === 0 ? a : b;
        const otherBounds = firstText[id] === 0 ? aBounds : bBounds;
        if (sameLine(text, bounds, line, other, otherBounds, firstLine[id] as number)) {
          out[line - from] = id;
          break;
        }
        slot = (slot + 1) & (size - 1);
      }
    }
    return out;
  };
  const numberedA = number(a, aBounds, aFrom, aTo, 0);
  const numberedB = number(b, bBounds, bFrom, bTo, 1);
  return { a: numberedA, b: numberedB, ids };
}

/**
 * Patience diff's anchors: lines that occur once in `a` and once in `b`, in the longest chain that keeps their order
 * in both. The ranges between them are compared apart, so a large deletion or a moved block beside other edits costs
 * a few hunks rather than a search across all of it. Returns the ranges as compare's stack (the first on top).
 */
function anchoredRanges(a: Int32Array, b: Int32Array, ids: number): number[] {
  const inA = new Int32Array(ids);
  const inB = new Int32Array(ids);
  const whereB = new Int32Array(ids);
  for (const id of a) inA[id] = (inA[id] as number) + 1;
  for (let j = 0; j < b.length; j++) {
    const id = b[j] as number;
    inB[id] = (inB[id] as number) + 1;
    whereB[id] = j;
  }
  const pairA: number[] = [];
  const pairB: number[] = [];
  for (let i = 0; i < a.length; i++) {
    const id = a[i] as number;
    if (inA[id] === 1 && inB[id] === 1) {
      pairA.push(i);
      pairB.push(whereB[id] as number);
    }
  }
  // Longest increasing run of b positions (patience sorting): tails[k] ends the best chain of length k + 1.
  const tails: number[] = [];
  const previous = new Int32Array(pairB.length);
  for (let p = 0; p < pairB.length; p++) {
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((pairB[tails[mid] as number] as number) < (pairB[p] as number)) low = mid + 1;
      else high = mid;
    }
    previous[p] = low > 0 ? (tails[low - 1] as number) : -1;
    tails[low] = p;
  }
  const chain: number[] = [];
  for (let p = tails.at(-1) ?? -1; p !== -1; p = previous[p] as number) chain.push(p);
  const ranges: number[] = [];
  let aEnd = a.length;
  let bEnd = b.length;
  for (const p of chain) {
    const i = pairA[p] as number;
    const j = pairB[p] as number;
    ranges.push(i + 1, aEnd, j + 1, bEnd);
    aEnd = i;
    bEnd = j;
  }
  ranges.push(0, aEnd, 0, bEnd);
  return ranges;
}

/**
 * The hunks turning `a` into `b`, ascending. `ranges` (aLo, aHi, bLo, bHi quadruples, the first last) is a stack, so
 * there is no recursion whatever the edit distance; each range is trimmed of its common ends, then split at the
 * middle of an optimal path, or replaced whole once `budget` is spent.
 */
function compare(a: Int32Array, b: Int32Array, ranges: number[], budget: { left: number }): Hunk[] {
  const hunks: Hunk[] = [];
  const pending = ranges;
  while (pending.length > 0) {
    const bHi0 = pending.pop() as number;
    const bLo0 = pending.pop() as number;
    const aHi0 = pending.pop() as number;
    const aLo0 = pending.pop() as number;
    let aLo = aLo0;
    let bLo = bLo0;
    while (aLo < aHi0 && bLo < bHi0 && a[aLo] === b[bLo]) {
      aLo++;
      bLo++;
    }
    let aHi = aHi0;
    let bHi = bHi0;
    while (aHi > aLo && bHi > bLo && a[aHi - 1] === b[bHi - 1]) {
      aHi--;
      bHi--;
    }
    if (aLo === aHi && bLo === bHi) continue;
    const split = aLo === aHi || bLo === bHi ? undefined : bisect(a, aLo, aHi, b, bLo, bHi, budget);
    // A split at a corner would not shrink the range; it cannot happen on trimmed ranges, but never loop on it.
    if (split === undefined || (split[0] === aLo && split[1] === bLo) || (split[0] === aHi && split[1] === bHi)) {
      push(hunks, { aStart: aLo, aEnd: aHi, bStart: bLo, bEnd: bHi });
      continue;
    }
    // The left half goes on top, so hunks come out in order.
    pending.push(split[0], aHi, split[1], bHi, aLo, split[0], bLo, split[1]);
  }
  return hunks;
}

/** Appends a hunk, merging it into the previous one when they touch. */
function push(hunks: Hunk[], hunk: Hunk): void {
  const last = hunks.at(-1);
  if (last !== undefined && last.aEnd === hunk.aStart && last.bEnd === hunk.bStart) {
    last.aEnd = hunk.aEnd;
    last.bEnd = hunk.bEnd;
  } else hunks.push(hunk);
}

/**
 * Myers' bisection: walks the furthest-reaching paths from both corners of a[aLo, aHi) x b[bLo, bHi) until they
 * overlap, and returns that point of an optimal path. Both ranges are non-empty and differ at both ends. Undefined
 * when the budget runs out or no overlap is found within MAX_D; the caller then replaces the range whole.
 */
function bisect(
  a: Int32Array,
  aLo: number,
  aHi: number,
  b: Int32Array,
  bLo: number,
  bHi: number,
  budget: { left: number },
): [number, number] | undefined {
  const n = aHi - aLo;
  const m = bHi - bLo;
  const maxD = Math.min(Math.ceil((n + m) / 2), MAX_D);
  const offset = maxD;
  const length = 2 * maxD + 2;
  budget.left -= length;
  if (budget.left < 0) return undefined;
  // Forward: the furthest x reached on each diagonal k = x - y; reverse: the same, counted from the far corner.
  const forward = new Int32Array(length).fill(-1);
  const reverse = new Int32Array(length).fill(-1);
  forward[offset + 1] = 0;
  reverse[offset + 1] = 0;
  const delta = n - m;
  // With an odd delta the forward walk meets the reverse one; with an even delta, the reverse walk meets it.
  const front = delta % 2 !== 0;
  let k1start = 0;
  let k1end = 0;
  let k2start = 0;
  let k2end = 0;
  for (let d = 0; d < maxD; d++) {
    budget.left -= 2 * d + 2;
    if (budget.left < 0) return undefined;
    for (let k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
      const i = offset + k1;
      let x1 =
        k1 === -d || (k1 !== d && (forward[i - 1] as number) < (forward[i + 1] as number))
          ? (forward[i + 1] as number)
          : (forward[i - 1] as number) + 1;
      let y1 = x1 - k1;
      const from = x1;
      while (x1 < n && y1 < m && a[aLo + x1] === b[bLo + y1]) {
        x1++;
        y1++;
      }
      budget.left -= x1 - from;
      forward[i] = x1;
      if (x1 > n) k1end += 2;
      else if (y1 > m) k1start += 2;
      else if (front) {
        const j = offset + delta - k1;
        if (j >= 0 && j < length && reverse[j] !== -1 && x1 >= n - (reverse[j] as number)) {
          return [aLo + x1, bLo + y1];
        }
      }
    }
    for (let k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
      const i = offset + k2;
      let x2 =
        k2 === -d || (k2 !== d && (reverse[i - 1] as number) < (reverse[i + 1] as number))
          ? (reverse[i + 1] as number)
          : (reverse[i - 1] as number) + 1;
      let y2 = x2 - k2;
      const from = x2;
      while (x2 < n && y2 < m && a[aHi - 1 - x2] === b[bHi - 1 - y2]) {
        x2++;
        y2++;
      }
      budget.left -= x2 - from;
      reverse[i] = x2;
      if (x2 > n) k2end += 2;
      else if (y2 > m) k2start += 2;
      else if (!front) {
        const j = offset + delta - k2;
        if (j >= 0 && j < length && forward[j] !== -1) {
          const x1 = forward[j] as number;
          const y1 = x1 - (j - offset);
          if (x1 >= n - x2) return [aLo + x1, bLo + y1];
        }
      }
    }
  }
  return undefined;
}
