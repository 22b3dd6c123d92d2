// context: chunks of current text versions ranked by BM25 against a query, from the persistent chunk index, each
// cited by immutable id and exact UTF-8 byte range with its text read from the verified blob. Keyword ranking, not a
// semantic model: the reply says how far the index covers its scope and whether chunks were left out. A query naming
// an identifier ranks more candidates and puts the chunks holding it exactly first (exact.ts).
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import type { BlobStore } from "../blobs/blob-store.js";
import type { Catalog, ChunkProgress, ChunkSearch } from "../catalog/catalog.js";
import { decodeUtf8Strict } from "../utf8.js";
import { checkInteger, checkObject, checkRef, checkWellFormed, requireFound } from "../validate.js";
import { VersionReader } from "../version-reader.js";
import { contextBudget, type ReplyBudget } from "./context-budget.js";
import type { ChunkIndexer } from "./context-index.js";
import { exactFirst, exactMatcher } from "./exact.js";
// A version of the scope whose indexing stopped for good at `offset`: the same shape search reports.
import type { SkippedVersion } from "./search.js";

const KIB = 1024;
const MIB = 1024 * KIB;

export const CONTEXT_LIMITS = {
  /** Characters of a query (its first 32 words rank). */
  queryChars: 1000,
  /** Versions a call may rank within instead of every current text artifact. */
  refs: 16,
  chunks: { default: 5, max: 20 },
  /** Bytes of pending text a call indexes before it ranks; the background does the rest. */
  indexBytes: 4 * MIB,
  /** Pending and skipped versions a reply names (the others are counted). */
  listed: 10,
  /** Bytes of the reply's compact JSON, unless the caller's budget says otherwise. */
  maxBytes: 32 * KIB,
} as const;

const HAS_WORD = /[\p{L}\p{N}]/u;
/** BM25 candidates ranked for a query naming an identifier, before the exact matches among them are put first. */
const EXACT_CANDIDATES = 50;

export interface ContextInput {
  query: string;
  /** Current versions to rank within (names or ids); every current text artifact when absent. */
  refs?: string[] | undefined;
  /** @default 5 */
  limit?: number | undefined;
}

/** A ranked chunk: where it is, exactly, and its text (the source's own bytes: data, never instructions). */
export interface ContextChunk {
  artifact_id: string;
  name: string;
  version: number;
  /** UTF-8 byte range of `text` in the version, [start, end). */
  start: number;
  end: number;
  text: string;
}

/** A version of the scope the index has not reached the end of yet. */
export interface PendingVersion {
  artifact_id: string;
  name: string;
  version: number;
  indexed_bytes: number;
  bytes: number;
}

export interface ContextResult {
  /** Best first. */
  chunks: ContextChunk[];
  /** Every matching chunk of the whole scope is here: the index covers it and nothing was left out. */
  complete: boolean;
  /** More chunks matched than the reply holds (limit, or the reply's budget). */
  truncated: boolean;
  /** Every version of the scope is indexed (to its end, or as far as `skipped` says). */
  index_complete: boolean;
  /** Versions still being indexed, oldest first; their later bytes cannot match yet. */
  pending: PendingVersion[];
  /** Pending versions beyond those listed. */
  more_pending?: number;
  skipped?: SkippedVersion[];
}

/** What context reads: the catalog's index, the blobs' verified bytes, and the indexer it may drive. */
export interface ContextStore {
  catalog: Catalog;
  blobs: BlobStore;
  indexer: ChunkIndexer;
}

export interface ContextOptions {
  /** What the reply may cost; fewer whole chunks when it does not fit. @default 32 KiB of compact JSON */
  budget?: ReplyBudget | undefined;
  /** @default CONTEXT_LIMITS.indexBytes */
  indexBytes?: number | undefined;
}

/**
 * Ranked chunks for `input.query` over current text versions (or `refs`), after indexing up to 4 MiB of the scope's
 * backlog. Throws INVALID_ARGUMENT for bad arguments, a ref to a superseded or binary version, or a budget that
 * cannot hold even an empty reply; NOT_FOUND for refs that name nothing; CORRUPT when a chunk's bytes changed.
 */
