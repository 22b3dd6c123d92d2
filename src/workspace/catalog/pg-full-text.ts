// Full-text search on the PostgreSQL catalog: find's index (the `search` table, one weighted tsvector per current
// version) and the context chunk index (`chunks`), fed the words FTS5 would see (fts-text.ts) and ranked with ts_rank,
// which lacks bm25's IDF (decision 0220); snippets are FTS5's, rebuilt over the hit's fields (fts-snippet.ts).

import type { QueryWord } from "./catalog.js";
import { ftsSnippet } from "./fts-snippet.js";
import { ftsQuery, ftsWords, pgLexeme } from "./fts-text.js";
import type { ChunkHit, FullTextIndex } from "./full-text.js";
import { inIntegers, intersect, rows, run, Statement, sql } from "./sql.js";

// Name (A) weighs most, then summary (B), source (C), body (D), as bm25(search, 8, 4, 2, 1) weighs the columns
// (ts_rank's weights array lists D, C, B, A). Normalization 16 divides by log2(1 + distinct words): longer documents
// rank lower, a repeated word still counts (decision 0220 has what differs from bm25).
const RANK = sql`ts_rank('{0.1, 0.2, 0.4, 0.8}', s.tsv, q, 16)`;
/**
 * PostgreSQL refuses a tsvector whose lexemes and positions take more than 1 MiB; a document is cut before its words
 * would pass this estimate (never at the default index_bytes, 64 KiB: ~10,000 words take ~100 KB).
 */
const TSVECTOR_BUDGET = 900_000;
/** Positions a tsvector keeps per lexeme. */
const POSITIONS_KEPT = 256;
/** Query words a search or chunk search uses at most. */
const MAX_QUERY_WORDS = 32;

/** `search.tsv` from the words of name (weighed most, A), summary (B), source (C) and body (D), between these. */
const VECTOR = [
  "setweight(to_tsvector('simple', ",
  "), 'A') || setweight(to_tsvector('simple', ",
  "), 'B') || setweight(to_tsvector('simple', ",
  "), 'C') || setweight(to_tsvector('simple', ",
  "), 'D')",
];

/**
 * `search.tsv` from a row's text, given as SQL parameters (`$n`) that each receive `indexedWords` of its column. For
 * `cairn workspace copy` (pg-catalog-rows.ts), which binds its own parameters.
 */
export function searchVectorSql(name: string, summary: string, source: string, body: string): string {
  const given = [name, summary, source, body];
  return VECTOR.map((part, i) => part + (given[i] ?? "")).join("");
}

/** `text`'s words for to_tsvector, as ftsDocument gives them, cut where the tsvector would pass its budget. */
export function indexedWords(text: string | null | undefined): string {
  const words = ftsWords(text ?? "").map(pgLexeme);
  const counts = new Map<string, number>();
  let size = 0;
  for (const [i, word] of words.entries()) {
    const count = counts.get(word) ?? 0;
    // A new lexeme costs its bytes and an entry; each further position two bytes, up to the positions kept.
    const cost = count === 0 ? Buffer.byteLength(word) + 6 : count < POSITIONS_KEPT ? 2 : 0;
    if (size + cost > TSVECTOR_BUDGET) return words.slice(0, i).join(" ");
    size += cost;
    counts.set(word, count + 1);
  }
  return words.join(" ");
}

