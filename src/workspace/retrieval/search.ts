// search: literal, ASCII-case-insensitive matches in the whole text of versions (past find's index window), one
// bounded page at a time: at most `limit` hits, 32 KiB of hit objects and 16 MiB scanned per call.
import { CairnError, ErrorCode } from "../../errors.js";
import type { VersionRecord } from "../catalog/catalog.js";
import { decodeUtf8 } from "../utf8.js";
import type { Workspace } from "../workspace.js";
import { jsonBytes } from "./budget.js";
import { CHUNK_CUT_BYTES } from "./context-chunks.js";
import { RETRIEVAL_LIMITS } from "./limits.js";
import { checkQuery, cursorAt, type LiteralQueryInput, runQuery, scopeOf, startOf } from "./query.js";
import { narrowingOf } from "./query-words.js";
import { type Found, narrow, type RetrievalOptions, type Skipped, skippedReason, WorkMeter } from "./scan.js";

export interface SearchHit {
  artifact_id: string;
  name: string;
  version: number;
  /** Whether the name still points to this version. */
  current: boolean;
  stale: boolean;
  /** UTF-8 byte range of the match, [start, end). */
  start: number;
  end: number;
  snippet: string;
  /** UTF-8 byte range of the snippet, [snippet_start, snippet_end). */
  snippet_start: number;
  snippet_end: number;
}

/** A version whose bytes after `offset` are not all UTF-8: searched up to there. */
export interface SkippedVersion {
  artifact_id: string;
  name: string;
  version: number;
  offset: number;
  reason: string;
}

export interface SearchResult {
  hits: SearchHit[];
  /** True once every version was searched to its end; until then pass `cursor` back. */
  complete: boolean;
  cursor: string | null;
  /** Bytes read by this call. */
  scanned_bytes: number;
  skipped?: SkippedVersion[];
}

/**
 * One page of a literal search over `input.refs` or every current text artifact, from one catalog snapshot.
 * Throws INVALID_ARGUMENT for a bad argument or a cursor of another query, STALE_CURSOR when the versions searched
 * changed since the cursor was given, NOT_FOUND for refs that name nothing.
 */
export async function search(
  workspace: Workspace,
  input: LiteralQueryInput,
  options: RetrievalOptions = {},
): Promise<SearchResult> {
  const query = checkQuery(input, "");
  const refs = query.refs ?? [];
  // Every current version still makes the scope (cursor positions count them all); the ones the chunk index shows
  // lacking a word of the query are passed over unread (decision 0320).
  const snapshot = await workspace.snapshot(refs, {
    current: query.refs === undefined,
    narrow: query.refs === undefined ? narrowingOf(query.text, CHUNK_CUT_BYTES) : undefined,
  });
  const resolved = new Map(refs.map((ref, i) => [ref, snapshot.refs[i] as VersionRecord]));
  const scope = scopeOf(query, resolved, snapshot.current);
  const from = startOf(query, scope);
  const workBytes = options.workBytes ?? RETRIEVAL_LIMITS.workBytes;
  const work = new WorkMeter(workBytes);
  let hitBytes = 0;
  const page = await runQuery(
    query,
    scope,
    from,
    { reader: workspace.reader(), work, windowBytes: options.windowBytes },
    (found) => {
      let hit = searchHit(found);
      let size = jsonBytes(hit);
      // A lone hit over the bound (context of escaped control characters) loses context until it fits.
      for (let context = query.contextBytes; size > RETRIEVAL_LIMITS.hitBytes && hitBytes === 0 && context > 0; ) {
        context = Math.floor(context / 2);
        hit = searchHit(narrow(found, context));
        size = jsonBytes(hit);
      }
      if (hitBytes + size > RETRIEVAL_LIMITS.hitBytes) return undefined;
      hitBytes += size;
      return hit;
    },
  );
  const cursor = cursorAt(query, scope, page.next);
  const result: SearchResult = {
    hits: page.hits,
    complete: cursor === null,
    cursor,
    scanned_bytes: workBytes - work.remaining,
  };
  if (page.skipped.length > 0) result.skipped = page.skipped.map(skippedVersion);
  if (
    result.hits.length === 0 &&
    cursor !== null &&
    page.next?.index === from.index &&
    page.next.offset === from.offset
  ) {
    // Unreachable with a fresh call's 16 MiB; kept so a change of limits cannot turn into a page that never moves.
    throw new CairnError(ErrorCode.INTERNAL, "search made no progress: report this with the query");
  }
  return result;
}

function searchHit(found: Found): SearchHit {
  const { record } = found;
  return {
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    current: record.current,
    stale: record.stale,
    start: found.start,
    end: found.end,
    snippet: decodeUtf8(found.snippet),
    snippet_start: found.snippetStart,
    snippet_end: found.snippetStart + found.snippet.length,
  };
}

function skippedVersion(skipped: Skipped): SkippedVersion {
  const { record, offset } = skipped;
  return {
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    offset,
    reason: skippedReason(offset),
  };
}
