// One page of a version's text, as inspect and resume show it: a window of whole code points to cut to a budget, or
// the fixed answer for binary content and for an offset past the end.
import { isTextMediaType } from "../media-type.js";
import type { VersionRecord } from "./catalog/catalog.js";
import type { PageWindow } from "./excerpt-fit.js";
import type { Excerpt } from "./types.js";
import { alignBack, windowEnd } from "./utf8.js";
import type { VersionReader } from "./version-reader.js";

/** The page of text from `requested`: a window to cut (pageOf), or the fixed answer for binary content or the end. */
export async function textPage(
  reader: VersionReader,
  record: VersionRecord,
  requested: number,
  excerptBytes: number,
): Promise<Excerpt | PageWindow> {
  if (!isTextMediaType(record.media_type)) {
    const queryable = record.kind === "csv" || record.kind === "parquet" || record.kind === "json";
    return {
      excerpt: null,
      offset: requested,
      next_offset: null,
      note: `binary content (${record.media_type}, ${record.bytes} bytes) has no text excerpt: export it to a file${queryable ? " or query it" : ""}`,
    };
  }
  if (requested >= record.bytes) return { excerpt: "", offset: record.bytes, next_offset: null };
  // Three bytes of slack each side find the code point boundaries around the window.
  const readStart = Math.max(0, requested - 3);
  const length = requested - readStart + excerptBytes + 3;
  const buffer = await reader.read(record, readStart, length);
  const start = alignBack(buffer, requested - readStart);
  return { bytes: buffer, base: readStart, start, end: windowEnd(buffer, start, excerptBytes), size: record.bytes };
}
