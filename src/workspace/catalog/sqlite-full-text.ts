// Full-text search on the SQLite catalog: FTS5 tables ranked with bm25. `search` holds one row per current version
// (rowid = versions.seq); `chunk_text` is contentless (rowid = chunks.id): ranking needs the terms, the text is in the
// blob.
import type { QueryWord } from "./catalog.js";
import type { ChunkHit, FullTextIndex } from "./full-text.js";
import { intersect, one, rows, run, sql } from "./sql.js";

/** Query words a search uses at most. */
const MAX_QUERY_WORDS = 32;

/** A query's words as FTS5 phrases: FTS5 folds case and diacritics itself. */
function phrases(text: string): string[] {
  return (text.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, MAX_QUERY_WORDS).map((word) => `"${word}"`);
}

export const SQLITE_FULL_TEXT: FullTextIndex = {
  *addVersion(seq, input) {
    yield* run(
      sql`INSERT INTO search (rowid, name, summary, source, body)
          VALUES (CAST(${seq} AS INTEGER), ${input.name}, ${input.summary ?? ""}, ${input.source ?? ""}, ${input.index_text})`,
    );
  },

  *removeVersion(seq) {
    yield* run(sql`DELETE FROM search WHERE rowid = CAST(${seq} AS INTEGER)`);
  },

  *findVersions(text, options) {
    const exact = phrases(text);
    if (exact.length === 0) return [];
    const prefixes = exact.map((w) => `${w}*`);
    const attempts = [exact.join(" AND "), prefixes.join(" AND ")];
    if (exact.length > 1) attempts.push(prefixes.join(" OR "));
    // Name weighs most, then summary, source, body. Ranking runs on rowids alone; snippets are cut for the hits only,
    // so a word found in most of a large catalog costs one bm25 pass, not a snippet per match.
    for (const query of attempts) {
      const hits = yield* rows<{ seq: number }>(
        options.kind === undefined
          ? sql`SELECT rowid AS seq, bm25(search, 8.0, 4.0, 2.0, 1.0) AS score FROM search
                WHERE search MATCH ${query} ORDER BY score LIMIT ${options.limit}`
          : sql`SELECT search.rowid AS seq, bm25(search, 8.0, 4.0, 2.0, 1.0) AS score
                FROM search JOIN versions v ON v.seq = search.rowid
                WHERE search MATCH ${query} AND v.kind = ${options.kind} ORDER BY score LIMIT ${options.limit}`,
      );
      if (hits.length === 0) continue;
      const found: { seq: number; snippet: string }[] = [];
      for (const { seq } of hits) {
        // better-sqlite3 binds a JS number as REAL, and FTS5 does not apply `rowid = <real>` next to MATCH: every match
        // came back and each hit showed the first one's snippet. The cast makes the rowid an integer FTS5 seeks to.
        const cut = yield* one<{ snippet: string }>(
          sql`SELECT snippet(search, -1, '[', ']', '…', 12) AS snippet FROM search
              WHERE search MATCH ${query} AND rowid = CAST(${seq} AS INTEGER)`,
        );
        found.push({ seq, snippet: cut?.snippet ?? "" });
      }
      return found;
    }
    return [];
  },

  *addChunks(versionId, chunks) {
    for (const chunk of chunks) {
      const [added] = yield* rows<{ id: number }>(
        sql`INSERT INTO chunks (version_id, start_byte, end_byte) VALUES (${versionId}, ${chunk.start}, ${chunk.end})
            RETURNING id`,
      );
      yield* run(sql`INSERT INTO chunk_text (rowid, text) VALUES (CAST(${added?.id} AS INTEGER), ${chunk.text})`);
    }
  },

  *dropChunks(versionId, limit) {
    const chunks = yield* rows<{ id: number }>(
      sql`SELECT id FROM chunks WHERE version_id = ${versionId} LIMIT ${limit}`,
    );
    for (const { id } of chunks) {
      // As for snippets: an integer rowid, so FTS5 seeks to it.
      yield* run(sql`DELETE FROM chunk_text WHERE rowid = CAST(${id} AS INTEGER)`);
      yield* run(sql`DELETE FROM chunks WHERE id = ${id}`);
    }
    return chunks.length;
  },

  *findChunks(text, scope, limit) {
    const words = [...new Set((text.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(
      0,
      MAX_QUERY_WORDS,
    );
    const exact = words.map((w) => `"${w}"`);
    // Any word ranks (bm25 rewards chunks that hold more of them); prefixes only when no whole word is found.
    const attempts = words.length === 0 ? [] : [exact.join(" OR "), exact.map((w) => `${w}*`).join(" OR ")];
    for (const query of attempts) {
      // Ranking drives from the FTS match; superseded versions' chunks wait in the index until dropped, so they are
      // filtered here, by their version's state.
      const hits = yield* rows<ChunkHit>(
        sql`SELECT c.version_id, c.start_byte, c.end_byte
            FROM chunk_text JOIN chunks c ON c.id = chunk_text.rowid JOIN chunk_versions s ON s.version_id = c.version_id
            WHERE chunk_text MATCH ${query} AND s.state <> 'obsolete' AND ${scope}
            ORDER BY bm25(chunk_text), c.id LIMIT ${limit}`,
      );
      if (hits.length > 0) return hits;
    }
    return [];
  },

  chunkVersionsWith({ phrases, oneChunk }) {
    const phrase = (words: readonly QueryWord[]) =>
      `"${words.map((w) => w.word).join(" ")}"${words.at(-1)?.prefix === true ? "*" : ""}`;
    const lookup = (query: string) =>
      sql`SELECT c.version_id FROM chunk_text JOIN chunks c ON c.id = chunk_text.rowid WHERE chunk_text MATCH ${query}`;
    // In one chunk, FTS5 takes the phrases whole; across chunks, each word is looked up alone and the versions found
    // intersected.
    if (oneChunk) return lookup(phrases.map(phrase).join(" AND "));
    return intersect(phrases.flat().map((word) => lookup(phrase([word]))));
  },
};
