// retrieve's reply: shared artifacts, spans merged per version, and the queries' and reads' results pointing into
// them, fitted to its budget (max_bytes, and max_tokens when given). Room goes to the queries' hits, query by query,
// then to the reads; any value it settles on was measured to fit, and a reply that moves nothing forward is an error.
import type { TextVersion } from "../catalog/catalog.js";
import { alignBack, windowEnd } from "../utf8.js";
import { jsonBytes, largest, type ReplyBudget } from "./budget.js";
import type { Position } from "./cursor.js";
import { cursorAt, type LiteralQuery, type QueryPage } from "./query.js";
import { type Found, type ScanVersion, skippedReason } from "./scan.js";
import { mergeSpans, type Piece } from "./spans.js";

export interface RetrievedArtifact {
  artifact_id: string;
  name: string;
  version: number;
  bytes: number;
  current: boolean;
  stale: boolean;
}

export interface RetrievedSpan {
  /** Index in `artifacts`. */
  artifact: number;
  /** UTF-8 byte range of `text` in the version, [start, end). */
  start: number;
  end: number;
  text: string;
}

export interface QueryResult {
  /** Each match: the span that holds it and its byte range in the version. */
  hits: { span: number; start: number; end: number }[];
  complete: boolean;
  cursor: string | null;
  skipped?: { artifact: number; offset: number; reason: string }[];
}

export interface ReadResult {
  artifact: number;
  /** The span holding the bytes read; null when nothing was sent (deferred, or past the end). */
  span: number | null;
  /** Where the bytes start (moved back to a code point boundary); the requested offset when deferred. */
  offset: number;
  end: number;
  /** Where to read on; null at the end of the version. */
  next_offset: number | null;
  /** No room was left in max_bytes: read it again (from `offset`). */
  deferred?: true;
}

export interface RetrieveResult {
  artifacts: RetrievedArtifact[];
  spans: RetrievedSpan[];
  queries: QueryResult[];
  reads: ReadResult[];
  /** Bytes scanned and read by this call. */
  scanned_bytes: number;
}

/** What a read found, before the reply decides how much of it fits. */
export interface ReadPiece {
  record: TextVersion;
  requested: number;
  /** Null when the requested offset is at or past the end. */
  piece: Piece | null;
}

/** A query's page as scanned, before the reply decides how many of its hits it keeps. */
export interface RunQuery {
  query: LiteralQuery;
  scope: ScanVersion[];
  from: Position;
  page: QueryPage<Found>;
}

/** How much of each query page and read the reply holds: hits kept per query, bytes kept per read (null: none). */
interface Shares {
  hits: number[];
  reads: (number | null)[];
}

/**
 * The reply with as much as fits: hits query by query, then reads (whole, else the longest prefix that fits, else
 * deferred). Throws TOO_LARGE when not even the reply's metadata fits, or when nothing moves forward.
 */
export function fitReply(runs: RunQuery[], reads: ReadPiece[], budget: ReplyBudget, scanned: number): RetrieveResult {
  const shares: Shares = { hits: runs.map(() => 0), reads: reads.map(() => null) };
  const build = () => buildReply(runs, reads, shares, scanned);
  let reply = build();
  if (!budget.fits(reply)) {
    throw budget.tooSmall(reply, "even this reply's metadata", "ask for fewer queries and reads");
  }
  const fitsNow = (): boolean => budget.fits(build());
  for (const [q, run] of runs.entries()) {
    // None fits: largest answers 0, no hit.
    shares.hits[q] = largest(1, run.page.hits.length, (kept) => {
      shares.hits[q] = kept;
      return fitsNow();
    });
  }
  for (const [r, read] of reads.entries()) {
    if (read.piece === null) continue;
    const { bytes } = read.piece;
    // Whole code points only: a length inside one is cut back to its start.
    const length = (k: number) => (k === bytes.length ? k : alignBack(bytes, k));
    const least = windowEnd(bytes, 0, 1);
    const kept = largest(least, bytes.length, (k) => {
      shares.reads[r] = length(k);
      return shares.reads[r] !== 0 && fitsNow();
    });
    shares.reads[r] = kept < least ? null : length(kept);
  }
  reply = build();
  if (!madeProgress(runs, reads, shares)) {
    throw budget.tooSmall(
      leastStep(runs, reads, scanned) ?? reply,
      "the next hit or read",
      "lower context_bytes or the bytes of the reads",
    );
  }
  return reply;
}

