// Full-text search on the PostgreSQL catalog: find's index (the `search` table, one weighted tsvector per current
// version) and the context chunk index (`chunks`), fed the words FTS5 would see (fts-text.ts) and ranked with ts_rank,
// which lacks bm25's IDF (decision 0220). Every function runs in the caller's transaction or on its connection.
import type {
  ChunkBatch,
  ChunkProgress,
  ChunkSearch,
  ChunkSearchOptions,
  ChunkSkip,
  NewVersion,
  SearchHit,
  SearchOptions,
  VersionRecord,
} from "./catalog.js";
import { chunksOutOfOrder } from "./catalog-errors.js";
import { ftsSnippet } from "./fts-snippet.js";
import { ftsQuery, ftsWords, pgLexeme } from "./fts-text.js";
import type { PgConnection, PgTx } from "./pg-connection.js";
import { recordsOf, SELECT_VERSION, type VersionRow } from "./pg-versions.js";

// Name (A) weighs most, then summary (B), source (C), body (D), as bm25(search, 8, 4, 2, 1) weighs the columns
// (ts_rank's weights array lists D, C, B, A). Normalization 16 divides by log2(1 + distinct words): longer documents rank lower, a repeated word
// still counts (decision 0220 has what differs from bm25).
const RANK = "ts_rank('{0.1, 0.2, 0.4, 0.8}', s.tsv, q, 16)";
const SEARCH_TSV = searchVectorSql("$1", "$2", "$3", "$4");
// Ranking reads each match's tsvector; rows and snippets are fetched for the hits only.
const TOP_HITS = `
  SELECT s.seq FROM search s, to_tsquery('simple', $1) q
  WHERE s.tsv @@ q ORDER BY ${RANK} DESC, s.seq LIMIT $2`;
const TOP_HITS_OF_KIND = `
  SELECT s.seq FROM search s JOIN versions v ON v.seq = s.seq, to_tsquery('simple', $1) q
  WHERE s.tsv @@ q AND v.kind = $3 ORDER BY ${RANK} DESC, s.seq LIMIT $2`;

// The chunk index. A null $2 means every current text version; otherwise an array of version ids.
const CHUNK_SCOPE = "($2::text[] IS NULL OR s.version_id = ANY($2::text[]))";
const CHUNK_PROGRESS = `
  SELECT s.version_id AS artifact_id, v.name, v.version, v.sha256, v.bytes, s.indexed_bytes, s.reason
  FROM chunk_versions s JOIN versions v ON v.id = s.version_id
  WHERE s.state = $1 AND ${CHUNK_SCOPE} ORDER BY s.seq LIMIT $3`;
const CHUNK_COUNT = `SELECT count(*) AS n FROM chunk_versions s WHERE s.state = $1 AND ${CHUNK_SCOPE}`;
// Superseded versions' chunks wait in the index until dropped, so they are filtered here, by their version's state.
// Chunks carry no weights: ts_rank's default weight for them, normalized as RANK is.
const TOP_CHUNKS = `
  SELECT c.version_id, c.start_byte, c.end_byte
  FROM chunks c JOIN chunk_versions s ON s.version_id = c.version_id, to_tsquery('simple', $1) q
  WHERE c.tsv @@ q AND s.state <> 'obsolete' AND ${CHUNK_SCOPE}
  ORDER BY ts_rank(c.tsv, q, 16) DESC, c.id LIMIT $3`;
/**
 * PostgreSQL refuses a tsvector whose lexemes and positions take more than 1 MiB; a document is cut before its words
 * would pass this estimate (never at the default index_bytes, 64 KiB: ~10,000 words take ~100 KB).
 */
const TSVECTOR_BUDGET = 900_000;
/** Positions a tsvector keeps per lexeme. */
const POSITIONS_KEPT = 256;
/** Versions one dropStaleChunks looks at. */
const STALE_VERSIONS_A_STEP = 64;
/** Query words a search or chunk search uses at most. */
const MAX_QUERY_WORDS = 32;

interface ChunkProgressRow {
  artifact_id: string;
  name: string;
  version: number;
  sha256: string;
  bytes: number;
  indexed_bytes: number;
  reason: string | null;
}