export const PG_FULL_TEXT: FullTextIndex = {
  *addVersion(seq, input) {
    const vector = new Statement(VECTOR, [
      indexedWords(input.name),
      indexedWords(input.summary),
      indexedWords(input.source),
      indexedWords(input.index_text),
    ]);
    // PostgreSQL text cannot hold U+0000 (a text file may); the words are the same without it.
    const body = input.index_text.replaceAll("\u0000", " ");
    yield* run(
      sql`INSERT INTO search (seq, name, summary, source, body, tsv)
          VALUES (${seq}, ${input.name}, ${input.summary ?? ""}, ${input.source ?? ""}, ${body}, ${vector})`,
    );
  },

  *removeVersion(seq) {
    yield* run(sql`DELETE FROM search WHERE seq = ${seq}`);
  },

  *findVersions(text, options) {
    const words = ftsWords(text).slice(0, MAX_QUERY_WORDS);
    if (words.length === 0) return [];
    const attempts: { query: string; prefix: boolean }[] = [
      { query: ftsQuery(words, "all"), prefix: false },
      { query: ftsQuery(words, "prefix"), prefix: true },
    ];
    if (words.length > 1) attempts.push({ query: ftsQuery(words, "any"), prefix: true });
    for (const { query, prefix } of attempts) {
      // Ranking reads each match's tsvector; fields and snippets are read for the hits only.
      const hits = yield* rows<{ seq: number }>(
        options.kind === undefined
          ? sql`SELECT s.seq FROM search s, to_tsquery('simple', ${query}) q
                WHERE s.tsv @@ q ORDER BY ${RANK} DESC, s.seq LIMIT ${options.limit}`
          : sql`SELECT s.seq FROM search s JOIN versions v ON v.seq = s.seq, to_tsquery('simple', ${query}) q
                WHERE s.tsv @@ q AND v.kind = ${options.kind} ORDER BY ${RANK} DESC, s.seq LIMIT ${options.limit}`,
      );
      if (hits.length === 0) continue;
      const seqs = hits.map((hit) => hit.seq);
      const fields = new Map(
        (yield* rows<{ seq: number; name: string; summary: string | null; source: string | null; body: string }>(
          sql`SELECT seq, name, summary, source, body FROM search WHERE seq ${inIntegers(seqs)}`,
        )).map((row) => [row.seq, [row.name, row.summary ?? "", row.source ?? "", row.body]]),
      );
      return seqs.map((seq) => ({ seq, snippet: ftsSnippet(fields.get(seq) ?? [], words, { prefix }) }));
    }
    return [];
  },

  *addChunks(versionId, chunks) {
    if (chunks.length === 0) return;
    // One statement for the batch; ids follow the chunks' order, which breaks ranking ties as in SQLite.
    yield* run(
      sql`INSERT INTO chunks (version_id, start_byte, end_byte, tsv)
          SELECT ${versionId}, c.start_byte, c.end_byte, to_tsvector('simple', c.words)
          FROM unnest(CAST(${chunks.map((c) => c.start)} AS BIGINT[]), CAST(${chunks.map((c) => c.end)} AS BIGINT[]),
            CAST(${chunks.map((c) => indexedWords(c.text))} AS TEXT[]))
            WITH ORDINALITY AS c (start_byte, end_byte, words, n)
          ORDER BY c.n`,
    );
  },

  dropChunks(versionId, limit) {
    return run(
      sql`DELETE FROM chunks WHERE id IN (SELECT id FROM chunks WHERE version_id = ${versionId} LIMIT ${limit})`,
    );
  },

  *findChunks(text, scope, limit) {
    const words = [...new Set(ftsWords(text))].slice(0, MAX_QUERY_WORDS);
    // Any word ranks (a chunk that holds more of them ranks higher); prefixes only when no whole word is found.
    const attempts = words.length === 0 ? [] : [ftsQuery(words, "some"), ftsQuery(words, "any")];
    for (const query of attempts) {
      // Chunks carry no weights: ts_rank's default weight for them, normalized as RANK is. Superseded versions' chunks
      // wait in the index until dropped, so they are filtered here, by their version's state.
      const hits = yield* rows<ChunkHit>(
        sql`SELECT c.version_id, c.start_byte, c.end_byte
            FROM chunks c JOIN chunk_versions s ON s.version_id = c.version_id, to_tsquery('simple', ${query}) q
            WHERE c.tsv @@ q AND s.state <> 'obsolete' AND ${scope}
            ORDER BY ts_rank(c.tsv, q, 16) DESC, c.id LIMIT ${limit}`,
      );
      if (hits.length > 0) return hits;
    }
    return [];
  },

  chunkVersionsWith({ phrases, oneChunk }) {
    const term = (w: QueryWord) => ftsQuery([w.word], w.prefix ? "prefix" : "all");
    const lookup = (query: string) => sql`SELECT version_id FROM chunks WHERE tsv @@ to_tsquery('simple', ${query})`;
    // In one chunk, every word at once, but not as phrases: a tsvector keeps 256 positions of a word, so a chunk
    // repeating one more often could miss a phrase it holds. Across chunks, each word alone (GIN), intersected.
    const words = phrases.flat();
    if (oneChunk) return lookup(words.map(term).join(" & "));
    return intersect(words.map((w) => lookup(term(w))));
  },
};
