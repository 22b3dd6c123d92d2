// Where the context index cuts a text into chunks: after a blank line, else after a line, else on a code point
// boundary, at most 2 KiB each. A cut depends only on the bytes from its chunk's start to 2 KiB past it, so a version
// chunked window by window is cut exactly as it would be whole, and indexing can stop and resume anywhere.
import { windowEnd } from "../utf8.js";

export const CHUNK_LIMITS = {
  /** Bytes of one chunk at most. */
  maxBytes: 2048,
  /** A blank line ends a chunk only past this many bytes, so paragraphs do not shatter into crumbs. */
  paragraphBytes: 512,
} as const;

/**
 * Chunks at least this long may end inside a line, where `windowEnd` cut them before the code point that crosses
 * `maxBytes` (at most 3 bytes short of it); every shorter chunk ends at a line end or at its text's end.
 */
export const CHUNK_CUT_BYTES = CHUNK_LIMITS.maxBytes - 3;

/** A chunk's UTF-8 byte range in its version, [start, end). */
export interface ChunkRange {
  start: number;
  end: number;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The chunks of `window` (the version's bytes from offset `from`) that it decides: all the way to its end when
 * `atEnd` (the window ends where the version does), else every chunk whose 2 KiB of look-ahead lies inside it.
 * Ranges are absolute, contiguous from `from`, and never split a valid code point (`maxBytes` of 4 or more).
 */
export function chunkRanges(
  window: Uint8Array,
  from: number,
  atEnd: boolean,
  maxBytes: number = CHUNK_LIMITS.maxBytes,
): ChunkRange[] {
  const ranges: ChunkRange[] = [];
  let start = 0;
  // chunkEnd reads bytes[start + maxBytes] to find the code point boundary there: it must be in the window.
  while (start < window.length && (atEnd || start + maxBytes < window.length)) {
    const end = chunkEnd(window, start, maxBytes);
    ranges.push({ start: from + start, end: from + end });
    start = end;
  }
  return ranges;
}

/** The end of the chunk starting at `start`: the last blank line past the paragraph minimum, else the last line end. */
function chunkEnd(bytes: Uint8Array, start: number, maxBytes: number): number {
  const limit = start + maxBytes;
  if (limit >= bytes.length) return bytes.length;
  const paragraphFrom = start + Math.min(CHUNK_LIMITS.paragraphBytes, maxBytes);
  let lineEnd = -1;
  for (let i = limit - 1; i >= start; i--) {
    if (bytes[i] !== LF) continue;
    if (lineEnd < 0) lineEnd = i + 1;
    if (i + 1 < paragraphFrom) break;
    const blank =
      (bytes[i - 1] === LF && i - 1 >= start) || (bytes[i - 1] === CR && bytes[i - 2] === LF && i - 2 >= start);
    if (blank) return i + 1;
  }
  if (lineEnd > start) return lineEnd;
  // A line longer than a chunk: cut before the code point that crosses the limit.
  return windowEnd(bytes, start, maxBytes);
}