/** The smallest reply (in JSON bytes) that moves one step: one hit of one query, or one code point of one read. */
function leastStep(runs: RunQuery[], reads: ReadPiece[], scanned: number): RetrieveResult | undefined {
  const none = (): Shares => ({ hits: runs.map(() => 0), reads: reads.map(() => null) });
  const steps: Shares[] = [];
  for (const [q, run] of runs.entries()) {
    if (run.page.hits.length === 0) continue;
    const shares = none();
    shares.hits[q] = 1;
    steps.push(shares);
  }
  for (const [r, read] of reads.entries()) {
    if (read.piece === null) continue;
    const shares = none();
    shares.reads[r] = windowEnd(read.piece.bytes, 0, 1);
    steps.push(shares);
  }
  let least: { reply: RetrieveResult; bytes: number } | undefined;
  for (const shares of steps) {
    const reply = buildReply(runs, reads, shares, scanned);
    const bytes = jsonBytes(reply);
    if (least === undefined || bytes < least.bytes) least = { reply, bytes };
  }
  return least?.reply;
}

/** Whether the reply moves something forward: a hit, a read's bytes or end, or a query's cursor. */
function madeProgress(runs: RunQuery[], reads: ReadPiece[], shares: Shares): boolean {
  if (reads.some((read, r) => read.piece === null || shares.reads[r] !== null)) return true;
  return runs.some((run, q) => {
    const next = nextOf(run, shares.hits[q] as number);
    return (
      next === null || next.index > run.from.index || (next.index === run.from.index && next.offset > run.from.offset)
    );
  });
}

/** Where a query's next page starts when the reply keeps `kept` of its hits. */
function nextOf(run: RunQuery, kept: number): Position | null {
  const first = run.page.hits[kept];
  return first === undefined ? run.page.next : { index: first.index, offset: first.start };
}

function buildReply(runs: RunQuery[], reads: ReadPiece[], shares: Shares, scanned: number): RetrieveResult {
  const artifacts: RetrievedArtifact[] = [];
  const artifactIndex = new Map<string, number>();
  const artifactOf = (record: TextVersion): number => {
    let index = artifactIndex.get(record.artifact_id);
    if (index === undefined) {
      index = artifacts.length;
      artifactIndex.set(record.artifact_id, index);
      artifacts.push({
        artifact_id: record.artifact_id,
        name: record.name,
        version: record.version,
        bytes: record.bytes,
        current: record.current,
        stale: record.stale,
      });
    }
    return index;
  };
  const pieces: Piece[] = [];
  const keptHits = runs.map((run, q) =>
    run.page.hits.slice(0, shares.hits[q]).map((hit) => {
      artifactOf(hit.record);
      pieces.push({ artifactId: hit.record.artifact_id, start: hit.snippetStart, bytes: hit.snippet });
      return { hit, piece: pieces.length - 1 };
    }),
  );
  const readPieces = reads.map((read, r) => {
    artifactOf(read.record);
    const length = shares.reads[r];
    if (read.piece === null || length === null || length === undefined) return undefined;
    pieces.push({ ...read.piece, bytes: read.piece.bytes.subarray(0, length) });
    return { piece: pieces.length - 1, length };
  });
  const { spans, spanOf } = mergeSpans(pieces);
  const queries = runs.map((run, q): QueryResult => {
    const cursor = cursorAt(run.query, run.scope, nextOf(run, shares.hits[q] as number));
    const result: QueryResult = {
      hits: (keptHits[q] ?? []).map(({ hit, piece }) => ({
        span: spanOf[piece] as number,
        start: hit.start,
        end: hit.end,
      })),
      complete: cursor === null,
      cursor,
    };
    if (run.page.skipped.length > 0) {
      result.skipped = run.page.skipped.map((s) => ({
        artifact: artifactOf(s.record),
        offset: s.offset,
        reason: skippedReason(s.offset),
      }));
    }
    return result;
  });
  return {
    artifacts,
    spans: spans.map((span) => ({
      artifact: artifactIndex.get(span.artifactId) as number,
      start: span.start,
      end: span.end,
      text: span.text,
    })),
    queries,
    reads: reads.map((read, r): ReadResult => {
      const artifact = artifactIndex.get(read.record.artifact_id) as number;
      const size = read.record.bytes;
      const kept = readPieces[r];
      if (read.piece === null) return { artifact, span: null, offset: size, end: size, next_offset: null };
      if (kept === undefined) {
        const offset = read.requested;
        return { artifact, span: null, offset, end: offset, next_offset: offset, deferred: true };
      }
      const end = read.piece.start + kept.length;
      const span = spanOf[kept.piece] as number;
      return { artifact, span, offset: read.piece.start, end, next_offset: end < size ? end : null };
    }),
    scanned_bytes: scanned,
  };
}
