// What stays per engine of the catalog's full-text search (decision 0270): how a version and a chunk enter and leave
// the index, and how matches are ranked and cut into snippets (FTS5 with bm25 on SQLite, tsvector with ts_rank on
// PostgreSQL, decision 0221). Everything around it (which versions, records, the chunk backlog) is written once.
import type { ChunkBatch, Narrowing, NewVersion, SearchOptions } from "./catalog.js";
import type { Rule, Statement } from "./sql.js";

/** One ranked chunk: its version and byte range. */
export interface ChunkHit {
  version_id: string;
  start_byte: number;
  end_byte: number;
}

export interface FullTextIndex {
  /** Inside a write: indexes the version written at `seq`, its name's new current version (the old one left first). */
  addVersion(seq: number, input: NewVersion): Rule<void>;
  /** Inside a write: the version at `seq` leaves the index (superseded or removed with its name). */
  removeVersion(seq: number): Rule<void>;
  /**
   * Current versions matching `text`, best first, at most `options.limit`, each with its snippet: every word, else
   * every word as a prefix, else (for several words) any word as a prefix; the first attempt that finds something wins.
   */
  findVersions(text: string, options: SearchOptions): Rule<{ seq: number; snippet: string }[]>;
  /** Inside a write: indexes `chunks` of version `versionId` (in order, checked by the caller). */
  addChunks(versionId: string, chunks: ChunkBatch["chunks"]): Rule<void>;
  /** Inside a write: removes up to `limit` chunks of version `versionId`; how many it removed. */
  dropChunks(versionId: string, limit: number): Rule<number>;
  /**
   * Chunks of versions that are not obsolete matching any word of `text` (any prefix when no whole word matches), best
   * first, at most `limit`; `scope` is a condition on the chunk's `chunk_versions` row `s`.
   */
  findChunks(text: string, scope: Statement, limit: number): Rule<ChunkHit[]>;
  /**
   * A subquery of one column, `version_id`: versions (obsolete ones included) that may hold a match by their chunks:
   * with `oneChunk`, those with a chunk holding every phrase (an engine may ask for the phrases' words alone); else
   * those with a chunk holding each word, chunk by chunk. A word is whole, or with `prefix` the start of one.
   */
  chunkVersionsWith(narrowing: Narrowing): Statement;
}
