// The literal scan under search and retrieve: ASCII case folding on UTF-8 bytes, window by window through a
// VersionReader, so memory stays at one window (1 MiB plus context) whatever the size of the versions searched.
// Folding only A-Z keeps every byte where it was: offsets in the folded copy are offsets in the version.
import { isUtf8 } from "node:buffer";
import type { PassedVersion, TextVersion } from "../catalog/catalog.js";
import { alignBack, alignForward } from "../utf8.js";
import type { VersionReader } from "../version-reader.js";
import type { Position } from "./cursor.js";
import { RETRIEVAL_LIMITS, SCAN_WINDOW_BYTES } from "./limits.js";

/**
 * A version of a scan's scope: a ref's record or a current version, or one the chunk index shows cannot hold the
 * query (PassedVersion), passed over unread but still counted in the scope's positions.
 */
export type ScanVersion = (TextVersion & { may_match?: true }) | PassedVersion;

/** One match: where it is, and its snippet (the match with up to `context_bytes` each side, whole code points). */
export interface Found {
  /** The version's index in the scope. */
  index: number;
  record: TextVersion;
  /** UTF-8 byte range of the match, [start, end). */
  start: number;
  end: number;
  /** Byte offset of the snippet's first byte. */
  snippetStart: number;
  /** The snippet's bytes (valid UTF-8, a copy). */
  snippet: Uint8Array;
}

/** A version whose scan stopped at `offset` because the bytes there are not valid UTF-8. */
export interface Skipped {
  index: number;
  record: TextVersion;
  offset: number;
}

/** Why a version was left: the same words in search and retrieve. */
export function skippedReason(offset: number): string {
  return `bytes after offset ${offset} are not valid UTF-8: searched up to ${offset}`;
}

/** Bytes a call may still scan or read, shared by every query and read of the call. */
export class WorkMeter {
  constructor(public remaining: number) {}

  take(bytes: number): void {
    this.remaining -= bytes;
  }
}

/** For tests: smaller scan windows and work, to put matches across window edges and pages across work limits. */
export interface RetrievalOptions {
  /** @default SCAN_WINDOW_BYTES */
  windowBytes?: number | undefined;
  /** @default RETRIEVAL_LIMITS.workBytes */
  workBytes?: number | undefined;
}

export interface ScanIo {
  reader: VersionReader;
  work: WorkMeter;
  /** @default SCAN_WINDOW_BYTES */
  windowBytes?: number | undefined;
}

const FOLD = new Uint8Array(256).map((_, byte) => (byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte));

/** A copy of `bytes` with A-Z as a-z; every other byte (all of UTF-8's multi-byte sequences) unchanged. */
export function foldAscii(bytes: Uint8Array): Buffer {
  const folded = Buffer.allocUnsafe(bytes.length);
  for (let i = 0; i < bytes.length; i++) folded[i] = FOLD[bytes[i] as number] as number;
  return folded;
}

/** The needle of a literal query: its UTF-8 bytes, folded. */
export function needleOf(text: string): Buffer {
  return foldAscii(Buffer.from(text, "utf8"));
}

const SLACK = 3;

/**
 * Yields every match of `needle` (overlapping ones included) in scope order, then by offset, from `from` on.
 * Returns where the next call should start, or null when every version was scanned to its end. Stops early, with
 * that position, when `io.work` cannot pay for the next window or when `skipped` is full. A version with bytes that
 * are not UTF-8 is reported in `skipped` and left at that window; the matches yielded before it stand.
 */
export async function* scan(
  scope: readonly ScanVersion[],
  needle: Uint8Array,
  from: Position,
  contextBytes: number,
  io: ScanIo,
  skipped: Skipped[],
): AsyncGenerator<Found, Position | null, undefined> {
  const windowBytes = io.windowBytes ?? SCAN_WINDOW_BYTES;
  const folds = needle.some((b) => b >= 0x61 && b <= 0x7a);
  for (let index = from.index; index < scope.length; index++) {
    const record = scope[index] as ScanVersion;
    if (record.may_match === false) continue;
    let offset = index === from.index ? from.offset : 0;
    const lastStart = record.bytes - needle.length;
    while (offset <= lastStart) {
      // Matches starting in [offset, offset + starts) belong to this window; the read adds the needle's tail, the
      // context, and a few bytes of slack each side to find code point boundaries.
      const before = Math.min(offset, contextBytes + SLACK);
      const after = needle.length - 1 + contextBytes + SLACK;
      const readStart = offset - before;
      let starts = Math.min(windowBytes, lastStart - offset + 1);
      let length = Math.min(record.bytes - readStart, before + starts + after);
      if (length > io.work.remaining) {
        starts = io.work.remaining - before - after;
        if (starts < 1) return { index, offset };
        length = Math.min(record.bytes - readStart, before + starts + after);
      }
      const bytes = await io.reader.read(record, readStart, length);
      io.work.take(length);
      // Every byte a snippet may show lies in [lo, hi): it must be UTF-8 for the snippets to be exact.
      const lo = alignBack(bytes, Math.max(0, before - contextBytes));
      const hi = alignBack(bytes, Math.min(bytes.length, before + starts + needle.length - 1 + contextBytes));
      if (!isUtf8(bytes.subarray(lo, hi))) {
        skipped.push({ index, record, offset });
        if (skipped.length < RETRIEVAL_LIMITS.skipped) break;
        return index + 1 < scope.length ? { index: index + 1, offset: 0 } : null;
      }
      const haystack = folds ? foldAscii(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
      const last = before + starts - 1;
      for (let at = haystack.indexOf(needle, before); at !== -1 && at <= last; at = haystack.indexOf(needle, at + 1)) {
        const end = at + needle.length;
        const snippetLo = alignForward(bytes, Math.max(0, at - contextBytes));
        const snippetHi = alignBack(bytes, Math.min(bytes.length, end + contextBytes));
        yield {
          index,
          record,
          start: readStart + at,
          end: readStart + end,
          snippetStart: readStart + snippetLo,
          snippet: new Uint8Array(bytes.subarray(snippetLo, snippetHi)),
        };
      }
      offset += starts;
    }
  }
  return null;
}

/** The hit with at most `contextBytes` of its context each side (whole code points), for a page short of room. */
export function narrow(hit: Found, contextBytes: number): Found {
  const matchAt = hit.start - hit.snippetStart;
  const lo = alignForward(hit.snippet, Math.max(0, matchAt - contextBytes));
  const hi = alignBack(hit.snippet, Math.min(hit.snippet.length, matchAt + hit.end - hit.start + contextBytes));
  return { ...hit, snippetStart: hit.snippetStart + lo, snippet: hit.snippet.subarray(lo, hi) };
}
