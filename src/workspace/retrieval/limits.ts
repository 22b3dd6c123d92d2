// The limits of search and retrieve, as data: the operation schemas and descriptions state them and the retrieval
// functions enforce them from here.

const KIB = 1024;
const MIB = 1024 * KIB;

export const RETRIEVAL_LIMITS = {
  /** Characters of one literal query. */
  textChars: 1000,
  /** Versions one query may name instead of every current text artifact. */
  refs: 16,
  /** Bytes of context each side of a hit. */
  contextBytes: { default: 128, max: 2048 },
  /** Hits in one page of one query. */
  hits: { default: 10, max: 20 },
  /** Versions one page reports as skipped (not UTF-8) before it ends, so the envelope stays small. */
  skipped: 20,
  /** Bytes of the hit objects of one search page (compact JSON), cursor and envelope aside. */
  hitBytes: 32 * KIB,
  /** Bytes one call scans or reads, overlapping search windows counted each time. */
  workBytes: 16 * MIB,
  /** Queries and reads of one retrieve. */
  queries: 8,
  reads: 16,
  /** Bytes of one requested read. */
  readBytes: 32 * KIB,
  /** Bytes of retrieve's complete reply (compact JSON). */
  maxBytes: { default: 32 * KIB, max: 32 * KIB },
} as const;

/** Bytes of content one search window looks at (the read adds the needle's tail and the context). */
export const SCAN_WINDOW_BYTES = 1 * MIB;