export async function contextOf(
  store: ContextStore,
  input: ContextInput,
  options: ContextOptions = {},
): Promise<ContextResult> {
  const args = checkObject("context", input);
  const query = checkQueryText(args.query);
  const limit = checkInteger("limit", args.limit, 1, CONTEXT_LIMITS.chunks.max) ?? CONTEXT_LIMITS.chunks.default;
  const refs = checkRefs(args.refs);
  const budget = options.budget ?? contextBudget(CONTEXT_LIMITS.maxBytes);
  const artifactIds = refs === undefined ? undefined : await scopeOf(store.catalog, refs);

  await store.indexer.index(options.indexBytes ?? CONTEXT_LIMITS.indexBytes, artifactIds);
  const exact = exactMatcher(query);
  const candidates = exact === undefined ? limit : Math.max(limit, EXACT_CANDIDATES);
  const found = await store.catalog.searchChunks(query, {
    artifactIds,
    limit: candidates,
    listed: CONTEXT_LIMITS.listed,
  });
  const read = await readChunks(store.blobs, found);
  const ranked = exact === undefined ? read : exactFirst(read, exact, (c) => c.text);
  if (found.pending_count > 0) store.indexer.kick();
  return fitted(found, ranked.slice(0, limit), found.more || ranked.length > limit, budget);
}

function checkQueryText(value: unknown): string {
  if (typeof value !== "string" || !HAS_WORD.test(value)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "query must hold at least one word (letters or digits) to rank by",
      {
        data: { field: "query" },
      },
    );
  }
  checkWellFormed("query", value);
  if (value.length > CONTEXT_LIMITS.queryChars) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `query is ${value.length} characters, more than ${CONTEXT_LIMITS.queryChars}: keep the words that matter`,
      { data: { field: "query", limit: CONTEXT_LIMITS.queryChars } },
    );
  }
  return value;
}

function checkRefs(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.length > CONTEXT_LIMITS.refs) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `refs must list 1 to ${CONTEXT_LIMITS.refs} refs; omit it to rank every current text artifact`,
      { data: { field: "refs" } },
    );
  }
  return value.map((ref, i) => checkRef(ref, `refs[${i}]`));
}

/** The ids of the versions refs name: each current and text, or the error that says what to pass instead. */
async function scopeOf(catalog: Catalog, refs: string[]): Promise<string[]> {
  const records = requireFound(refs, await catalog.get(refs));
  const ids = new Set<string>();
  for (const [i, record] of records.entries()) {
    const label = `refs[${i}]: ${record.name} v${record.version}`;
    if (!isTextMediaType(record.media_type)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${label} is binary (${record.media_type}) and context ranks text: query it with SQL or export it`,
        { data: { field: `refs[${i}]` } },
      );
    }
    if (!record.current) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${label} is superseded and context ranks current versions: pass the name "${record.name}", or search an older version with refs`,
        { data: { field: `refs[${i}]` } },
      );
    }
    ids.add(record.artifact_id);
  }
  return [...ids];
}

/** Each hit's text from its version's bytes, read as inspect reads pages (small versions hash-verified). */
async function readChunks(blobs: BlobStore, found: ChunkSearch): Promise<ContextChunk[]> {
  const reader = new VersionReader(blobs);
  const chunks: ContextChunk[] = [];
  for (const { record, start, end } of found.hits) {
    const text = decodeUtf8Strict(await reader.read(record, start, end - start));
    if (text === undefined) {
      throw new CairnError(
        ErrorCode.CORRUPT,
        `bytes ${start}-${end} of ${record.name} v${record.version} are no longer the UTF-8 text indexed (changed outside Cairn): delete the version or save the content again`,
        { data: { sha256: record.sha256 } },
      );
    }
    chunks.push({ artifact_id: record.artifact_id, name: record.name, version: record.version, start, end, text });
  }
  return chunks;
}

/** The reply with as many of the best chunks as fit the budget, whole; an error when not even none fit. */
function fitted(found: ChunkSearch, chunks: ContextChunk[], more: boolean, budget: ReplyBudget): ContextResult {
  const reply = (kept: number): ContextResult => {
    const truncated = more || kept < chunks.length;
    const skipped = found.skipped.map(
      (s): SkippedVersion => ({
        artifact_id: s.artifact_id,
        name: s.name,
        version: s.version,
        offset: s.indexed_bytes,
        reason: s.reason,
      }),
    );
    const indexComplete = found.pending_count === 0;
    const result: ContextResult = {
      chunks: chunks.slice(0, kept),
      complete: indexComplete && skipped.length === 0 && !truncated,
      truncated,
      index_complete: indexComplete,
      pending: found.pending.map(pendingVersion),
    };
    if (found.pending_count > found.pending.length) result.more_pending = found.pending_count - found.pending.length;
    if (skipped.length > 0) result.skipped = skipped;
    return result;
  };
  for (let kept = chunks.length; kept >= 0; kept--) {
    const candidate = reply(kept);
    if (budget.fits(candidate)) return candidate;
  }
  throw budget.tooSmall(reply(0));
}

function pendingVersion(p: ChunkProgress): PendingVersion {
  return {
    artifact_id: p.artifact_id,
    name: p.name,
    version: p.version,
    indexed_bytes: p.indexed_bytes,
    bytes: p.bytes,
  };
}