/**
 * `search.tsv` from a row's text, given as SQL parameters (`$n`) that each receive `indexedWords` of its column: name
 * weighs most (A), then summary (B), source (C) and body (D). Also used by `cairn workspace copy` (pg-catalog-rows.ts).
 */
export function searchVectorSql(name: string, summary: string, source: string, body: string): string {
  return (
    `setweight(to_tsvector('simple', ${name}), 'A') || setweight(to_tsvector('simple', ${summary}), 'B') || ` +
    `setweight(to_tsvector('simple', ${source}), 'C') || setweight(to_tsvector('simple', ${body}), 'D')`
  );
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

function progressOf(row: ChunkProgressRow): ChunkProgress {
  const { reason: _, ...progress } = row;
  return progress;
}

/** Inside a write: indexes the version written at `seq` for search (it replaces nothing: the caller removed the old). */
export async function indexVersion(tx: PgTx, seq: number, input: NewVersion): Promise<void> {
  await tx.run(
    `INSERT INTO search (seq, name, summary, source, body, tsv) VALUES ($5, $6, $7, $8, $9, ${SEARCH_TSV})`,
    [
      indexedWords(input.name),
      indexedWords(input.summary),
      indexedWords(input.source),
      indexedWords(input.index_text),
      seq,
      input.name,
      input.summary ?? "",
      input.source ?? "",
      // PostgreSQL text cannot hold U+0000 (a text file may); the words are the same without it.
      input.index_text.replaceAll("\u0000", " "),
    ],
  );
}

/** Ranked current versions matching `text`, as Catalog.search: all words, else all prefixes, else any prefix. */
export async function searchVersions(tx: PgTx, text: string, options: SearchOptions): Promise<SearchHit[]> {
  const words = ftsWords(text).slice(0, MAX_QUERY_WORDS);
  if (words.length === 0) return [];
  // Cheapest first: whole words, then word prefixes, then any word; the first that finds something wins.
  const attempts: { query: string; prefix: boolean }[] = [
    { query: ftsQuery(words, "all"), prefix: false },
    { query: ftsQuery(words, "prefix"), prefix: true },
  ];
  if (words.length > 1) attempts.push({ query: ftsQuery(words, "any"), prefix: true });
  for (const { query, prefix } of attempts) {
    const hits =
      options.kind === undefined
        ? await tx.rows<{ seq: number }>(TOP_HITS, [query, options.limit])
        : await tx.rows<{ seq: number }>(TOP_HITS_OF_KIND, [query, options.limit, options.kind]);
    if (hits.length === 0) continue;
    const seqs = hits.map((hit) => hit.seq);
    const fields = new Map(
      (
        await tx.rows<{ seq: number; name: string; summary: string | null; source: string | null; body: string }>(
          "SELECT seq, name, summary, source, body FROM search WHERE seq = ANY($1::bigint[])",
          [seqs],
        )
      ).map((row) => [row.seq, [row.name, row.summary ?? "", row.source ?? "", row.body]]),
    );
    const rows = await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE v.seq = ANY($1::bigint[])`, [seqs]);
    const records = new Map((await recordsOf(tx, rows)).map((record, i) => [rows[i]?.seq, record]));
    return seqs.map((seq) => ({
      record: records.get(seq) as VersionRecord,
      snippet: ftsSnippet(fields.get(seq) ?? [], words, { prefix }),
    }));
  }
  return [];
}

/** Current text versions the chunk index has not finished, oldest first (Catalog.chunkBacklog). */
export async function chunkBacklog(
  conn: PgConnection,
  options: { artifactIds?: readonly string[]; limit: number },
): Promise<ChunkProgress[]> {
  const rows = await conn.rows<ChunkProgressRow>(CHUNK_PROGRESS, [
    "pending",
    options.artifactIds ?? null,
    options.limit,
  ]);
  return rows.map(progressOf);
}

/** Inside a write: adds one batch when its version is pending at `batch.from`; whether it did. */
export async function addChunksTx(tx: PgTx, batch: ChunkBatch): Promise<boolean> {
  const row = await tx.one<{ state: string; indexed_bytes: number }>(
    "SELECT state, indexed_bytes FROM chunk_versions WHERE version_id = $1",
    [batch.artifact_id],
  );
  if (row === undefined || row.state !== "pending" || row.indexed_bytes !== batch.from) return false;
  let at = batch.from;
  for (const chunk of batch.chunks) {
    if (chunk.start !== at || chunk.end <= chunk.start) throw chunksOutOfOrder(batch.artifact_id, batch.from);
    at = chunk.end;
  }
  if (batch.chunks.length > 0) {
    // One statement for the batch; ids follow the chunks' order, which breaks ranking ties as in SQLite.
    await tx.run(
      `INSERT INTO chunks (version_id, start_byte, end_byte, tsv)
       SELECT $1, c.start_byte, c.end_byte, to_tsvector('simple', c.words)
       FROM unnest($2::bigint[], $3::bigint[], $4::text[]) WITH ORDINALITY AS c (start_byte, end_byte, words, n)
       ORDER BY c.n`,
      [
        batch.artifact_id,
        batch.chunks.map((c) => c.start),
        batch.chunks.map((c) => c.end),
        batch.chunks.map((c) => indexedWords(c.text)),
      ],
    );
  }
  const reason = batch.state.state === "skipped" ? batch.state.reason : null;
  await tx.run("UPDATE chunk_versions SET state = $1, indexed_bytes = $2, reason = $3 WHERE version_id = $4", [
    batch.state.state,
    at,
    reason,
    batch.artifact_id,
  ]);
  return true;
}

/** Removes up to `limit` chunks of obsolete versions and the records of those left with none (Catalog.dropStaleChunks). */
export async function dropStaleChunks(conn: PgConnection, limit: number): Promise<number> {
  // Most steps find nothing to drop: find that out without taking the write lock.
  const any = await conn.rows("SELECT 1 FROM chunk_versions WHERE state = 'obsolete' LIMIT 1");
  if (any.length === 0) return 0;
  return conn.write(async (tx) => {
    const versions = await tx.rows<{ version_id: string }>(
      "SELECT version_id FROM chunk_versions WHERE state = 'obsolete' ORDER BY seq LIMIT $1",
      [STALE_VERSIONS_A_STEP],
    );
    let removed = 0;
    for (const { version_id } of versions) {
      const room = limit - removed;
      if (room <= 0) break;
      const dropped = await tx.run(
        "DELETE FROM chunks WHERE id IN (SELECT id FROM chunks WHERE version_id = $1 LIMIT $2)",
        [version_id, room],
      );
      removed += dropped;
      if (dropped < room) {
        await tx.run("DELETE FROM chunk_versions WHERE version_id = $1", [version_id]);
        removed++;
      }
    }
    return removed;
  });
}

/** Ranked chunks of current versions and the index's coverage of the scope, from one snapshot (Catalog.searchChunks). */
export async function searchChunks(tx: PgTx, text: string, options: ChunkSearchOptions): Promise<ChunkSearch> {
  const words = [...new Set(ftsWords(text))].slice(0, MAX_QUERY_WORDS);
  // Any word ranks (a chunk that holds more of them ranks higher); prefixes only when no whole word is found.
  const attempts = words.length === 0 ? [] : [ftsQuery(words, "some"), ftsQuery(words, "any")];
  const ids = options.artifactIds ?? null;
  let rows: { version_id: string; start_byte: number; end_byte: number }[] = [];
  for (const query of attempts) {
    rows = await tx.rows(TOP_CHUNKS, [query, ids, options.limit + 1]);
    if (rows.length > 0) break;
  }
  const hits = rows.slice(0, options.limit);
  const versionIds = [...new Set(hits.map((hit) => hit.version_id))];
  const versions =
    versionIds.length === 0
      ? []
      : await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE v.id = ANY($1::text[])`, [versionIds]);
  const records = new Map((await recordsOf(tx, versions)).map((record) => [record.artifact_id, record]));
  const listedOf = (state: string) => tx.rows<ChunkProgressRow>(CHUNK_PROGRESS, [state, ids, options.listed]);
  return {
    hits: hits.map((row) => ({
      record: records.get(row.version_id) as VersionRecord,
      start: row.start_byte,
      end: row.end_byte,
    })),
    more: rows.length > options.limit,
    pending: (await listedOf("pending")).map(progressOf),
    pending_count: (await tx.one<{ n: number }>(CHUNK_COUNT, ["pending", ids]))?.n ?? 0,
    skipped: (await listedOf("skipped")).map((row): ChunkSkip => ({ ...progressOf(row), reason: row.reason ?? "" })),
  };
}
